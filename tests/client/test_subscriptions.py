"""A subscription's end (`Client.listen`): its streams end with its block."""

from __future__ import annotations

import pytest
from mcpgen.runtime import Client, Server
from support.leaks import no_unclosed_streams
from support.peers import V26, connected

pytestmark = pytest.mark.anyio


async def test_a_listen_stream_leaves_no_stream_unclosed() -> None:
    """Defect: a listen stream's queues (the client's events, the server's changes) were left to
    the garbage collector, unclosed (anyio's ResourceWarning, seen in a later test)."""
    server = Server("subs", "1.0")

    @server.tool()
    def first() -> str:
        return "1"

    async def listen_once(client: Client) -> None:  # (no reference to the subscription is left after it)
        async with client.listen(tools=True) as sub:
            server.add_tool(lambda: "2", name="second")
            assert (await sub.next(timeout=30)).kind == "tools"

    with no_unclosed_streams():
        async with connected(server, mode=V26) as client:
            await listen_once(client)
