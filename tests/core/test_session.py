"""Every error path of the session core, on asyncio and trio: bad input gets a JSON-RPC error,
never a crash or a hang, and the session keeps serving."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcpgen.runtime import McpError, RequestContext, Server, ServerAdvertising
from mcpgen.runtime.core.session import Session
from mcpgen.runtime.core.stdio import LineSplitter
from mcpgen.runtime.core.transport import Frame, Inbound, Outgoing, Oversized, ReplyRoute, Transport, TransportContext
from mcpgen.runtime.protocol import wire
from mcpgen.runtime.protocol.errors import ConnectionClosed
from support.peers import V25, V26, meta, raw_server

pytestmark = pytest.mark.anyio


def make_server(**options: Any) -> Server:
    server = Server("t", "1", **options)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def sleepy(ctx: RequestContext, seconds: float = 10) -> str:
        await anyio.sleep(seconds)
        return "slept"

    @server.method("tools/list")
    async def broken(ctx: RequestContext, params: Any) -> Any:
        raise ZeroDivisionError("boom")

    return server


async def still_serving(peer: Any) -> None:
    reply = await peer.request(99, "tools/call", {"_meta": meta(), "name": "echo", "arguments": {"text": "ok"}})
    assert reply["result"]["content"] == [{"type": "text", "text": "ok"}]


async def test_malformed_json_is_a_parse_error_without_id() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        reply = await peer.receive()
        assert reply["error"]["code"] == -32700
        assert "id" not in reply
        await still_serving(peer)


async def test_batch_is_invalid_request() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])  # type: ignore[arg-type]
        reply = await peer.receive()
        assert reply["error"]["code"] == -32600
        assert "batch" in reply["error"]["message"]
        await still_serving(peer)


@pytest.mark.parametrize("payload", [b"42", b'"text"', b"null", b"true"])
async def test_non_object_is_invalid_request(payload: bytes) -> None:
    async with raw_server(make_server()) as peer:
        await peer.send_raw(payload)
        assert (await peer.receive())["error"]["code"] == -32600
        await still_serving(peer)


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
    ],
)
async def test_bad_envelopes_are_invalid_requests(message: dict[str, Any]) -> None:
    async with raw_server(make_server()) as peer:
        await peer.send(message)
        assert (await peer.receive())["error"]["code"] == -32600
        await still_serving(peer)


async def test_unknown_method_is_method_not_found_in_both_eras() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/nope", {"_meta": meta()})
        assert reply == {"jsonrpc": "2.0", "id": 1, "error": reply["error"]}
        assert reply["error"]["code"] == -32601
        init = await peer.request(
            2, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        assert init["result"]["protocolVersion"] == V25
        assert (await peer.request(3, "tools/nope"))["error"]["code"] == -32601
        # a method of the other era is unknown in this one
        assert (await peer.request(4, "subscriptions/listen", {"notifications": {}}))["error"]["code"] == -32601
        await still_serving(peer)


async def test_wrong_direction_is_method_not_found() -> None:
    async with raw_server(make_server()) as peer:
        await peer.request(
            1, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        reply = await peer.request(2, "sampling/createMessage", {"messages": [], "maxTokens": 5})
        assert reply["error"]["code"] == -32601


async def test_invalid_params_carry_the_validation_detail() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/call", {"_meta": meta(), "name": 12})
        assert reply["error"]["code"] == -32602
        assert "name" in reply["error"]["message"]
        assert reply["error"]["data"]["errors"][0]["loc"] == ["name"]
        reply = await peer.request(2, "tools/call", [1, 2])  # type: ignore[arg-type]
        assert reply["error"]["code"] == -32602
        await still_serving(peer)


async def test_a_handler_that_raises_is_an_internal_error() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/list", {"_meta": meta()})
        assert reply["error"]["code"] == -32603
        assert "ZeroDivisionError" not in reply["error"]["message"], "the exception stays on the server"
        assert reply["error"]["data"]["errorId"] in reply["error"]["message"]
        await still_serving(peer)


async def test_a_handler_that_raises_mcp_error_keeps_its_code() -> None:
    # prompts offered, served by the handler below
    server = make_server(advertising=ServerAdvertising(capabilities={"prompts": {}}))

    @server.method("prompts/list")
    async def refuse(ctx: RequestContext, params: Any) -> Any:
        raise McpError("go away", code=-1, data={"why": "test"})

    async with raw_server(server) as peer:
        reply = await peer.request(1, "prompts/list", {"_meta": meta()})
        assert reply["error"] == {"code": -1, "message": "go away", "data": {"why": "test"}}


async def test_oversized_messages_are_refused_and_serving_goes_on() -> None:
    async with raw_server(make_server(), max_message_bytes=2048) as peer:
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 5000}})
        reply = await peer.receive()
        assert reply["error"]["code"] == -32600
        assert "too large" in reply["error"]["message"]
        assert reply["id"] == 1, "the id came first, so the caller can match the refusal"
        await still_serving(peer)


DAMAGED_ANSWERS = [
    pytest.param(b'{"jsonrpc": "2.0", "id": %s, "result": {"action": "accept", "content": {"n": NaN}}}', id="nan"),
    pytest.param(b'{"jsonrpc": "2.0", "id": %s, "result": Infinity}', id="infinity-at-the-top"),
    pytest.param(b'{"jsonrpc": "2.0", "id": %s, "result": {"action": "accept", "content": {"n": "\xff"}}}', id="utf8"),
    pytest.param(b'{"jsonrpc": "2.0", "id": %s, "result": ' + b"[" * 2000 + b"]" * 2000 + b"}", id="too-deep"),
    pytest.param(b'{"jsonrpc": "2.0", "id": %s, "error": {"code": 1, "message": "x"}} trailing', id="trailing"),
]


@pytest.mark.parametrize("damaged", DAMAGED_ANSWERS)
async def test_an_unreadable_answer_to_the_servers_request_fails_that_request(damaged: bytes) -> None:
    """Defect: a reply frame that is not valid JSON (`NaN` in an elicitation answer) left the
    server's request waiting for ever; its id can be read from its head, as for oversized frames."""
    from mcpgen.runtime import elicit

    server = make_server()

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        if ctx.input_response("n") is None:
            return ctx.input_required(
                n=elicit("a number?", {"type": "object", "properties": {"n": {"type": "number"}}})
            )
        return "answered"

    async with raw_server(server) as peer:
        init = {
            "protocolVersion": V25,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert (await peer.request(1, "initialize", init))["result"]["protocolVersion"] == V25
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}})
        asked = await peer.receive()
        assert asked["method"] == "elicitation/create"
        request_id = asked["id"]
        await peer.send_raw(damaged % (repr(request_id).replace("'", '"').encode(),))
        reply = await peer.receive(timeout=30)  # a hang guard: the answer comes at once
        assert reply["id"] == 2
        assert "could not be read" in str(reply.get("result", reply.get("error")))
        await still_serving(peer)


def test_line_splitter_never_buffers_more_than_the_limit() -> None:
    splitter = LineSplitter(limit=100)
    frames = []
    for _ in range(1000):  # 1 MB of a single line, fed in chunks
        frames += splitter.feed(b"y" * 1000)
        assert splitter.buffered <= 100 + 1024  # the line so far, or the head kept of an oversized one
    frames += splitter.feed(b'yyy\n{"a": 1}\n')
    oversized, line = frames
    assert isinstance(oversized, Oversized) and line == Frame(b'{"a": 1}')
    assert oversized.limit == 100 and oversized.size_at_least >= 1_000_000
    assert oversized.head.startswith(b"yyy") and len(oversized.head) <= 1024


def test_line_splitter_handles_split_lines_and_blank_lines() -> None:
    splitter = LineSplitter(limit=100)
    assert splitter.feed(b'{"a"') == []
    assert splitter.feed(b': 1}\r\n\n\n{"b": 2}\n{"c"') == [Frame(b'{"a": 1}'), Frame(b'{"b": 2}')]
    assert splitter.finish() == [Frame(b'{"c"')]


async def test_notifications_never_get_replies_even_when_bad() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": 1}})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "not an object"})
        assert await peer.nothing_within(0.2)
        await still_serving(peer)


async def test_duplicate_in_flight_id_is_refused() -> None:
    async with raw_server(make_server()) as peer:
        call = {"_meta": meta(), "name": "sleepy", "arguments": {"seconds": 0.5}}
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
        first = await peer.receive()
        assert first["error"]["code"] == -32600 and "id" not in first, (
            "an error with id 5 would answer the real request"
        )
        second = await peer.receive()
        assert second["result"]["content"][0]["text"] == "slept"


async def test_cancelled_request_gets_no_response_and_the_handler_stops() -> None:
    stopped = anyio.Event()
    server = make_server()

    @server.tool()
    async def wait_forever() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "unreachable"

    async with raw_server(server) as peer:
        await peer.send(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"_meta": meta(), "name": "wait_forever"}}
        )
        await anyio.sleep(0.05)
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}}
        )
        with anyio.fail_after(2):
            await stopped.wait()
        assert await peer.nothing_within(0.2)
        await still_serving(peer)


async def test_initialize_cannot_be_cancelled() -> None:
    async with raw_server(make_server()) as peer:
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
            }
        )
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        assert (await peer.receive())["result"]["protocolVersion"] == V25


# -- modern per-request checks ------------------------------------------------------------------


async def test_modern_request_without_protocol_version_is_invalid_params() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/list", {})
        assert reply["error"]["code"] == -32602
        assert "protocolVersion" in reply["error"]["message"]
        reply = await peer.request(2, "tools/list")
        assert reply["error"]["code"] == -32602


async def test_modern_request_without_client_capabilities_is_invalid_params() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V26}})
        assert reply["error"]["code"] == -32602
        assert "clientCapabilities" in reply["error"]["message"]


@pytest.mark.parametrize("requested", ["1900-01-01", V25, 2026, "2026-7-28"])
async def test_unsupported_version_is_32022_with_supported_and_requested(requested: Any) -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(
            1, "tools/list", {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": requested}}
        )
        assert reply["error"]["code"] == -32022
        assert reply["error"]["data"] == {"supported": [V26, V25], "requested": requested}


async def test_modern_results_carry_result_type_and_server_info() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/call", {"_meta": meta(), "name": "echo", "arguments": {"text": "x"}})
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "t", "version": "1"}


async def test_legacy_results_carry_no_modern_fields() -> None:
    async with raw_server(make_server()) as peer:
        await peer.request(
            1, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        reply = await peer.request(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert reply["result"] == {"content": [{"type": "text", "text": "x"}]}


async def test_legacy_ping_works_before_initialize() -> None:
    async with raw_server(make_server()) as peer:
        assert (await peer.request(1, "ping"))["result"] == {}


async def test_legacy_initialize_counter_offers_a_supported_version() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(
            1,
            "initialize",
            {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        )
        assert reply["result"]["protocolVersion"] == V25
        assert reply["result"]["serverInfo"] == {"name": "t", "version": "1"}


async def test_modern_only_server_refuses_initialize_naming_its_versions() -> None:
    async with raw_server(make_server(versions=[V26])) as peer:
        reply = await peer.request(
            1, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        assert reply["error"]["data"]["supported"] == [V26]


async def test_legacy_only_server_refuses_modern_requests_with_32022() -> None:
    async with raw_server(make_server(versions=[V25])) as peer:
        reply = await peer.request(1, "server/discover", {"_meta": meta()})
        assert reply["error"]["code"] == -32022
        assert reply["error"]["data"]["supported"] == [V25]


async def test_a_closed_connection_runs_its_queued_callbacks_before_its_background_work_is_cancelled() -> None:
    """The end of a session, in order: the reader is done, the callbacks queued before the end
    run, and only then is what still runs in the session's group (tasks' work) cancelled."""
    from mcpgen.runtime.core.memory import memory_pair
    from mcpgen.runtime.server.session import ServerSession
    from support.peers import RawPeer

    server = make_server()
    release = anyio.Event()
    order: list[str] = []

    async def forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            order.append("background cancelled")

    async def on_roots(session: ServerSession) -> None:
        assert session.background is not None
        session.background.start_soon(forever)
        await release.wait()
        order.append("callback ran")

    server.on_roots_changed = on_roots
    client_end, server_end = memory_pair()
    peer = RawPeer(client_end)
    served = anyio.Event()

    async def serve() -> None:
        await server.serve(server_end)
        served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        info = {"name": "c", "version": "1"}
        reply = await peer.request(1, "initialize", {"protocolVersion": V25, "capabilities": {}, "clientInfo": info})
        assert reply["result"]["protocolVersion"] == V25
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        await client_end.aclose()  # the connection ends while the callback still waits
        await anyio.wait_all_tasks_blocked()
        assert not served.is_set()
        assert order == []
        release.set()
        await served.wait()
    assert order == ["callback ran", "background cancelled"]


@pytest.mark.parametrize("how", ["input ended", "cancelled"])
async def test_the_reader_closes_its_input_when_the_session_ends(how: str) -> None:
    """Defect: nothing closed a session's input stream once its reader was done (an HTTP
    session's feed): anyio's ResourceWarning when it was garbage collected."""
    feed, inbound = anyio.create_memory_object_stream[Inbound](4)
    outgoing, sent = anyio.create_memory_object_stream[Outgoing](4)
    with feed, outgoing, sent:
        session = Session(Transport(inbound, outgoing))
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            if how == "cancelled":
                tg.cancel_scope.cancel()
            else:
                feed.close()
        assert session.closed
        with pytest.raises(anyio.ClosedResourceError):
            inbound.receive_nowait()


# -- back-pressure: requests past max_in_flight are parked, the reader goes on reading ---------------


class Asking(Session):
    """A server-side session whose `ask` handler waits on an answer from the peer (as an
    elicitation or a sampling request does); `hold` waits until cancelled; `quick` answers at once."""

    side = "server"

    def __init__(self, transport: Transport, **options: Any) -> None:
        super().__init__(transport, request_timeout=None, **options)
        self.started: list[Any] = []
        self.holding = anyio.Event()  # set once a `hold` handler runs

    async def handle_request(self, request: Any) -> Any:
        self.started.append(request.id)
        if request.method == "ask":
            return {"peer said": await self.send_request("peer/question", {"for": request.id})}
        if request.method == "hold":
            self.holding.set()
            await anyio.Event().wait()
        return {"id": request.id}


async def asking(**options: Any) -> Any:
    from mcpgen.runtime.core.memory import memory_pair
    from support.peers import RawPeer

    peer_end, session_end = memory_pair()
    return RawPeer(peer_end), Asking(session_end, **options)


def call(id: Any, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method}


def cancel(id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}


@pytest.mark.parametrize("bound", [1, 2])
async def test_handlers_waiting_on_the_peer_past_max_in_flight_do_not_hang(bound: int) -> None:
    """Defect: past `max_in_flight` the reader waited for room, so the answers every running
    handler waited for were never read: with all of them waiting on the peer and one more request
    in, nothing moved again (a hang). Each step here completes at once when the reader reads on."""
    peer, session = await asking(max_in_flight=bound)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(5):  # measures the session: every step is immediate when correct
            questions = []
            for i in range(bound):
                await peer.send(call(i, "ask"))
                questions.append(await peer.receive())
            await peer.send(call("extra", "ask"))  # past the bound: parked
            for question in questions:  # the answers the running handlers wait for
                await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"ok": question["params"]["for"]}})
            replies = {}
            while len(replies) < bound:
                message = await peer.receive()
                if "method" in message:  # the parked request started and asks too
                    assert message["params"] == {"for": "extra"}
                    await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": {"ok": "extra"}})
                    continue
                replies[message["id"]] = message["result"]
            if "extra" not in replies:
                message = await peer.receive()
                if "method" in message:
                    await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": {"ok": "extra"}})
                    message = await peer.receive()
                replies[message["id"]] = message["result"]
        assert replies == {
            **{i: {"peer said": {"ok": i}} for i in range(bound)},
            "extra": {"peer said": {"ok": "extra"}},
        }
        assert session.in_flight == 0 and session.backlog == 0
        tg.cancel_scope.cancel()


async def test_a_cancellation_of_a_running_request_is_read_while_a_request_waits_for_room() -> None:
    """Defect: the reader waiting for room could not read the peer's `notifications/cancelled` for
    the request holding the room, so neither ever finished."""
    peer, session = await asking(max_in_flight=1)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(5):
            await peer.send(call(1, "hold"))
            await peer.send(call(2, "quick"))  # parked behind 1
            await peer.send(cancel(1))
            reply = await peer.receive()
        assert reply == {"jsonrpc": "2.0", "id": 2, "result": {"id": 2}}  # 1 was cancelled: no answer
        assert session.started == [1, 2]
        tg.cancel_scope.cancel()


async def test_parked_requests_start_in_arrival_order_and_a_cancelled_one_is_dropped_unanswered() -> None:
    peer, session = await asking(max_in_flight=1, max_backlog=3)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(5):
            await peer.send(call(1, "ask"))
            question = await peer.receive()
            for id in (2, 3, 4):
                await peer.send(call(id, "quick"))
            await peer.send(cancel(3))  # parked: dropped, never started, never answered
            await peer.send(call(5, "quick"))  # the backlog has room again
            await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"ok": 1}})
            replies = [await peer.receive() for _ in range(4)]
        assert [reply["id"] for reply in replies] == [1, 2, 4, 5]
        assert session.started == [1, 2, 4, 5]
        tg.cancel_scope.cancel()


async def test_past_the_backlog_a_request_is_refused_at_once_naming_the_limits() -> None:
    """The backlog full too: the request is answered -31503 at once (the reader never stops, so the
    answers the running handlers wait for still arrive), and served ones are unaffected."""
    peer, session = await asking(max_in_flight=1, max_backlog=1)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(5):
            await peer.send(call(1, "ask"))
            question = await peer.receive()
            await peer.send(call(2, "quick"))  # parked
            await peer.send(call(3, "quick"))  # refused
            refused = await peer.receive()
            await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"ok": 1}})
            served = [await peer.receive() for _ in range(2)]
        assert refused["id"] == 3 and refused["error"]["code"] == -31503
        assert refused["error"]["data"] == {"maxInFlight": 1, "maxBacklog": 1}
        assert "max_in_flight=1" in refused["error"]["message"]
        assert [reply["id"] for reply in served] == [1, 2]
        assert session.started == [1, 2]
        tg.cancel_scope.cancel()


async def test_a_reused_id_is_refused_while_parked_and_parked_requests_end_with_the_session() -> None:
    peer, session = await asking(max_in_flight=1, max_backlog=4)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            await peer.send(call(1, "hold"))
            await peer.send(call(2, "quick"))
            await peer.send(call(2, "quick"))  # reuses a parked id
            refused = await peer.receive()
            assert refused["error"]["code"] == -32600 and "id" not in refused
            await peer.send(call(1, "quick"))  # reuses the running id
            refused = await peer.receive()
            assert refused["error"]["code"] == -32600 and "id" not in refused
            assert session.in_flight == 1 and session.backlog == 1
            session.close()  # the running request is cancelled; the parked one is refused as the reader stops
            await peer.transport.send.aclose()  # the input ends: the session's run returns
    assert session.started == [1]  # the parked request is not served by the ended session
    assert session.backlog == 0 and session.in_flight == 0


class Recording(ReplyRoute):
    """A reply route that keeps what it is sent and notes when its request is over."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.ended = anyio.Event()

    async def send(self, item: Outgoing, *, final: bool) -> None:
        self.sent.append(item.message)

    def request_ended(self) -> None:
        self.ended.set()


async def test_a_request_waiting_for_room_in_its_own_task_is_dropped_by_a_cancellation() -> None:
    """Defect (asyncio HTTP sessions): a request waiting for room in its own task (`serve_here`,
    past `max_in_flight`) was not dropped by a `notifications/cancelled` for its id, as a parked
    one is: it ran once room freed. Now it ends unanswered and nothing stays counted."""
    peer, session = await asking(max_in_flight=1)
    route = Recording()
    served: list[bool] = []
    waiting = anyio.Event()
    wait_for_room = session._wait_for_room

    async def noted_wait_for_room() -> None:
        waiting.set()
        await wait_for_room()

    session._wait_for_room = noted_wait_for_room

    async def here() -> None:
        served.append(await session.serve_here(wire.Request(2, "quick", None), TransportContext("t", reply=route)))

    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        with anyio.fail_after(5):  # a hang guard: every step is immediate
            await peer.send(call(1, "hold"))  # holds the only room
            await session.holding.wait()
            tg.start_soon(here)
            await waiting.wait()
            assert session.backlog == 1
            await peer.send(cancel(2))  # for the one waiting in its own task
            await peer.send(cancel(1))  # frees the room (read after the first: the drop came first)
            await route.ended.wait()
            await peer.send(call(3, "quick"))  # served once 1 is gone (max_in_flight=1)
            reply = await peer.receive()
            await session.drain()
        assert reply == {"jsonrpc": "2.0", "id": 3, "result": {"id": 3}}
        assert served == [True] and route.sent == []  # ended with no answer
        assert session.started == [1, 3]  # 2 never served
        assert session.in_flight == 0 and session.backlog == 0
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("routed", [False, True])
async def test_a_request_sent_after_the_session_closed_fails_at_once(routed: bool) -> None:
    """Defect: with a reply route (a handshake-era HTTP POST's), a request sent after the session
    closed opened a call that only its timeout ended (none: never). It fails at once with the
    `ConnectionClosed` a call on a closed session gets, nothing sent and nothing left pending."""
    _peer, session = await asking()
    route = Recording()
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        session.close()
        with anyio.fail_after(5), pytest.raises(ConnectionClosed):  # a hang guard: it fails at once
            await session.send_request("peer/question", None, timeout=None, route=route if routed else None)
        assert route.sent == [] and session.pending == 0
        tg.cancel_scope.cancel()
