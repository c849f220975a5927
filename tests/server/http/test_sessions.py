"""The handshake era (2025-11-25) over Streamable HTTP: sessions, SSE streams, resumption."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcpgen.runtime import RequestContext, Server
from mcpgen.runtime.protocol.input_requests import sample
from mcpgen.runtime.server.http.app import close_sse_stream
from support.asgi_driver import V25, AsgiClient, Reply, asgi_client, request
from support.leaks import no_unclosed_streams
from support.named_tokens import as_user, protection

pytestmark = pytest.mark.anyio
INIT = {"protocolVersion": V25, "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "1"}}


def make_server() -> Server:
    server = Server("legacy-test", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def slow(ctx: RequestContext) -> str:
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool()
    async def think(ctx: RequestContext, question: str) -> str:
        reply = ctx.input_response("answer")
        if reply is None:
            return ctx.input_required(answer=sample([question], 10))
        return f"model: {reply.content.text}"

    @server.tool()
    async def poll(ctx: RequestContext) -> str:
        await ctx.info("before")
        assert await close_sse_stream(ctx)
        await ctx.info("after")
        return "polled"

    return server


async def open_session(client: AsgiClient) -> str:
    reply = await client.post(request(0, "initialize", INIT), {"mcp-protocol-version": V25, "mcp-method": "initialize"})
    assert reply.status == 200
    session_id = reply.headers["mcp-session-id"]
    assert session_id and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert (await reply.json())["result"]["protocolVersion"] == V25
    ack = await client.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session(session_id))
    assert ack.status == 202 and await ack.read() == b""
    return session_id


def session(session_id: str, **more: str) -> dict[str, str]:
    return {"mcp-session-id": session_id, "mcp-protocol-version": V25, **more}


async def call(client: AsgiClient, session_id: str, id: Any, name: str, arguments: dict[str, Any]) -> Reply:
    return await client.post(request(id, "tools/call", {"name": name, "arguments": arguments}), session(session_id))


async def test_a_session_serves_calls_and_ends_with_delete() -> None:
    async with asgi_client(make_server().http_app()) as client:
        sid = await open_session(client)
        reply = await call(client, sid, 1, "add", {"a": 1, "b": 2})
        assert reply.status == 200 and (await reply.json())["result"]["structuredContent"] == {"result": 3}
        missing = await client.post(request(2, "tools/list"), {"mcp-protocol-version": V25})
        assert missing.status == 400 and (await missing.json())["id"] == 2
        unknown = await client.post(request(3, "tools/list"), session("nope"))
        assert unknown.status == 404
        bad_version = await client.post(
            request(4, "tools/list"), session(sid, **{"mcp-protocol-version": "1999-01-01"})
        )
        assert bad_version.status == 400
        deleted = await client.send("DELETE", None, {"mcp-session-id": sid})
        assert deleted.status == 200
        after = await call(client, sid, 5, "add", {"a": 1, "b": 2})
        assert after.status == 404
        assert (await client.send("DELETE", None, {"mcp-session-id": sid})).status == 404


async def test_related_notifications_make_an_sse_stream_with_a_priming_event() -> None:
    app = make_server().http_app(retry_ms=250)
    async with asgi_client(app) as client:
        sid = await open_session(client)
        params = {"name": "slow", "arguments": {}, "_meta": {"progressToken": "t"}}
        reply = await client.post(request(1, "tools/call", params), session(sid))
        assert reply.sse
        events = [e async for e in reply.events()]
        priming = events[0]
        assert priming.id and priming.retry == 250 and priming.data == ""
        assert [e.json().get("method") for e in events[1:]] == ["notifications/progress"] * 2 + [None]
        assert events[-1].json()["result"]["content"][0]["text"] == "done"
        assert len({e.id for e in events}) == len(events), "event ids are unique"
        assert not app.sessions.sessions[sid].streams, "a finished stream is only in the event store"


async def test_server_requests_travel_on_the_post_stream_and_answers_come_back_as_posts() -> None:
    async with asgi_client(make_server().http_app()) as client:
        sid = await open_session(client)
        reply = await call(client, sid, 1, "think", {"question": "why?"})
        events = reply.events()
        await anext(events)  # priming
        asked = (await anext(events)).json()
        assert asked["method"] == "sampling/createMessage"
        answer = {"role": "assistant", "content": {"type": "text", "text": "because"}, "model": "m"}
        ack = await client.post({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, session(sid))
        assert ack.status == 202
        final = (await anext(events)).json()
        assert final["id"] == 1 and final["result"]["content"][0]["text"] == "model: because"


async def test_an_unreadable_answer_posted_fails_the_servers_request() -> None:
    """Defect: a POSTed answer that is not valid JSON (`NaN`) was refused with 400 and never reached
    the session, so the server's request (and the call that made it) waited for ever. The reason
    reaches the client: it is about the client's own answer, not the server (no error id)."""
    async with asgi_client(make_server().http_app()) as client:
        sid = await open_session(client)
        reply = await call(client, sid, 1, "think", {"question": "why?"})
        events = reply.events()
        await anext(events)  # priming
        asked = (await anext(events)).json()
        damaged = b'{"jsonrpc": "2.0", "id": %d, "result": {"role": "assistant", "content": NaN}}' % asked["id"]
        refused = await client.post(damaged, session(sid))
        assert refused.status == 400 and (await refused.json())["error"]["code"] == -32700
        with anyio.fail_after(30):  # a hang guard: the answer comes at once
            final = (await anext(events)).json()
        assert final["id"] == 1 and "could not be read" in str(final.get("result", final.get("error")))
        assert "error id" not in str(final)


async def test_the_standalone_get_stream_carries_list_changes_and_is_unique() -> None:
    server = make_server()
    async with asgi_client(server.http_app()) as client:
        sid = await open_session(client)
        stream = await client.send("GET", None, session(sid), accept="text/event-stream")
        assert stream.status == 200 and stream.sse
        events = stream.events()
        assert (await anext(events)).data == ""  # priming
        second = await client.send("GET", None, session(sid), accept="text/event-stream")
        assert second.status == 409
        server.add_tool(lambda: "x", name="late")
        change = await anext(events)
        assert change.json()["method"] == "notifications/tools/list_changed"
        not_sse = await client.send("GET", None, session(sid), accept="application/json")
        assert not_sse.status == 406


async def test_a_closed_connection_is_resumed_with_last_event_id() -> None:
    async with asgi_client(make_server().http_app()) as client:
        sid = await open_session(client)
        reply = await call(client, sid, 1, "poll", {})
        seen = [e async for e in reply.events()]  # the server closes it after "before"
        assert [e.json()["params"]["data"] for e in seen if e.data] == ["before"]
        last = seen[-1].id
        assert last is not None
        resumed = await client.send("GET", None, session(sid, **{"last-event-id": last}), accept="text/event-stream")
        rest = [e.json() async for e in resumed.events() if e.data]
        assert rest[0]["params"]["data"] == "after"
        assert rest[-1]["id"] == 1 and rest[-1]["result"]["content"][0]["text"] == "polled"
        other = await client.send(
            "GET", None, session(sid, **{"last-event-id": "elsewhere/1#1"}), accept="text/event-stream"
        )
        assert other.status == 400


async def test_a_dropped_connection_is_not_a_cancellation() -> None:
    server = make_server()
    go, finished = anyio.Event(), anyio.Event()

    @server.tool()
    async def waits(ctx: RequestContext) -> str:
        await ctx.info("started")
        await go.wait()
        await ctx.info("resumed")
        finished.set()
        return "finished"

    async with asgi_client(server.http_app()) as client:
        sid = await open_session(client)
        reply = await call(client, sid, 1, "waits", {})
        events = reply.events()
        await anext(events)
        started = await anext(events)
        reply.disconnect()
        go.set()
        await finished.wait()
        resumed = await client.send(
            "GET", None, session(sid, **{"last-event-id": started.id or ""}), accept="text/event-stream"
        )
        rest = [e.json() async for e in resumed.events() if e.data]
        assert rest[-1]["result"]["content"][0]["text"] == "finished"


async def test_a_session_leaves_no_stream_unclosed() -> None:
    """Defect: a handshake-era session's input stream was left to the garbage collector, unclosed
    (anyio's ResourceWarning, seen in a later test)."""
    with no_unclosed_streams():
        async with asgi_client(make_server().http_app()) as client:
            sid = await open_session(client)
            assert (await call(client, sid, 1, "add", {"a": 1, "b": 2})).status == 200
            assert (await client.send("DELETE", None, {"mcp-session-id": sid})).status == 200


async def test_posts_waiting_for_room_all_get_their_answers() -> None:
    """Past the session's `max_in_flight`, every POST waiting for room is served once requests
    finish (on asyncio they wait in their own tasks: one waiter must not strand another)."""
    server = make_server()
    go = anyio.Event()

    @server.tool()
    async def gated(n: int) -> int:
        await go.wait()
        return n

    app = server.http_app()
    async with asgi_client(app) as client:
        sid = await open_session(client)
        app.sessions.sessions[sid].session.max_in_flight = 1
        answers: dict[int, Any] = {}

        async def calling(n: int) -> None:
            reply = await call(client, sid, n, "gated", {"n": n})
            answers[n] = (await reply.json())["result"]["structuredContent"]["result"]

        with anyio.fail_after(30):  # a hang guard: a stranded waiter never answers
            async with anyio.create_task_group() as tg:
                for n in range(1, 5):
                    tg.start_soon(calling, n)
                await wait_for(lambda: app.sessions.sessions[sid].session.in_flight == 1)
                for _ in range(10):  # the other three reach their wait for room
                    await anyio.sleep(0)
                go.set()
        assert answers == {1: 1, 2: 2, 3: 3, 4: 4}


async def test_a_post_waiting_for_room_when_its_session_is_deleted_gets_404_and_nothing_stays_in_flight(
    anyio_backend: str,
) -> None:
    """DELETE while a POST waits for room past `max_in_flight`: the running request is cancelled,
    the waiting one gets the 404 of a request arriving after the end (it is not served by the ended
    session), and the session counts nothing in flight."""
    server = make_server()
    started = anyio.Event()

    @server.tool()
    async def blocked() -> str:
        started.set()
        await anyio.Event().wait()  # until cancelled
        return "never"

    app = server.http_app()
    async with asgi_client(app) as client:
        sid = await open_session(client)
        inner = app.sessions.sessions[sid].session
        inner.max_in_flight = 1
        waiting = anyio.Event()
        wait_for_room = inner._wait_for_room

        async def noted_wait_for_room() -> None:
            waiting.set()
            await wait_for_room()

        inner._wait_for_room = noted_wait_for_room  # type: ignore[method-assign]
        replies: dict[str, Reply] = {}

        async def posting(name: str, id: int) -> None:
            replies[name] = await call(client, sid, id, name, {"a": 1, "b": 2} if name == "add" else {})

        with anyio.fail_after(30):  # a hang guard: on failure a request stays in flight, never answered
            async with anyio.create_task_group() as tg:
                tg.start_soon(posting, "blocked", 1)
                await started.wait()
                tg.start_soon(posting, "add", 2)
                if anyio_backend == "asyncio":  # the POST waits for room in its own task
                    await waiting.wait()
                else:  # the session's reader parks it (and reads on)
                    await wait_for(lambda: inner.backlog == 1)
                assert (await client.send("DELETE", None, {"mcp-session-id": sid})).status == 200
            after = await call(client, sid, 3, "add", {"a": 1, "b": 2})  # a request coming after the end
            for reply, id in ((replies["add"], 2), (after, 3)):
                assert reply.status == 404
                error = await reply.json()
                assert error["id"] == id and error["error"]["code"] == -32600
            assert replies["blocked"].status == 200 and await replies["blocked"].read() == b""  # cancelled: no answer
            assert inner.closed and inner.in_flight == 0


async def test_two_posts_waiting_for_room_with_one_id_are_not_both_served(anyio_backend: str) -> None:
    """Two POSTs of one request id waiting for room: the id is checked once there is room, so
    the second to get room while the first runs is refused as a reuse (not served beside it,
    answered with the same id and counted once). (On trio the session's reader takes them in
    turn: it parks the first and refuses the second as a reuse of a parked id.)"""
    server = make_server()
    gates = {n: anyio.Event() for n in (1, 2, 5, 6)}
    entered: set[int] = set()
    answers: dict[int, Any] = {}
    changed = [anyio.Event()]

    def note() -> None:
        changed[0].set()
        changed[0] = anyio.Event()

    async def until(condition: Any) -> None:
        while not condition():
            await changed[0].wait()

    @server.tool()
    async def gated(n: int) -> int:
        entered.add(n)
        note()
        await gates[n].wait()
        return n

    app = server.http_app()
    async with asgi_client(app) as client:
        sid = await open_session(client)
        inner = app.sessions.sessions[sid].session
        inner.max_in_flight = 2
        waiters = 0
        wait_for_room = inner._wait_for_room

        async def noted_wait_for_room() -> None:
            nonlocal waiters
            waiters += 1
            note()
            await wait_for_room()

        inner._wait_for_room = noted_wait_for_room  # type: ignore[method-assign]

        async def calling(id: int, n: int) -> None:
            answers[n] = await (await call(client, sid, id, "gated", {"n": n})).json()
            note()

        with anyio.fail_after(30):  # a hang guard
            async with anyio.create_task_group() as tg:
                for n in (1, 2):
                    tg.start_soon(calling, n, n)
                    await until(lambda n=n: n in entered)  # type: ignore[misc]
                tg.start_soon(calling, 5, 5)
                tg.start_soon(calling, 5, 6)
                if anyio_backend == "asyncio":  # both POSTs wait for room in their own tasks
                    await until(lambda: waiters == 2)
                else:  # the reader parked the first and refused the second at once (its id is parked)
                    await until(lambda: len(answers) == 1)
                gates[1].set()  # room for one of them
                await until(lambda: 5 in entered or 6 in entered)
                first = 5 if 5 in entered else 6
                second = 11 - first
                gates[2].set()  # room for the other, while the first runs
                await until(lambda: second in answers or second in entered)
                gates[first].set()
                gates[second].set()
        assert "id" not in answers[second] and answers[second]["error"]["code"] == -32600
        assert "already in use" in answers[second]["error"]["message"]
        assert answers[first]["result"]["structuredContent"]["result"] == first
        assert inner.in_flight == 0


async def test_a_post_waiting_for_room_is_dropped_by_a_cancellation_for_its_id() -> None:
    """Defect (asyncio): a POST waiting for room past `max_in_flight` in its own task was not
    dropped by a `notifications/cancelled` for its id (a request the reader parks is): it ran once
    room freed. Now it is answered as a cancelled request is (no result) and nothing stays counted."""
    server = make_server()
    started = anyio.Event()
    ran: list[str] = []

    @server.tool()
    async def blocked() -> str:
        started.set()
        await anyio.Event().wait()  # until cancelled
        return "never"

    @server.tool()
    def counted() -> str:
        ran.append("counted")
        return "ran"

    app = server.http_app()
    async with asgi_client(app) as client:
        sid = await open_session(client)
        inner = app.sessions.sessions[sid].session
        inner.max_in_flight = 1
        waiting = anyio.Event()
        wait_for_room, park = inner._wait_for_room, inner._park

        async def noted_wait_for_room() -> None:  # asyncio: the POST waits for room in its own task
            waiting.set()
            await wait_for_room()

        async def noted_park(*args: Any) -> None:  # trio: the session's reader parks it
            await park(*args)
            waiting.set()

        inner._wait_for_room = noted_wait_for_room  # type: ignore[method-assign]
        inner._park = noted_park  # type: ignore[method-assign]
        replies: dict[int, Reply] = {}

        async def posting(id: int, name: str) -> None:
            replies[id] = await call(client, sid, id, name, {})

        def cancelled(id: int) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}

        with anyio.fail_after(30):  # a hang guard
            async with anyio.create_task_group() as tg:
                tg.start_soon(posting, 1, "blocked")
                await started.wait()
                tg.start_soon(posting, 2, "counted")
                await waiting.wait()
                assert inner.backlog == 1
                for id in (2, 1):  # read in this order: 2 is dropped before 1's end frees the room
                    assert (await client.post(cancelled(id), session(sid))).status == 202
            await inner.drain()
        for id in (1, 2):  # both cancelled: no answer
            assert replies[id].status == 200 and await replies[id].read() == b""
        assert ran == []
        assert inner.in_flight == 0 and inner.backlog == 0


async def wait_for(condition: Any) -> None:
    while not condition():
        await anyio.sleep(0.001)


def resumable_server() -> tuple[Server, anyio.Event, anyio.Event, anyio.Event]:
    """A server whose `waits` tool logs once, waits for `go`, logs six times more (then sets
    `logged`), waits for `finish`, and answers; `noisy` logs `n` times."""
    server = make_server()
    go, logged, finish = anyio.Event(), anyio.Event(), anyio.Event()

    @server.tool()
    async def waits(ctx: RequestContext) -> str:
        await ctx.info("started")
        await go.wait()
        for n in range(6):
            await ctx.info(f"step {n}")
        logged.set()
        await finish.wait()
        return "finished"

    @server.tool()
    async def noisy(ctx: RequestContext, n: int) -> str:
        for i in range(n):
            await ctx.info(f"noise {i}")
        return "noisy"

    return server, go, logged, finish


async def detached_stream(client: AsgiClient, sid: str, go: anyio.Event) -> str:
    """Call `waits`, keep its first event's id, hang up, and let it go on without us."""
    reply = await call(client, sid, 1, "waits", {})
    events = reply.events()
    await anext(events)  # priming
    started = await anext(events)
    assert started.id is not None and started.json()["params"]["data"] == "started"
    reply.disconnect()
    go.set()
    return started.id


async def test_another_sessions_traffic_never_evicts_a_streams_events() -> None:
    """Defect: the event store kept the last 10,000 events of all sessions together: after another
    session sent 12,000, resuming lost six events with no sign of it."""
    server, go, _, finish = resumable_server()
    async with asgi_client(server.http_app()) as client:
        sid = await open_session(client)
        last = await detached_stream(client, sid, go)
        other = await open_session(client)
        noisy = await call(client, other, 1, "noisy", {"n": 12_000})
        assert [m for m in await noisy.messages() if "id" in m][-1]["result"]["content"][0]["text"] == "noisy"
        finish.set()
        resumed = await client.send("GET", None, session(sid, **{"last-event-id": last}), accept="text/event-stream")
        assert resumed.status == 200
        rest = [e.json() async for e in resumed.events() if e.data]
        assert [m["params"]["data"] for m in rest[:-1]] == [f"step {n}" for n in range(6)]
        assert rest[-1]["result"]["content"][0]["text"] == "finished"


async def test_a_resumption_from_events_no_longer_kept_is_refused() -> None:
    from mcpgen.runtime.server.http.events import MemoryEventStore

    server, go, logged, finish = resumable_server()
    async with asgi_client(server.http_app(event_store=MemoryEventStore(per_stream=3))) as client:
        sid = await open_session(client)
        last = await detached_stream(client, sid, go)
        await logged.wait()  # the stream's own later events pushed its first ones out
        resumed = await client.send("GET", None, session(sid, **{"last-event-id": last}), accept="text/event-stream")
        assert resumed.status == 410
        refusal = await resumed.json()
        assert refusal["error"]["data"] == {"lastEventId": last} and "no longer kept" in refusal["error"]["message"]
        finish.set()


async def test_notifications_cancelled_ends_the_post_without_a_response() -> None:
    server = make_server()
    started, stopped = anyio.Event(), anyio.Event()

    @server.tool()
    async def forever() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"

    async with asgi_client(server.http_app()) as client:
        sid = await open_session(client)
        replies: list[Reply] = []
        answered = anyio.Event()

        async def calling() -> None:  # the POST gets no answer before the cancellation
            replies.append(await call(client, sid, 9, "forever", {}))
            answered.set()

        client.tg.start_soon(calling)
        await started.wait()
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
        assert (await client.post(cancel, session(sid))).status == 202
        await stopped.wait()
        await answered.wait()
        assert replies[0].sse and await replies[0].messages() == []


async def test_idle_sessions_are_closed() -> None:
    server = make_server()
    app = server.http_app(session_idle_timeout=60)
    async with asgi_client(app) as client:
        sid = await open_session(client)
        with anyio.fail_after(5):  # the app finishes the POSTs' bookkeeping after they were answered
            while app.sessions.sessions[sid].busy:
                await anyio.sleep(0)
        assert app.sessions.close_idle(time.monotonic() + 59) == 0  # not idle long enough
        assert app.sessions.close_idle(time.monotonic() + 61) == 1
        assert sid not in app.sessions.sessions
        assert (await call(client, sid, 1, "add", {"a": 1, "b": 1})).status == 404


async def test_a_refused_initialize_keeps_no_session_and_sessions_are_bounded() -> None:
    app = make_server().http_app(max_sessions=1)
    async with asgi_client(app) as client:
        bad = await client.post(request(0, "initialize", {"protocolVersion": V25}))
        assert "error" in await bad.json()
        assert not app.sessions.sessions
        await open_session(client)
        full = await client.post(request(0, "initialize", INIT))
        assert full.status == 503


async def test_one_principal_cannot_hold_every_session() -> None:
    """Defect: the session cap was global: one principal holding `max_sessions` sessions made every
    other principal's initialize 503 until they idled out (30 minutes by default)."""
    app = make_server().http_app(auth=protection(), max_sessions=10, max_sessions_per_principal=2)
    opening = {"mcp-protocol-version": V25}
    async with asgi_client(app) as client:
        for _ in range(2):
            assert (await client.post(request(0, "initialize", INIT), {**opening, **as_user("alice")})).status == 200
        full = await client.post(request(0, "initialize", INIT), {**opening, **as_user("alice")})
        assert full.status == 503
        error = (await full.json())["error"]
        assert "this principal holds 2 sessions" in error["message"] and "DELETE" in error["message"]
        assert int(full.headers["retry-after"]) == error["data"]["retryAfter"] > 0
        other = await client.post(request(0, "initialize", INIT), {**opening, **as_user("bob")})
        assert other.status == 200, "another principal still gets a session"


async def test_a_full_server_says_when_a_retry_can_succeed() -> None:
    app = make_server().http_app(max_sessions=1, session_idle_timeout=120)
    async with asgi_client(app) as client:
        await open_session(client)
        full = await client.post(request(0, "initialize", INIT), {"mcp-protocol-version": V25})
        assert full.status == 503
        retry_after = int(full.headers["retry-after"])
        assert 0 < retry_after <= 120 + 30  # the idle timeout, plus one round of the reaper at most
        assert f"retry in {retry_after} s" in (await full.json())["error"]["message"]


async def test_without_the_lifespan_sessions_cannot_open_but_modern_requests_work() -> None:
    async with asgi_client(make_server().http_app(), run=False) as client:
        reply = await client.post(request(0, "initialize", INIT))
        assert reply.status == 500 and "lifespan" in (await reply.json())["error"]["message"]
