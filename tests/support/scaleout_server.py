"""A server for the multi-process tests: every result says which process served each round."""

from __future__ import annotations

import os

from mcpgen.runtime import RequestContext, Server
from mcpgen.runtime.protocol.input_requests import elicit

server = Server("scale-out")  # sealing keys from MCPGEN_STATE_KEYS, shared by the processes
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


@server.tool()
async def rounds(ctx: RequestContext) -> str:
    """Three rounds; the state remembers the process of each."""
    pids = [*(ctx.state or []), os.getpid()]
    if len(pids) < 3:
        return ctx.input_required(state=pids, **{f"step{len(pids)}": elicit("Go on?", OK)})
    return ",".join(str(pid) for pid in pids)


@server.tool()
def touch(uri: str) -> int:
    """Announce that `uri` changed (listen streams of every process hear of it with a bus)."""
    server.notify_resource_updated(uri)
    return os.getpid()


@server.resource("mem://{name}")
def memory(name: str) -> str:
    return name
