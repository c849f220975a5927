"""Validation of three messages, mcpgen's generated models against mcp-types: throughput in one
process (wall clock), or with `--instructions` CPU instructions per `model_validate_json` of the
JSON text under callgrind, which a loaded machine does not move.

Instruction counts: each (message, side) runs in a child interpreter under
`valgrind --tool=callgrind` twice, with N and with N/2 parses after the same warm-up (GC frozen
and off, PYTHONHASHSEED=0), and the difference divided by N/2 is the cost of one parse.

    python bench/bench_validate.py [--instructions [--calls-scale 1.0] [--jobs 1]]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import mcp_types as mt
from _util import best_rate, child_env, command, save, save_tables, table
from mcpgen.generated.v2026_07_28 import models as m

HERE = Path(__file__).resolve().parent

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1.0"},
}
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"_meta": META, "name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": "metric"}},
}


def tool(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i}",
        "title": f"Tool {i}",
        "description": "Does a thing with the input and returns a result. " * 3,
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": False},
    }


TOOLS = {
    "resultType": "complete",
    "tools": [tool(i) for i in range(100)],
    "ttlMs": 60000,
    "cacheScope": "public",
    "nextCursor": "abc",
}
INPUT_REQUIRED = {
    "resultType": "input_required",
    "requestState": "eyJzdGF0ZSI6IjEyMyJ9" * 4,
    "inputRequests": {
        "confirm": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Confirm?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}, "name": {"type": "string", "minLength": 1}},
                    "required": ["ok"],
                },
            },
        },
        "llm": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}], "maxTokens": 100},
        },
        "roots": {"method": "roots/list"},
    },
}
CASES = [
    ("tools/call request", m.CallToolRequest, mt.CallToolRequest, CALL, 3000),
    ("tools/list result, 100 tools", m.ListToolsResult, mt.ListToolsResult, TOOLS, 60),
    ("InputRequiredResult", m.InputRequiredResult, mt.InputRequiredResult, INPUT_REQUIRED, 2000),
]
# parses counted under callgrind per case (N; the baseline run does N/2): the difference is 70-100 million
# instructions, far above the run-to-run noise of the interpreter's start
COUNTED = {"tools/call request": 3000, "tools/list result, 100 tools": 60, "InputRequiredResult": 600}
WARM_UP = 20

DRIVER = """
import gc, sys
sys.path.insert(0, {here!r})
from bench_validate import CASES
name, side, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
_, ours, theirs, data, _ = next(c for c in CASES if c[0] == name)
import json
raw = json.dumps(data)
model = ours if side == "mcpgen" else theirs
for _ in range({warm_up}):
    model.model_validate_json(raw)
gc.collect()
gc.freeze()
gc.disable()
for _ in range(n):
    model.model_validate_json(raw)  # looked up at each parse, as an application does
"""


def instructions(name: str, side: str, calls: int) -> int:
    """Instructions of a whole child run that parses `calls` times after the warm-up."""
    driver = DRIVER.format(here=str(HERE), warm_up=WARM_UP)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", driver,
         name, side, str(calls)],
        capture_output=True, text=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def per_parse(case: tuple[str, str], calls: int) -> int:
    name, side = case
    half = calls // 2
    return (instructions(name, side, calls) - instructions(name, side, half)) // (calls - half)


def count_instructions(scale: float, jobs: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    for _, ours, _, data, _ in CASES:  # what is counted parses each message in full, as sent
        assert ours.model_validate_json(json.dumps(data)).model_dump(mode="json", exclude_unset=True) == data
    calls = {name: max(2, round(n * scale)) for name, n in COUNTED.items()}
    driver = DRIVER.format(here=str(HERE), warm_up=WARM_UP)
    for name, side in [(c[0], s) for c in CASES for s in ("mcpgen", "mcp-types")]:
        # once outside valgrind: both counted runs find the bytecode compiled
        subprocess.run([sys.executable, "-c", driver, name, side, "1"], check=True, env=child_env())
    cases = [(c[0], side) for c in CASES for side in ("mcpgen", "mcp-types")]
    with ThreadPoolExecutor(jobs) as pool:
        counted = dict(zip(cases, pool.map(lambda case: per_parse(case, calls[case[0]]), cases), strict=True))
    rows = []
    for name, *_ in CASES:
        ours, theirs = counted[name, "mcpgen"], counted[name, "mcp-types"]
        rows.append(
            {
                "message": name,
                "mcpgen instructions/parse": f"{ours:,}",
                "mcp-types instructions/parse": f"{theirs:,}",
                "rate vs mcp-types": f"{theirs / ours:.2f}x",
            }
        )
    entry: dict[str, Any] = {
        "title": "CPU instructions per model_validate_json of the JSON text (callgrind)",
        "keys": ["message"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": [
            "(instructions with N parses - with N/2) / (N/2), N = "
            + ", ".join(f"{n} ({name})" for name, n in calls.items())
            + f", after {WARM_UP} warm-up parses, GC frozen and off, PYTHONHASHSEED=0;"
            " rate vs mcp-types above 1.00x: mcpgen parses with fewer instructions"
        ],
    }
    save_tables("validate_instructions", [entry])


def main() -> None:
    rows = []
    for name, ours, theirs, data, number in CASES:
        raw = json.dumps(data)
        assert ours.model_validate_json(raw).model_dump(mode="json", exclude_unset=True) == data
        theirs.model_validate_json(raw)
        for mode in ("json", "python"):
            if mode == "json":
                rate_ours = best_rate(lambda o=ours, r=raw: o.model_validate_json(r), number)
                rate_theirs = best_rate(lambda t=theirs, r=raw: t.model_validate_json(r), number)
            else:
                rate_ours = best_rate(lambda o=ours, d=data: o.model_validate(d), number)
                rate_theirs = best_rate(lambda t=theirs, d=data: t.model_validate(d), number)
            rows.append(
                {
                    "message": name,
                    "input": "JSON text" if mode == "json" else "dict",
                    "mcpgen /s": f"{rate_ours:,.0f}",
                    "mcp-types /s": f"{rate_theirs:,.0f}",
                    "ratio": f"{rate_ours / rate_theirs:.2f}x",
                }
            )
    save("validate", rows)
    print(table(rows, ["message", "input", "mcpgen /s", "mcp-types /s", "ratio"]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    parser.add_argument("--calls-scale", type=float, default=1.0, help="scale the counted parses per case")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (counts do not depend on it)")
    options = parser.parse_args()
    if options.instructions:
        count_instructions(options.calls_scale, options.jobs)
    else:
        main()
