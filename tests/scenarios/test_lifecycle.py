"""Sessions end when they should, callbacks cannot stall them, and one bad reply cannot kill them."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientHooks,
    McpError,
    NegotiationError,
    RequestContext,
    Sealing,
    Server,
    ServerAdvertising,
    Timeouts,
    memory_pair,
)
from support.peers import V25, V26, RawPeer, connected, meta, raw_server

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    server = Server("life")

    @server.tool()
    def grow() -> str:
        server.add_tool(lambda: "x", name=f"t{len(server.tools)}")
        return "grown"

    @server.tool()
    def half() -> float:
        return float("nan")

    @server.method("ping")
    async def weird(ctx: RequestContext, params: Any) -> dict[str, Any]:
        return {"_meta": {"when": object()}}

    @server.resource("mem://dir/{name}")
    def entry(name: str) -> str:
        return name

    return server


async def test_serve_returns_when_the_client_leaves_even_after_notifications() -> None:
    server = make_server()
    client_end, server_end = memory_pair()
    done = anyio.Event()

    async def serve() -> None:
        await server.serve(server_end)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        async with Client(client_end, mode="handshake") as client:
            await client.call_tool("grow")  # pushes tools/list_changed
        with anyio.fail_after(2):
            await done.wait()
    assert not server.sessions


async def test_a_callback_that_makes_a_request_does_not_stall_the_session() -> None:
    server = make_server()
    seen: list[list[str]] = []
    holder: dict[str, Client] = {}

    async def relist(kind: str) -> None:
        seen.append([t.name async for t in holder["client"].tools()])

    async with connected(
        server, mode="handshake", hooks=ClientHooks(on_list_changed=relist), timeouts=Timeouts(request=3)
    ) as client:
        holder["client"] = client
        started = time.monotonic()
        await client.call_tool("grow")
        with anyio.fail_after(2):
            while not seen:
                await anyio.sleep(0.01)
        assert time.monotonic() - started < 1.5
        assert "t2" in seen[0]


async def test_an_unencodable_result_is_an_internal_error_and_serving_goes_on() -> None:
    server = make_server()
    async with raw_server(server) as peer:
        await peer.request(
            0, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        reply = await peer.request(1, "ping")
        assert reply["error"]["code"] == -32603 and reply["id"] == 1
        assert (await peer.request(2, "tools/call", {"name": "grow"}))["result"]["content"][0]["text"] == "grown"


async def test_nan_is_sent_as_null() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/call", {"_meta": meta(), "name": "half"})
        assert reply["result"]["structuredContent"] == {"result": None}


async def test_stop_listening_ends_open_streams_only() -> None:
    server = Server("listen")
    server.add_tool(lambda: "x", name="x")
    async with connected(server, mode=V26) as client:
        async with client.listen(tools=True) as first:
            server.stop_listening()
            assert [e async for e in first] == []
        async with client.listen(tools=True) as second:
            server.add_tool(lambda: "y", name="y")
            assert (await second.next(timeout=2)).kind == "tools"


def test_one_server_serves_several_event_loops() -> None:
    server = Server("loops")
    server.add_tool(lambda: "x", name="x")

    async def use() -> None:
        async with connected(server, mode=V26) as client, client.listen(tools=True) as sub:
            server.stop_listening()
            assert [e async for e in sub] == []

    anyio.run(use)
    anyio.run(use, backend="trio")


async def test_listen_errors_are_raised_and_body_errors_are_not_wrapped() -> None:
    server = Server("no-listen")
    server.add_tool(lambda: "x", name="x")

    @server.method("subscriptions/listen")
    async def refuse(ctx: RequestContext, params: Any) -> Any:
        raise McpError("no streams here", code=-32000)

    async with connected(server, mode=V26) as client:
        with pytest.raises(McpError, match="no streams here"):
            async with client.listen(tools=True):
                pass
    async with connected(
        Server("fine", advertising=ServerAdvertising(capabilities={"tools": {"listChanged": True}})), mode=V26
    ) as client:
        with pytest.raises(KeyError):
            async with client.listen(tools=True):
                raise KeyError("mine")


async def test_legacy_subscription_ends_when_the_connection_closes() -> None:
    server = make_server()
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode="handshake") as client, client.listen(resource_uris=["mem://dir"]) as sub:
            await server_end.send.aclose()  # the server goes away
            with anyio.fail_after(2):
                assert [e async for e in sub] == []
        tg.cancel_scope.cancel()


async def test_legacy_subscription_gets_sub_resource_updates() -> None:
    server = make_server()
    async with connected(server, mode="handshake") as client, client.listen(resource_uris=["mem://dir"]) as sub:
        server.notify_resource_updated("mem://dir/a")
        event = await sub.next(timeout=2)
        assert event.uri == "mem://dir/a"


async def test_any_recognised_modern_error_from_the_probe_stops_the_fallback() -> None:
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    methods: list[str] = []

    async def fake() -> None:
        while True:
            try:
                message = await peer.receive(timeout=5)
            except (anyio.EndOfStream, TimeoutError):
                return
            methods.append(message.get("method", ""))
            if message.get("method") == "ping":  # the liveness check: the server is up
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
                continue
            error = {"code": -32021, "message": "missing", "data": {"requiredCapabilities": {"x": {}}}}
            await peer.send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    async with anyio.create_task_group() as tg:
        tg.start_soon(fake)
        with pytest.raises(NegotiationError, match="modern server"):
            async with Client(client_end, mode="auto"):
                pass
        tg.cancel_scope.cancel()
    assert [m for m in methods if m != "ping"] == ["server/discover"]


async def test_no_reply_to_responses_without_jsonrpc() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send({"id": 3, "result": {}})
        await peer.send({"id": 4, "error": {"code": 1, "message": "x"}})
        assert await peer.nothing_within(0.2)


async def test_closing_the_client_ends_the_server_session() -> None:
    server = make_server()
    client_end, server_end = memory_pair()
    finished = anyio.Event()

    async def serve() -> None:
        await server.serve(server_end)
        finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        async with Client(client_end, mode=V26):
            pass
        with anyio.fail_after(2):
            await finished.wait()


async def test_oversized_request_state_is_refused_when_issued() -> None:
    server = Server("big", sealing=Sealing(ttl_seconds=60))

    @server.tool()
    async def hoard(ctx: RequestContext) -> str:
        return ctx.input_required(state={"blob": "x" * 100_000})

    async with raw_server(server) as peer:
        reply = await peer.request(1, "tools/call", {"_meta": meta(), "name": "hoard"})
        assert reply["error"]["code"] == -32603 and "limit" in reply["error"]["message"]


def test_stdio_server_exits_while_its_stdin_stays_open() -> None:
    script = (
        "import anyio\nfrom mcpgen.runtime import stdio_server\n"
        "async def main():\n    async with stdio_server():\n        await anyio.sleep(0.2)\n"
        "anyio.run(main)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        assert process.stdin is not None
        process.stdin.close()
