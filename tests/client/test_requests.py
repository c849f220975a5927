"""The request pipeline's own checks of what the client sends."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import Server
from mcpgen.runtime.protocol.errors import InvalidParams
from mcpgen.runtime.protocol.keys import CLIENT_INFO_KEY, LOG_LEVEL_KEY
from support.peers import connected

pytestmark = pytest.mark.anyio


def text_of(result: Any) -> str:
    return str(result.content[0].text)


def make_server() -> Server:
    server = Server("t", "1")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def test_the_clients_meta_is_checked_once_and_any_other_meta_again() -> None:
    async with connected(make_server(), mode="2026-07-28") as client:
        for text in ("a", "b"):  # the second call finds the client's `_meta` checked already
            assert text_of(await client.call_tool("echo", {"text": text})) == text
        assert len(client.requests._checked_meta) == 1
        bad = {"name": "echo", "arguments": {"text": "c"}, "_meta": {CLIENT_INFO_KEY: 5}}
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", bad)
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", {**bad, "_meta": {LOG_LEVEL_KEY: "loudest"}})
        client.log_level = "debug"  # a different `_meta`: checked (and sent) as it is now
        assert text_of(await client.call_tool("echo", {"text": "d"})) == "d"
        client.client_info["name"] = "renamed"  # changed in place: not the `_meta` checked before
        assert text_of(await client.call_tool("echo", {"text": "e"})) == "e"
        assert client.requests._checked_meta[next(iter(client.requests._checked_meta))][0][CLIENT_INFO_KEY] == {
            **client.client_info
        }
