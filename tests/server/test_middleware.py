"""Server middleware: around every request and every tool call, in a stated order; the three shipped ones."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    CallNext,
    Client,
    McpError,
    Middleware,
    RateLimit,
    RequestContext,
    RequestInfo,
    RequestLogging,
    Server,
    Timing,
    ToolCall,
    ToolError,
    TransportContext,
    memory_pair,
)
from mcpgen.runtime.auth import AuthInfo
from mcpgen.runtime.server.hooks import RateLimited
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


class Recorder(Middleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        self.log.append(f"{self.name}>{request.method}")
        try:
            return await call_next()
        finally:
            self.log.append(f"{self.name}<{request.method}")

    async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
        self.log.append(f"{self.name}>tool {call.name}")
        try:
            return await call_next()
        finally:
            self.log.append(f"{self.name}<tool {call.name}")


def make_server(**options: Any) -> Server:
    server = Server("mw", **options)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def divide(a: int, b: int) -> float:
        return a / b

    @server.tool()
    def whoami(ctx: RequestContext) -> str:
        return str(getattr(ctx.auth, "subject", None))

    return server


@pytest.mark.parametrize("mode", MODES)
async def test_middleware_wraps_requests_and_tool_calls_outermost_first(mode: str) -> None:
    log: list[str] = []
    server = make_server(middleware=[Recorder("a", log), Recorder("b", log)])
    async with connected(server, mode=mode) as client:
        log.clear()  # the negotiation went through the middleware too
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
    assert [entry for entry in log if "tools/list" not in entry] == [  # the client lists the tools once too
        "a>tools/call",
        "b>tools/call",
        "a>tool add",
        "b>tool add",
        "b<tool add",
        "a<tool add",
        "b<tools/call",
        "a<tools/call",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_request_middleware_sees_the_request(mode: str) -> None:
    seen: list[tuple[str, str, str, Any, str | None]] = []

    async def spy(request: RequestInfo, call_next: CallNext) -> Any:  # a plain function is a request middleware
        assert isinstance(request.ctx, RequestContext) and request.ctx.protocol_version == request.version
        seen.append((request.method, request.era, request.version, request.principal, request.target))
        return await call_next()

    async with connected(make_server(middleware=[spy]), mode=mode) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    era, version = ("handshake", "2025-11-25") if mode == "handshake" else ("modern", "2026-07-28")
    assert ("tools/call", era, version, None, "add") in seen
    negotiation = "initialize" if mode == "handshake" else "server/discover"
    assert seen[0][0] == negotiation


@pytest.mark.parametrize("mode", MODES)
async def test_request_middleware_may_answer_refuse_or_change(mode: str) -> None:
    class Gatekeeper(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            if request.method == "tools/list":
                return {"tools": []}  # answered here: stamped and checked like a handler's result
            if request.target == "divide":
                raise McpError("dividing is switched off", code=-32001, data={"why": "maintenance"})
            if request.method == "tools/call":
                request.params = request.params.model_copy(update={"arguments": {"a": 40, "b": 2}})
            return await call_next()

    async with connected(make_server(middleware=[Gatekeeper()]), mode=mode) as client:
        assert [tool async for tool in client.tools()] == []
        with pytest.raises(McpError) as refused:
            await client.call_tool("divide", {"a": 1, "b": 2})
        assert (refused.value.code, refused.value.data) == (-32001, {"why": "maintenance"})
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 42}


@pytest.mark.parametrize("mode", MODES)
async def test_a_result_request_middleware_changed_is_checked_again(mode: str) -> None:
    """The runtime trusts the tool results it builds itself once one passed; one a middleware
    changed in place is its own again, and checked."""

    class Spoiler(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            result = await call_next()
            if request.target == "divide":
                result["content"] = [{"type": "no such content"}]
            return result

    async with connected(make_server(middleware=[Spoiler()]), mode=mode) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}
        with pytest.raises(McpError) as refused:
            await client.call_tool("divide", {"a": 1, "b": 2})
        assert refused.value.code == -32603 and "invalid tools/call result" in refused.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_tool_middleware_may_answer_refuse_or_change_arguments(mode: str) -> None:
    class Tools(Middleware):
        async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
            if call.name == "add" and call.arguments["a"] == 0:
                return -1  # instead of the function: becomes the result as its value would
            if call.name == "divide" and call.arguments["b"] == 0:
                raise ToolError("b must not be 0")
            if call.name == "add":
                call.arguments["b"] = 100
            return await call_next()

    async with connected(make_server(middleware=[Tools()]), mode=mode) as client:
        assert (await client.call_tool("add", {"a": 0, "b": 5})).structured_content == {"result": -1}
        assert (await client.call_tool("add", {"a": 1, "b": 5})).structured_content == {"result": 101}
        refused = await client.call_tool("divide", {"a": 1, "b": 0})
        assert refused.is_error is True and refused.content[0].text == "b must not be 0"


@pytest.mark.parametrize("mode", MODES)
async def test_middleware_sees_what_handlers_raise_and_its_own_failures_stay_private(mode: str) -> None:
    outcomes: list[str] = []

    class Watch(Middleware):
        async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
            try:
                return await call_next()
            except Exception as exc:
                outcomes.append(type(exc).__name__)
                raise

        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            if request.method == "prompts/list":
                raise RuntimeError("a bug in the middleware, with /etc/secrets")
            return await call_next()

    server = make_server(middleware=[Watch()])
    server.add_prompt(lambda: "hi", name="hi")
    async with connected(server, mode=mode) as client:
        failed = await client.call_tool("divide", {"a": 1, "b": 0})
        assert failed.is_error is True and "ZeroDivisionError" not in failed.content[0].text
        assert outcomes == ["ZeroDivisionError"]
        with pytest.raises(McpError) as raised:
            _ = [p async for p in client.prompts()]
        assert raised.value.code == -32603 and "secrets" not in raised.value.message


def test_only_the_hooks_a_middleware_overrides_run() -> None:
    class OnlyRequests(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            return await call_next()

    assert Server("none").middleware.requests == () and Server("none").middleware.tools == ()
    server = Server("one", middleware=[OnlyRequests()])
    assert len(server.middleware.requests) == 1 and server.middleware.tools == ()
    server.add_middleware(Timing())
    assert len(server.middleware.requests) == 2
    with pytest.raises(TypeError, match="a middleware is"):
        Server("bad", middleware=[42])  # type: ignore[list-item]


# -- the shipped middleware ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def as_principal(server: Server, subject: str | None, mode: str = "auto") -> AsyncIterator[Client]:
    client_end, server_end = memory_pair()
    who = AuthInfo(token="t", subject=subject, issuer="https://issuer") if subject else None
    server_end = dataclasses.replace(server_end, context=TransportContext("memory", auth=who))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode=mode) as client:
            yield client
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("mode", MODES)
async def test_request_logging_writes_one_structured_record_per_request(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    records: list[dict[str, Any]] = []
    clock = Clock()

    class Tick(Middleware):  # inside the logger: each request takes 0.25 s of the fake clock
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            clock.now += 0.25
            return await call_next()

    server = make_server(middleware=[RequestLogging(emit=records.append, clock=clock), Tick()])
    async with as_principal(server, "alice", mode) as client:
        await client.call_tool("divide", {"a": 1, "b": 0})
        await client.call_tool("add", {"a": 1, "b": 2})
    era = "handshake" if mode == "handshake" else "modern"
    calls = [r for r in records if r["method"] == "tools/call"]
    assert [(r["target"], r["outcome"], r["duration_ms"]) for r in calls] == [
        ("divide", "tool_error", 250.0),
        ("add", "ok", 250.0),
    ]
    assert calls[0]["principal"] == "https://issuer#alice" and calls[0]["era"] == era

    caplog.set_level(logging.INFO, "mcpgen.requests")
    async with connected(make_server(middleware=[RequestLogging()]), mode=mode) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    logged = [r for r in caplog.records if r.name == "mcpgen.requests" and "tools/call add" in r.getMessage()]
    assert logged and logged[0].mcp["outcome"] == "ok"  # type: ignore[attr-defined]  # the record's extra


async def test_rate_limit_is_per_principal() -> None:
    clock = Clock()
    limit = RateLimit(2, per=1.0, clock=clock, exempt=("server/discover", "ping", "tools/list"))  # calls only
    server = make_server(middleware=[limit])
    async with as_principal(server, "alice") as alice, as_principal(server, "bob") as bob:
        for _ in range(2):
            await alice.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(RateLimited) as limited:  # the client receives it typed
            await alice.call_tool("add", {"a": 1, "b": 1})
        assert limited.value.code == -31429 and limited.value.data == {"retryAfter": 0.5}
        assert limited.value.retry_after == 0.5
        assert (await bob.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}, "bob has his own"
        clock.now += 0.5  # one token back for alice
        assert (await alice.call_tool("add", {"a": 2, "b": 2})).structured_content == {"result": 4}
        with pytest.raises(McpError):
            await alice.call_tool("add", {"a": 1, "b": 1})


async def test_timing_keeps_statistics_per_method_and_tool() -> None:
    clock = Clock()

    class Tick(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            clock.now += 0.5 if request.target == "add" else 0.125
            return await call_next()

    timing = Timing(clock=clock)
    async with connected(make_server(middleware=[timing, Tick()]), mode="auto") as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        await client.call_tool("add", {"a": 1, "b": 2})
        await client.call_tool("divide", {"a": 1, "b": 2})
    stats = timing.stats
    assert (stats["tools/call add"].count, stats["tools/call add"].total, stats["tools/call add"].max) == (2, 1.0, 0.5)
    assert stats["tools/call add"].mean == 0.5
    assert stats["tools/call divide"].count == 1 and stats["tools/call divide"].total == 0.125
