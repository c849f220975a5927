"""A subscription's end (`Client.listen`): its events end with its block, on both eras."""

from __future__ import annotations

import pytest
from mcpgen.runtime import Server
from support.leaks import no_unclosed_streams
from support.peers import V25, V26, connected

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("version", [V26, V25])
async def test_a_subscription_leaves_no_stream_unclosed(version: str) -> None:
    """Defect: a subscription's event stream was left to the garbage collector, unclosed
    (anyio's ResourceWarning, seen in a later test)."""
    server = Server("subs", "1.0")

    @server.tool()
    def first() -> str:
        return "1"

    with no_unclosed_streams():
        async with connected(server, mode=version) as client, client.listen(tools=True) as sub:
            server.add_tool(lambda: "2", name="second")
            assert (await sub.next(timeout=30)).kind == "tools"
