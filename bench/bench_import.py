"""Import time of one generated version in a fresh interpreter, against `import mcp_types`: wall
clock (median of fresh interpreters), or with `--instructions` CPU instructions of the import
under callgrind, which a loaded machine does not move (each import's run minus `python -c pass`'s,
PYTHONHASHSEED=0, bytecode compiled beforehand).

    python bench/bench_import.py [--instructions [--jobs 1]]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from _util import child_env, command, median_seconds, save, save_tables, table

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


def instructions(code: str) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
        capture_output=True, text=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def count_instructions(jobs: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    for code in CASES.values():  # compile the bytecode first: the counted runs only load it
        subprocess.run([sys.executable, "-c", code], check=True, env=child_env())
    with ThreadPoolExecutor(jobs) as pool:
        counted = dict(zip(CASES, pool.map(instructions, CASES.values()), strict=True))
    base = counted["python -c pass (baseline)"]
    ref = counted["mcp_types"] - base
    rows = []
    for name, total in counted.items():
        net = total - base
        rows.append(
            {
                "import": name,
                "million instructions (minus interpreter start)": f"{net / 1e6:,.1f}",
                "vs mcp_types": f"{net / ref:.2f} of it" if name.startswith("mcpgen") and ref > 0 else "",
            }
        )
    entry: dict[str, Any] = {
        "title": "CPU instructions of an import in a fresh interpreter (callgrind)",
        "keys": ["import"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": ["instructions of `python -c <import>` minus `python -c pass`, PYTHONHASHSEED=0, bytecode compiled"],
    }
    save_tables("import_instructions", [entry])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    parser.add_argument("--jobs", type=int, default=1, help="imports counted at once (counts do not depend on it)")
    options = parser.parse_args()
    if options.instructions:
        count_instructions(options.jobs)
    else:
        main()
