"""Import time of one generated version in a fresh interpreter, against `import mcp_types`."""

from __future__ import annotations

import sys

from _util import median_seconds, save, table

RUNS = 15
CASES = {
    "mcpgen v2026_07_28.models": "import mcpgen.generated.v2026_07_28.models",
    "mcpgen v2025_11_25.models": "import mcpgen.generated.v2025_11_25.models",
    "mcpgen v2026_07_28 models+methods": "import mcpgen.generated.v2026_07_28.methods",
    "mcp_types": "import mcp_types",
    "pydantic alone (baseline)": "import pydantic; from pydantic import BaseModel, Field, ConfigDict",
    "python -c pass (baseline)": "pass",
}


def main() -> None:
    times = {name: median_seconds([sys.executable, "-c", code], RUNS) for name, code in CASES.items()}
    base = times["python -c pass (baseline)"]
    ref = times["mcp_types"] - base
    rows = []
    for name, seconds in times.items():
        net = seconds - base
        rows.append(
            {
                "import": name,
                "ms (minus interpreter start)": f"{net * 1000:.0f}",
                "vs mcp_types": f"{ref / net:.2f}x faster" if name.startswith("mcpgen") and net > 0 else "",
            }
        )
    save("import", rows)
    print(table(rows, ["import", "ms (minus interpreter start)", "vs mcp_types"]))


if __name__ == "__main__":
    main()
