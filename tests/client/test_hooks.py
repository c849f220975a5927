"""The client's hooks: around every request it sends, and on every notification it receives."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import (
    CallNext,
    ClientAdvertising,
    ClientHooks,
    Middleware,
    OutgoingRequest,
    RequestContext,
    RequestInfo,
    Server,
)
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


def make_server(seen_meta: list[dict[str, Any]]) -> Server:
    class SeeMeta(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            seen_meta.append(dict(request.ctx.request.meta))
            return await call_next()

    server = Server("hooks", middleware=[SeeMeta()])

    @server.tool()
    async def steps(ctx: RequestContext, n: int) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n)
            await ctx.info(f"step {i + 1}")
        return "done"

    return server


@pytest.mark.parametrize("mode", MODES)
async def test_on_request_sees_and_changes_every_request(mode: str) -> None:
    sent: list[tuple[str, str | None]] = []

    async def tag(request: OutgoingRequest, call_next: CallNext) -> Any:
        sent.append((request.method, request.version))
        params = dict(request.params or {})
        params["_meta"] = {**params.get("_meta", {}), "com.example/tenant": "acme"}
        request.params = params
        result = await call_next()
        assert isinstance(result, dict)  # the raw result object, before it is checked
        return result

    seen_meta: list[dict[str, Any]] = []
    async with connected(make_server(seen_meta), mode=mode, hooks=ClientHooks(on_request=tag)) as client:
        await client.call_tool("steps", {"n": 1})
        version = client.protocol_version
    methods = [method for method, _ in sent]
    assert methods[0] == ("initialize" if mode == "handshake" else "server/discover"), "the negotiation's too"
    assert "tools/call" in methods
    assert sent[0][1] is None and sent[-1][1] == version, "the version once negotiated"
    assert seen_meta and all(meta.get("com.example/tenant") == "acme" for meta in seen_meta)


@pytest.mark.parametrize("mode", MODES)
async def test_on_request_may_answer_without_sending(mode: str) -> None:
    async def cached(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/list":
            return {"tools": [{"name": "cached", "inputSchema": {"type": "object"}}]}
        return await call_next()

    seen_meta: list[dict[str, Any]] = []
    async with connected(make_server(seen_meta), mode=mode, hooks=ClientHooks(on_request=cached)) as client:
        before = len(seen_meta)
        assert [tool.name async for tool in client.tools()] == ["cached"]
        assert len(seen_meta) == before, "nothing reached the server"


@pytest.mark.parametrize("mode", MODES)
async def test_on_notification_sees_every_notification(mode: str) -> None:
    heard: list[tuple[str, Any]] = []

    def listen(method: str, params: dict[str, Any]) -> None:
        heard.append((method, params.get("progress", params.get("data"))))

    seen_meta: list[dict[str, Any]] = []
    hooks = ClientHooks(on_notification=listen)
    async with connected(
        make_server(seen_meta), mode=mode, hooks=hooks, advertising=ClientAdvertising(log_level="info")
    ) as client:
        await client.call_tool("steps", {"n": 2}, progress=lambda *_: None)
    assert ("notifications/progress", 1.0) in heard and ("notifications/progress", 2.0) in heard
    assert ("notifications/message", "step 2") in heard


def test_hooks_are_checked_when_given() -> None:
    from mcpgen.runtime import Client

    async def one_argument(request: OutgoingRequest) -> Any:
        return None

    with pytest.raises(TypeError, match="on_request must accept 2"):
        Client(Server("x"), hooks=ClientHooks(on_request=one_argument))  # type: ignore[arg-type]
