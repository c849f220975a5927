"""Import time of one generated version in a fresh interpreter, against `import mcp_types`: wall
clock (median of fresh interpreters), or with `--instructions` CPU instructions of the import
under callgrind, which a loaded machine does not move (each import's run minus `python -c pass`'s,
PYTHONHASHSEED=0, bytecode compiled beforehand).

"Importing one version" is measured two ways: the user-facing import alone
(`from mcpgen.generated.v2026_07_28 import models`, whose classes are created on first access),
and that import plus one tools/call round of types (a `CallToolRequest` and a `CallToolResult`
read from JSON text: their classes created and validators built), against `import mcp_types`
plus the same round with its classes. The floor of that comparison for any pydantic models is
pydantic's import plus its first validator (`TypeAdapter(int)`): building a first validator makes
pydantic discover its plugins, a scan of every installed distribution's entry points, which
mcp_types' import pays as well.

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
# One tools/call round of types, as a user (or the runtime) first meets them: the request and its
# result read from JSON text, each validator built on first use.
ROUND = """
meta = '"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", '
meta += '"io.modelcontextprotocol/clientCapabilities": {}}'
call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2}, '
call += meta + '}}'
result = '{"content": [{"type": "text", "text": "4"}], "isError": false}'
m.CallToolRequest.model_validate_json(call)
m.CallToolResult.model_validate_json(result)
"""
# name -> (code, the mcp_types case it is compared with)
CASES = {
    "mcpgen v2026_07_28 models (import alone)": ("from mcpgen.generated.v2026_07_28 import models", "mcp_types"),
    "mcpgen v2025_11_25 models (import alone)": ("from mcpgen.generated.v2025_11_25 import models", "mcp_types"),
    "mcpgen v2026_07_28 models, every class created": (
        "from mcpgen.generated.v2026_07_28 import models\nfor name in models.__all__: getattr(models, name)",
        "mcp_types",
    ),
    "mcpgen v2026_07_28 models+methods": ("import mcpgen.generated.v2026_07_28.methods", "mcp_types"),
    "mcpgen v2026_07_28 models + a tools/call round": (
        "from mcpgen.generated.v2026_07_28 import models as m\n" + ROUND,
        "mcp_types + a tools/call round",
    ),
    "mcp_types": ("import mcp_types", ""),
    "mcp_types + a tools/call round": ("import mcp_types as m\n" + ROUND, ""),
    "pydantic alone (baseline)": ("import pydantic; from pydantic import BaseModel, Field, ConfigDict", ""),
    # the floor of any first parse with pydantic: its import, and the discovery of its plugins (a scan
    # of every installed distribution's entry points) that building the first validator does
    "pydantic + a first validator, TypeAdapter(int) (floor of a round)": (
        "import pydantic; from pydantic import BaseModel, Field, ConfigDict\npydantic.TypeAdapter(int)",
        "mcp_types + a tools/call round",
    ),
    "python -c pass (baseline)": ("pass", ""),
}


def main() -> None:
    times = {name: median_seconds([sys.executable, "-c", code], RUNS) for name, (code, _) in CASES.items()}
    base = times["python -c pass (baseline)"]
    rows = []
    for name, seconds in times.items():
        net = seconds - base
        against = CASES[name][1]
        ref = times[against] - base if against else 0.0
        rows.append(
            {
                "import": name,
                "ms (minus interpreter start)": f"{net * 1000:.0f}",
                "vs mcp_types": f"{ref / net:.2f}x faster ({against})" if against and net > 0 else "",
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
    codes = [code for code, _ in CASES.values()]
    for code in codes:  # compile the bytecode first: the counted runs only load it
        subprocess.run([sys.executable, "-c", code], check=True, env=child_env())
    with ThreadPoolExecutor(jobs) as pool:
        counted = dict(zip(CASES, pool.map(instructions, codes), strict=True))
    base = counted["python -c pass (baseline)"]
    rows = []
    for name, total in counted.items():
        net = total - base
        against = CASES[name][1]
        ref = counted[against] - base if against else 0
        rows.append(
            {
                "import": name,
                "million instructions (minus interpreter start)": f"{net / 1e6:,.1f}",
                "vs mcp_types": f"{net / ref:.2f} of {against}" if ref > 0 else "",
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
