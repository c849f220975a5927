"""Faults, load and hostile input: one regression test per defect the stress run found, both backends."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientChecks,
    ElicitationError,
    InputHandlers,
    McpRuntimeError,
    PaginationError,
    RemoteProtocolError,
    RequestContext,
    RequestTimeout,
    Server,
    ServerLimits,
    Timeouts,
    memory_pair,
)
from mcpgen.runtime.protocol.input_requests import apply_elicitation, elicit
from support.peers import V25, V26, RawPeer, connected, meta, raw_server

pytestmark = pytest.mark.anyio


def make_server(**options: Any) -> Server:
    server = Server("rel", **options, limits=ServerLimits(page_size=2))

    @server.tool()
    def echo(text: str = "") -> str:
        return text

    @server.tool()
    def flag(on: bool, count: int = 0) -> str:
        return f"{on}/{count}"

    return server


async def _stray_cancellation() -> None:
    """A cancellation that is not ours: awaiting a future someone else cancelled (asyncio), or
    a Cancelled that escaped some other scope (trio)."""
    if _backend() == "trio":
        import trio

        raise trio.Cancelled._create()  # type: ignore[attr-defined]
    import asyncio

    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future


def _backend() -> str:
    import sniffio

    return sniffio.current_async_library()


# -- high ------------------------------------------------------------------------------------------


async def test_a_stray_cancellation_in_one_handler_answers_that_request_only() -> None:
    server = make_server()

    @server.tool()
    async def victim() -> str:
        await _stray_cancellation()
        return "never"

    for mode in (V25, V26):
        async with connected(server, mode=mode) as client:
            with pytest.raises(McpRuntimeError, match="cancelled"):
                await client.call_tool("victim")
            assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"


def test_a_stray_cancellation_does_not_end_a_stdio_server() -> None:
    import subprocess

    script = (
        "import asyncio\n"
        "from mcpgen.runtime import Server\n"
        "server = Server('s')\n"
        "@server.tool()\n"
        "async def victim() -> str:\n"
        "    f = asyncio.get_running_loop().create_future(); f.cancel(); await f\n"
        "    return 'x'\n"
        "server.run_stdio()\n"
    )
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "victim", "_meta": meta()}}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}}
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        out, _ = process.communicate((json.dumps(call) + "\n" + json.dumps(ping) + "\n").encode(), timeout=60)
    finally:
        process.kill()
    replies = {m["id"]: m for m in map(json.loads, out.splitlines())}
    assert replies[1]["error"]["code"] == -32603
    assert "tools" in replies[2]["result"], "the process kept serving after the stray cancellation"


async def test_a_timeout_is_a_deadline_for_the_whole_call_even_when_sending_blocks() -> None:
    """The peer reads nothing, so every send waits for room: each call still ends at its deadline."""
    client_end, _server_end = memory_pair(buffer=0)  # nobody reads the server end
    async with Client(client_end, mode=V26, timeouts=Timeouts(request=0.5)) as client:  # a pin: no negotiation traffic
        outcomes: list[BaseException] = []

        async def call() -> None:
            try:
                await client.call_tool("echo")
            except RequestTimeout as exc:
                outcomes.append(exc)

        with anyio.fail_after(30):  # a hang detector: without the fix the calls never return
            async with anyio.create_task_group() as calls:
                for _ in range(20):
                    calls.start_soon(call)
        assert len(outcomes) == 20


# -- medium ----------------------------------------------------------------------------------------


async def test_a_flooding_peer_is_held_to_the_in_flight_bound() -> None:
    """A peer writes requests and reads nothing: the server runs `max_in_flight`, parks `max_backlog`
    more, refuses the rest at once with -31503, and stops reading only when those
    refusals fill the peer's unread input: what it takes in and holds stays bounded."""
    server = make_server()
    started = anyio.Event()
    release = anyio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        await release.wait()
        return "done"

    client_end, server_end = memory_pair(buffer=4)
    peer = RawPeer(client_end)
    sent = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(server_end, max_in_flight=8, max_backlog=4))
        with anyio.move_on_after(2):  # stops when the server stops reading (our sends block)
            for i in range(10_000):
                params = {"name": "wait", "_meta": meta()}
                await peer.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
                sent += 1
        session = next(iter(server.sessions))
        assert session.in_flight == 8 and session.backlog == 4
        # run + parked + refusals the peer has not read + its unread input + the send under way
        assert sent <= 8 + 4 + 4 + 4 + 1, f"the server accepted {sent} requests while serving only 8"
        release.set()
        done = refused = 0
        with anyio.fail_after(30):
            while done + refused < sent:
                reply = await peer.receive()
                if "error" in reply:
                    assert reply["error"]["code"] == -31503
                    assert reply["error"]["data"] == {"maxInFlight": 8, "maxBacklog": 4}
                    refused += 1
                else:
                    assert reply["result"]["content"][0]["text"] == "done"
                    done += 1
        assert done >= 12 and refused > 0  # (those still unread when room came back are served too)
        tg.cancel_scope.cancel()


async def test_an_oversized_reply_becomes_an_error_for_the_caller() -> None:
    server = make_server()

    @server.tool()
    def big() -> str:
        return "x" * 10_000

    client_end, server_end = memory_pair(max_message_bytes=4096)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode=V26, timeouts=Timeouts(request=None)) as client:
            with anyio.fail_after(30), pytest.raises(McpRuntimeError, match="too large"):
                await client.call_tool("big")
            assert (await client.call_tool("echo", {"text": "ok"})).content[0].text == "ok"
        tg.cancel_scope.cancel()


async def test_an_oversized_response_fails_the_call_it_answers() -> None:
    client_end, server_end = memory_pair(max_message_bytes=4096)
    peer = RawPeer(server_end)
    async with anyio.create_task_group() as tg:

        async def huge_answer() -> None:
            message = await peer.receive()
            body = {"resultType": "complete", "content": [{"type": "text", "text": "y" * 10_000}]}
            await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": body})

        tg.start_soon(huge_answer)
        async with Client(client_end, mode=V26, timeouts=Timeouts(request=None)) as client:
            with anyio.fail_after(30), pytest.raises(RemoteProtocolError, match="over the 4096-byte"):
                await client.call_tool("echo")
        tg.cancel_scope.cancel()


async def test_an_oversized_request_is_refused_with_its_id() -> None:
    async with raw_server(make_server(), max_message_bytes=2048) as peer:
        big = {"jsonrpc": "2.0", "id": "big-1", "method": "tools/call", "params": {"name": "x" * 5000}}
        await peer.send(big)
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == ("big-1", -32600)


def test_nan_never_passes_an_elicitation_range_check() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "minimum": 1, "maximum": 5}}}
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="expected number"):
            apply_elicitation(schema, {"n": bad})
    assert apply_elicitation(schema, {"n": 3}) == {"n": 3}


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
async def test_the_json_reader_refuses_nan_and_infinity(token: bytes) -> None:
    async with raw_server(make_server()) as peer:
        await peer.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": ' + token + b"}}")
        reply = await peer.receive()
        assert reply["error"]["code"] == -32700 and "id" not in reply


async def test_nan_in_an_elicitation_answer_is_refused_in_both_eras() -> None:
    server = make_server()

    @server.tool()
    def rate(ctx: RequestContext) -> str:
        answer = ctx.input_response("r")
        if answer is None:
            schema = {"type": "object", "properties": {"stars": {"type": "number", "minimum": 1, "maximum": 5}}}
            return ctx.input_required(r=elicit("Rate it", schema))
        return f"{answer.content['stars']}"

    async def nan_answer(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"stars": math.nan}}

    async with connected(server, mode=V26, inputs=InputHandlers(elicitation=nan_answer)) as client:
        with pytest.raises(ElicitationError, match="expected number"):
            await client.call_tool("rate")
    async with connected(server, mode=V25, inputs=InputHandlers(elicitation=nan_answer)) as client:
        with pytest.raises(McpRuntimeError, match="expected number"):  # the client refused the server's request
            await client.call_tool("rate")


@pytest.mark.parametrize("forged", ["v1.abc.ü", "v1.é.x", "ÿ", "v1." + "\u2603" * 10 + ".sig"])
async def test_a_non_ascii_forged_state_or_cursor_is_invalid_params(forged: str) -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/list", {"_meta": meta(), "cursor": forged})
        assert reply["error"]["code"] == -32602
        params = {"_meta": meta(), "name": "echo", "requestState": forged}
        reply = await peer.request(2, "tools/call", params)
        assert reply["error"]["code"] == -32602


# -- low -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments", [{"on": "yes"}, {"on": 1}, {"on": True, "count": "7"}, {"on": True, "count": 7.5}, {"on": None}]
)
async def test_tool_arguments_are_checked_as_strictly_as_the_schema_says(arguments: dict[str, Any]) -> None:
    ran: list[Any] = []
    server = make_server()

    @server.tool()
    def strict(on: bool, count: int = 0) -> str:
        ran.append((on, count))
        return "ran"

    async with connected(server, mode=V26) as client:
        result = await client.call_tool("strict", arguments)
        assert result.is_error and "invalid arguments" in result.content[0].text
        assert (await client.call_tool("strict", {"on": True, "count": 7})).content[0].text == "ran"
    assert ran == [(True, 7)]


async def test_a_server_that_never_stops_paginating_is_stopped() -> None:
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    async with anyio.create_task_group() as tg:

        async def endless() -> None:
            page = 0
            while True:
                try:
                    message = await peer.receive(timeout=10)
                except anyio.EndOfStream:
                    return
                page += 1
                result = {"resultType": "complete", "tools": [], "nextCursor": f"c{page}", "ttlMs": 0}
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

        tg.start_soon(endless)
        async with Client(client_end, mode=V26, checks=ClientChecks(max_pages=25)) as client:
            with pytest.raises(PaginationError, match="more than 25 pages"):
                async for _ in client.tools():
                    pass
        tg.cancel_scope.cancel()


async def test_an_unacknowledged_listen_is_a_typed_timeout() -> None:
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    async with anyio.create_task_group() as tg:

        async def silent() -> None:
            while True:
                try:
                    await peer.receive(timeout=10)
                except (anyio.EndOfStream, TimeoutError):
                    return

        tg.start_soon(silent)
        async with Client(client_end, mode=V26, timeouts=Timeouts(request=0.3)) as client:
            with pytest.raises(RequestTimeout):
                async with client.listen(tools=True):
                    pass
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("content", [["a", "list"], "text", 5])
async def test_an_elicitation_handler_with_non_object_content_is_a_typed_error(content: Any) -> None:
    server = make_server()

    @server.tool()
    def ask(ctx: RequestContext) -> str:
        if ctx.input_response("q") is None:
            return ctx.input_required(q=elicit("?", {"type": "object", "properties": {"a": {"type": "string"}}}))
        return "answered"

    async def odd(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": content}

    for mode in (V25, V26):
        async with connected(server, mode=mode, inputs=InputHandlers(elicitation=odd)) as client:
            with pytest.raises(McpRuntimeError) as caught:
                await client.call_tool("ask")
            assert isinstance(caught.value, (ElicitationError, McpRuntimeError))
            assert not isinstance(caught.value, TypeError)


async def test_a_boolean_request_id_in_cancelled_cancels_nothing() -> None:
    server = make_server()
    started = anyio.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        await anyio.sleep(0.3)
        return "finished"

    async with raw_server(server) as peer:
        params = {"name": "slow", "_meta": meta()}
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        with anyio.fail_after(10):
            await started.wait()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}})
        reply = await peer.receive(timeout=10)
        assert reply["id"] == 1 and reply["result"]["content"][0]["text"] == "finished"


@pytest.mark.parametrize(
    ("message", "expected_id"),
    [
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"}, 7),
        ({"jsonrpc": "2.0", "id": 8, "method": None}, 8),
        ({"jsonrpc": "2.0", "id": 9, "method": 12}, 9),
    ],
)
async def test_jsonrpc_envelope_errors_are_invalid_request_with_the_id(
    message: dict[str, Any], expected_id: int
) -> None:
    async with raw_server(make_server()) as peer:
        await peer.send(message)
        reply = await peer.receive()
        assert reply["error"]["code"] == -32600
        assert reply.get("id") == expected_id


async def test_array_params_are_invalid_params() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1, 2]})
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == (3, -32602)


async def test_legacy_and_modern_sessions_both_survive_every_case_above() -> None:
    async with raw_server(make_server()) as peer:
        init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert (await peer.request(1, "initialize", init))["result"]["protocolVersion"] == V25
        await peer.send_raw(b"{NaN}")
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": None})
        assert (await peer.receive())["error"]["code"] == -32700
        assert (await peer.receive())["error"]["code"] == -32600
        assert "tools" in (await peer.request(3, "tools/list"))["result"]
