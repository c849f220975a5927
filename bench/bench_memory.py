"""Memory per idle session: many connected, idle client/server pairs in one process, measured with
tracemalloc (Python allocations), mcpgen against the official SDK's in-process client, both eras,
each session having made one call of a sync tool (`def`) or of an async tool (`async def`).

Both libraries are measured the same way, in the same run: one server per library; one session
first (a call of the tool, then closed) warms up what a process makes once (code paths, compiled
validators, shared tables, thread pools), so one-time caches are not counted; then N sessions are
opened side by side, each makes its call and stays connected with nothing in flight, and the
growth of the traced memory between a snapshot before and one after (garbage collected at both)
divided by N is the cost of one idle session, client and server side together.

    python bench/bench_memory.py [--sessions 200] [--eras handshake,modern] [--tools sync,async]
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from contextlib import AsyncExitStack
from typing import Any

import anyio
from _cases import ARGS, ERAS, KINDS, SIDES, TOOL_NAMES, connect, kind_label, official_server, ours_server, runs_on
from _util import command, save_tables


async def per_session(side: str, mode: str, kind: str, sessions: int) -> tuple[float, str]:
    """(bytes per idle session, where the server ran a sync tool)."""
    name = TOOL_NAMES[kind]
    server = ours_server() if side == "mcpgen" else official_server()  # one server, many sessions
    async with connect(side, "memory", mode, server) as warm:  # warm up: code paths, validators, thread pools
        where = await runs_on(warm)
        await warm.call_tool(name, ARGS)
    async with AsyncExitStack() as stack:
        gc.collect()
        before = tracemalloc.take_snapshot()
        for _ in range(sessions):
            client = await stack.enter_async_context(connect(side, "memory", mode, server))
            await client.call_tool(name, ARGS)
        gc.collect()
        after = tracemalloc.take_snapshot()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / sessions, where


def main(sessions: int, eras: list[str], tools: list[str]) -> None:
    tracemalloc.start()
    rows = []
    for era, mode in ERAS.items():
        if not any(era.startswith(word) for word in eras):
            continue
        for kind in tools:
            measured = {side: anyio.run(per_session, side, mode, kind, sessions) for side in SIDES}
            (mine, ours_where), (theirs, theirs_where) = measured["mcpgen"], measured["official"]
            rows.append(
                {
                    "era": era,
                    "tool": kind,
                    "where the tool ran": kind_label(kind, {"mcpgen": ours_where, "official": theirs_where}),
                    "mcpgen KiB/session": f"{mine / 1024:.1f}",
                    "official KiB/session": f"{theirs / 1024:.1f}",
                    "ratio (official / mcpgen)": f"{theirs / mine:.2f}x",
                }
            )
            print(rows[-1], flush=True)
    table: dict[str, Any] = {
        "title": "memory per idle connected session (tracemalloc, in memory)",
        "keys": ["era", "tool"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": [
            f"{sessions} sessions of Client(server) to one server per side, each after one call, all open at once"
            " and idle; after one warm-up session (one-time caches not counted); Python allocations (client and"
            " server side together), the traced growth divided by the sessions"
        ],
    }
    save_tables("memory", [table])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--eras", default="handshake,modern", help="comma-separated: handshake, modern")
    parser.add_argument("--tools", default=",".join(KINDS), help="comma-separated: " + ", ".join(KINDS))
    args = parser.parse_args()
    main(args.sessions, args.eras.split(","), args.tools.split(","))
