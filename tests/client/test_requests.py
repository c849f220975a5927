"""The request pipeline's own checks of what the client sends."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import ClientHooks, OutgoingRequest, Server
from mcpgen.runtime.client.options import CallNext
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


async def test_the_clients_meta_and_any_other_meta_are_checked_before_sending() -> None:
    async with connected(make_server(), mode="2026-07-28") as client:
        for text in ("a", "b"):
            assert text_of(await client.call_tool("echo", {"text": text})) == text
        bad = {"name": "echo", "arguments": {"text": "c"}, "_meta": {CLIENT_INFO_KEY: 5}}
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", bad)
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", {**bad, "_meta": {LOG_LEVEL_KEY: "loudest"}})
        client.log_level = "debug"  # a different `_meta`: checked (and sent) as it is now
        assert text_of(await client.call_tool("echo", {"text": "d"})) == "d"
        client.client_info["name"] = "renamed"  # changed in place: still valid, sent as it is now
        assert text_of(await client.call_tool("echo", {"text": "e"})) == "e"
        client.client_info["version"] = 2  # changed in place, no longer valid
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.call_tool("echo", {"text": "f"})


async def test_a_meta_the_caller_changes_in_place_is_checked_in_full_again() -> None:
    """The caller's own `_meta` dict, valid on one call and changed in place before the next, is
    checked again (and not sent): being the same object as before says nothing of what it holds."""
    sent: list[Any] = []

    async def record(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            sent.append((request.params or {})["_meta"].get(LOG_LEVEL_KEY))
        return await call_next()

    async with connected(make_server(), mode="2026-07-28", hooks=ClientHooks(on_request=record)) as client:
        meta: dict[str, Any] = {LOG_LEVEL_KEY: "info"}
        params = {"name": "echo", "arguments": {"text": "a"}, "_meta": meta}
        assert text_of(await client.request("tools/call", params)) == "a"
        meta[LOG_LEVEL_KEY] = "loudest"  # the same dict, no longer valid
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", params)
        assert sent == ["info"], "refused by the client's check, not sent for the server to refuse"
        meta[LOG_LEVEL_KEY] = "debug"
        assert text_of(await client.request("tools/call", params)) == "a"
        assert sent == ["info", "debug"]


async def test_the_clients_meta_a_hook_changed_in_place_is_not_kept_for_the_next_call() -> None:
    """A request hook may change the `_meta` it is shown, in place: that changes its own request
    only; the next call carries (and checks) the `_meta` the client builds from its settings."""
    seen: list[Any] = []

    async def hook(request: OutgoingRequest, call_next: CallNext) -> Any:
        meta = (request.params or {}).get("_meta")
        if request.method == "tools/call" and isinstance(meta, dict):
            seen.append(dict(meta[CLIENT_INFO_KEY]))
            meta[CLIENT_INFO_KEY] = {"name": "hooked", "version": "9"}
        return await call_next()

    async with connected(make_server(), mode="2026-07-28", hooks=ClientHooks(on_request=hook)) as client:
        for text in ("a", "b"):
            assert text_of(await client.call_tool("echo", {"text": text})) == text
        assert seen == [client.client_info, client.client_info]
