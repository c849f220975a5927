"""CPU instructions per `tools/call` round trip, in memory, mcpgen against the official SDK, with a
sync tool (`def`) and an async tool (`async def`) on both sides.

Timings on a shared machine move by tens of percent between runs; instruction counts do not.
Each case runs under `valgrind --tool=callgrind` twice, with 0 and with N calls after the same
warm-up, and the difference divided by N is the cost of one call (client and server together,
`Client(server)` in one process, as `bench_roundtrip.py` runs them). A sync tool's cost includes
whatever its library does to run it (the official SDK hands it to a worker thread; the table says
where each ran).

mcpgen's server is counted as it comes (telemetry as installed, with no SDK configured; no
middleware) and, with `--variants`, with what a variant adds (`_cases.VARIANTS`, joined by `-`):
`quiet` (telemetry off on both sides: what a process without `opentelemetry-api` runs),
`middleware` (one pass-through request middleware), `toolmiddleware` (one pass-through tool
middleware); `plain` is the server as it comes. Each process runs with PYTHONHASHSEED=0 (string
hashes decide dict and set layouts: runs of the same code differed by up to 2% without it).

    python bench/bench_instructions.py [--calls 300] [--jobs 1] [--eras handshake,modern] [--tools sync,async]
        [--variants plain,quiet,middleware,toolmiddleware]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _cases import ERAS, KINDS, VARIANTS, kind_label
from _util import child_env, command, save_tables

HERE = Path(__file__).resolve().parent
WARM_UP = 50

DRIVER = """
import sys
import anyio
sys.path.insert(0, {here!r})
from _cases import ARGS, TOOL_NAMES, connect, ours_variant, runs_on

async def main(side, mode, kind, n):
    library, _, variant = side.partition("-")
    server, client_options = ours_variant(variant) if library == "mcpgen" else (None, {{}})
    async with connect(library, "memory", mode, server, client_options) as client:
        print(await runs_on(client))
        for _ in range({warm_up} + n):
            await client.call_tool(TOOL_NAMES[kind], ARGS)

anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
"""


def instructions(side: str, mode: str, kind: str, calls: int) -> tuple[int, str]:
    """(instructions of the whole run, where the server ran a sync tool)."""
    driver = DRIVER.format(here=str(HERE), warm_up=WARM_UP)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", driver,
         side, mode, kind, str(calls)],
        capture_output=True, text=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", "")), done.stdout.strip()


def prime(side: str, mode: str) -> None:
    """Run the driver once outside valgrind, so both counted runs find the same compiled bytecode
    (a first run that compiles and caches it would count the compiling)."""
    driver = DRIVER.format(here=str(HERE), warm_up=WARM_UP)
    subprocess.run(
        [sys.executable, "-c", driver, side, mode, "sync", "0"],
        capture_output=True,
        check=True,
        env=child_env(PYTHONHASHSEED="0"),
    )


def per_call(case: tuple[str, str, str], calls: int) -> tuple[int, str]:
    side, mode, kind = case
    total, where = instructions(side, mode, kind, calls)
    base, _ = instructions(side, mode, kind, 0)
    return (total - base) // calls, where


def side_of(variant: str) -> str:
    """The driver's side for one of mcpgen's variants ("mcpgen", "mcpgen-quiet-middleware", ...)."""
    return "mcpgen" if variant == "plain" else f"mcpgen-{variant}"


def main(calls: int, jobs: int, eras: list[str], kinds: list[str], variants: list[str]) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    chosen = {era: mode for era, mode in ERAS.items() if era.split()[0] in eras}
    sides = [*(side_of(variant) for variant in variants), "official"]
    cases = [(side, mode, kind) for mode in chosen.values() for kind in kinds for side in sides]
    for side in sides:
        for mode in chosen.values():
            prime(side, mode)
    with ThreadPoolExecutor(jobs) as pool:
        counted = dict(zip(cases, pool.map(lambda case: per_call(case, calls), cases), strict=True))
    rows = []
    for era, mode in chosen.items():
        for kind in kinds:
            theirs, theirs_where = counted["official", mode, kind]
            for variant in variants:
                ours, ours_where = counted[side_of(variant), mode, kind]
                rows.append(
                    {
                        "era": era,
                        "tool": kind,
                        "mcpgen variant": variant,
                        "where the tool ran": kind_label(kind, {"mcpgen": ours_where, "official": theirs_where}),
                        "mcpgen instructions/call": f"{ours:,}",
                        "official instructions/call": f"{theirs:,}",
                        "ratio": f"{theirs / ours:.2f}x fewer",
                    }
                )
                print(rows[-1], flush=True)
    table: dict[str, Any] = {
        "title": "CPU instructions per in-memory tools/call round trip (callgrind)",
        "keys": ["era", "tool", "mcpgen variant"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": [
            f"(instructions with {calls} calls - with 0 calls) / {calls}, both after {WARM_UP} warm-up calls;"
            " client and server in one process (Client(server) on both sides); PYTHONHASHSEED=0;"
            " deterministic to about 0.1%",
            "mcpgen variants: plain (as it comes), quiet (telemetry off), middleware (one pass-through request"
            " middleware), toolmiddleware (one pass-through tool middleware), joined by '-'",
        ],
    }
    save_tables("instructions", [table])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (counts do not depend on it)")
    parser.add_argument("--eras", default="handshake,modern")
    parser.add_argument("--tools", default=",".join(KINDS))
    parser.add_argument(
        "--variants", default="plain", help=f"mcpgen's server: plain, or of {', '.join(VARIANTS)} joined by '-'"
    )
    options = parser.parse_args()
    variants = [v.strip() for v in options.variants.split(",") if v.strip()]
    for variant in variants:
        if variant != "plain" and not set(variant.split("-")) <= set(VARIANTS):
            raise SystemExit(f"unknown variant {variant!r}: plain, or of {', '.join(VARIANTS)} joined by '-'")
    main(options.calls, options.jobs, options.eras.split(","), options.tools.split(","), variants)
