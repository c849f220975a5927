"""Our calls and the peer's requests through the session core, on asyncio and trio: deadlines
fire and clean up (also while sending waits for room, and moved by an authorization), a cancelled
caller tells the peer, the end of the connection fails waiting calls, and a cancelled session
cancels the requests it runs."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import pytest
from mcpgen.runtime.core.memory import memory_pair
from mcpgen.runtime.core.session import IncomingRequest, Session
from mcpgen.runtime.core.transport import Authorizing, Frame, Outgoing, ReplyRoute, Transport
from mcpgen.runtime.protocol.errors import ConnectionClosed, RequestTimeout

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.anyio

S = TypeVar("S", bound=Session)


async def read(peer: Transport) -> dict[str, Any]:
    with anyio.fail_after(5):
        item = await peer.receive.receive()
    assert isinstance(item, Frame)
    message = json.loads(item.data)
    assert isinstance(message, dict)
    return message


async def send(peer: Transport, message: dict[str, Any]) -> None:
    await peer.send.send(Frame(json.dumps(message).encode()))


async def answer(peer: Transport, request: dict[str, Any], **reply: Any) -> None:
    """The peer answers `request` with `reply` (`result=...` or `error=...`)."""
    await send(peer, {"jsonrpc": "2.0", "id": request["id"], **reply})


def session_and_peer(kind: type[S], *, buffer: float = math.inf) -> tuple[S, Transport]:
    """A session of `kind` on one end of a memory pair, and the other end, for the test to play the peer."""
    ours, peer = memory_pair(buffer=buffer)
    return kind(ours), peer


async def ping_noting_timeout(session: Session, timeout: float, outcomes: list[str]) -> None:
    """Call `ping` with `timeout`, noting "timeout" in `outcomes` when it times out."""
    try:
        await session.send_request("ping", timeout=timeout)
    except RequestTimeout:
        outcomes.append("timeout")


@asynccontextmanager
async def running(session: Session) -> AsyncIterator[anyio.abc.TaskGroup]:
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        yield tg
        tg.cancel_scope.cancel()


async def test_a_call_that_times_out_tells_the_peer_and_is_forgotten() -> None:
    session, peer = session_and_peer(Session)
    async with running(session):
        with pytest.raises(RequestTimeout, match=r"ping timed out after 0\.05 s"):
            await session.send_request("ping", timeout=0.05)
        assert session.pending == 0
        request = await read(peer)
        assert request["method"] == "ping"
        cancelled = await read(peer)
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"]["requestId"] == request["id"]
        # A late answer to the forgotten call is ignored, and the next call is answered.
        await answer(peer, request, result={})
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send_request, "ping")
            second = await read(peer)
            await answer(peer, second, result={"n": 2})
        assert session.pending == 0


async def test_the_answer_comes_back_with_its_result_or_error() -> None:
    session, peer = session_and_peer(Session)
    results: list[Any] = []

    async def call() -> None:
        results.append(await session.send_request("ping", {"a": 1}))
        try:
            await session.send_request("ping")
        except Exception as exc:
            results.append(exc)

    async with running(session), anyio.create_task_group() as tg:
        tg.start_soon(call)
        first = await read(peer)
        assert first["params"] == {"a": 1}
        await answer(peer, first, result={"ok": True})
        second = await read(peer)
        await answer(peer, second, error={"code": -32000, "message": "nope"})
    assert results[0] == {"ok": True}
    assert getattr(results[1], "code", None) == -32000


class Forward(ReplyRoute):
    """A reply route (as an HTTP exchange has): what is sent on it goes to the peer, and is counted."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.sent = 0

    async def send(self, item: Outgoing, *, final: bool) -> None:
        self.sent += 1
        await self.transport.send.send(item)


async def test_a_call_on_a_reply_route_goes_that_way_and_is_answered() -> None:
    session, peer = session_and_peer(Session)
    assert session.transport is not None
    route = Forward(session.transport)
    results: list[Any] = []

    async def call() -> None:
        results.append(await session.send_request("elicitation/create", {"q": 1}, route=route))

    async with running(session), anyio.create_task_group() as tg:
        tg.start_soon(call)
        request = await read(peer)
        assert request["method"] == "elicitation/create" and route.sent == 1
        await answer(peer, request, result={"a": 2})
    assert results == [{"a": 2}]
    assert session.pending == 0


async def test_the_deadline_covers_a_send_that_waits_for_room() -> None:
    session, peer = session_and_peer(Session, buffer=1)  # the peer never reads: the second request finds no room
    outcomes: list[str] = []
    async with running(session):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ping_noting_timeout, session, 0.1, outcomes)
            tg.start_soon(ping_noting_timeout, session, 0.1, outcomes)
        assert outcomes == ["timeout", "timeout"]
        assert session.pending == 0
    del peer


async def test_an_authorization_stops_the_deadline_and_restarts_it_in_full() -> None:
    session, peer = session_and_peer(Session)
    outcome: list[str] = []
    async with running(session), anyio.create_task_group() as tg:
        tg.start_soon(ping_noting_timeout, session, 0.5, outcome)
        request = await read(peer)
        (pending,) = session.calls.pending.values()
        assert pending.limit == 0.5 and pending.deadline.deadline < math.inf
        held = Authorizing(request["id"], True)
        await peer.send.send(held)
        with anyio.fail_after(5):
            await held.applied.wait()
        assert pending.authorizing and pending.deadline.deadline == math.inf
        await anyio.sleep(0.7)  # past the deadline the call had: it waits on, held up by the authorization
        assert outcome == [] and session.pending == 1
        resumed = Authorizing(request["id"], False)
        await peer.send.send(resumed)
        with anyio.fail_after(5):
            await resumed.applied.wait()
        assert pending.resumed_at is not None
        assert pending.deadline.deadline == pending.resumed_at + 0.5
    assert outcome == ["timeout"]  # the deadline, restarted in full, passed


async def test_a_cancelled_caller_tells_the_peer() -> None:
    session, peer = session_and_peer(Session)
    async with running(session):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.send_request, "ping")
                request = await read(peer)
                scope.cancel()
        assert scope.cancelled_caught
        cancelled = await read(peer)
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"] == {"requestId": request["id"], "reason": "cancelled by the caller"}
        assert session.pending == 0


async def test_the_end_of_the_connection_fails_a_waiting_call() -> None:
    session, peer = session_and_peer(Session)
    failures: list[BaseException] = []

    async def call() -> None:
        try:
            await session.send_request("ping")
        except ConnectionClosed as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        tg.start_soon(call)
        await read(peer)
        await peer.aclose()
    assert len(failures) == 1 and "closed before ping was answered" in str(failures[0])
    with pytest.raises(ConnectionClosed):
        await session.send_request("ping")


class Waiting(Session):
    """Serves every request by waiting until cancelled (and says so)."""

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.started = anyio.Event()
        self.stopped: list[Any] = []

    async def handle_request(self, request: IncomingRequest) -> Any:
        try:
            self.started.set()
            await anyio.sleep_forever()
        finally:
            self.stopped.append(request.id)


async def test_a_cancelled_session_cancels_the_requests_it_runs() -> None:
    session, peer = session_and_peer(Waiting)
    async with anyio.create_task_group() as tg:
        await serving_a_ping(tg, session, peer)
        tg.cancel_scope.cancel()
    assert session.stopped == [1]
    assert session.in_flight == 0


async def test_a_request_still_running_at_the_end_of_the_stream_is_cancelled_without_an_answer() -> None:
    session, peer = session_and_peer(Waiting)
    async with anyio.create_task_group() as tg:
        await serving_a_ping(tg, session, peer)
        await peer.send.aclose()  # the end of the stream: run() returns once the request is over
    assert session.stopped == [1]
    assert session.in_flight == 0


async def serving_a_ping(tg: anyio.abc.TaskGroup, session: Waiting, peer: Transport) -> None:
    """Run `session` in `tg` and have the peer send it a `ping` (id 1), which it starts serving."""
    await tg.start(session.run)
    await send(peer, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    with anyio.fail_after(5):
        await session.started.wait()


class Failing(Session):
    """A session whose reply route breaks: a bug, which fails the session as a task group would."""

    async def _send_reply(self, incoming: IncomingRequest, reply: dict[str, Any]) -> None:
        raise RuntimeError("broken reply")


async def test_a_request_task_that_fails_fails_the_session() -> None:
    session, peer = session_and_peer(Failing)
    with pytest.raises(BaseExceptionGroup) as caught:
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            await send(peer, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            await anyio.sleep_forever()
    assert caught.group_contains(RuntimeError, match="broken reply")
