"""The request pipeline's own checks of what the client sends."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import ClientHooks, OutgoingRequest, Server
from mcpgen.runtime.client import requests as pipeline
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


async def test_the_clients_meta_is_checked_once_and_any_other_meta_again() -> None:
    async with connected(make_server(), mode="2026-07-28") as client:
        model = client.requests.spec("tools/call").params
        for text in ("a", "b"):  # the second call finds the client's `_meta` checked already
            assert text_of(await client.call_tool("echo", {"text": text})) == text
        first = pipeline._checked_meta[model]
        assert first[0][CLIENT_INFO_KEY] == client.client_info
        bad = {"name": "echo", "arguments": {"text": "c"}, "_meta": {CLIENT_INFO_KEY: 5}}
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", bad)
        with pytest.raises(InvalidParams, match="invalid params for tools/call"):
            await client.request("tools/call", {**bad, "_meta": {LOG_LEVEL_KEY: "loudest"}})
        client.log_level = "debug"  # a different `_meta`: checked (and sent) as it is now
        assert text_of(await client.call_tool("echo", {"text": "d"})) == "d"
        client.client_info["name"] = "renamed"  # changed in place: not the `_meta` checked before
        assert text_of(await client.call_tool("echo", {"text": "e"})) == "e"
        assert pipeline._checked_meta[model][0][CLIENT_INFO_KEY] == {**client.client_info}


async def test_clients_with_the_same_meta_share_its_check() -> None:
    server = make_server()
    async with connected(server, mode="2026-07-28") as one, connected(server, mode="2026-07-28") as two:
        model = one.requests.spec("tools/call").params
        assert text_of(await one.call_tool("echo", {"text": "a"})) == "a"
        checked = pipeline._checked_meta[model]
        assert text_of(await two.call_tool("echo", {"text": "b"})) == "b"
        assert pipeline._checked_meta[model] is checked  # the second client's `_meta` was the one checked
        two.client_info["name"] = "other"  # now different: checked for itself, and remembered instead
        assert text_of(await two.call_tool("echo", {"text": "c"})) == "c"
        assert pipeline._checked_meta[model][0][CLIENT_INFO_KEY]["name"] == "other"
        assert text_of(await one.call_tool("echo", {"text": "d"})) == "d"
        assert pipeline._checked_meta[model][0][CLIENT_INFO_KEY] == one.client_info


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
