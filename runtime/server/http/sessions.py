"""Streamable HTTP for the handshake era (2025-11-25 and before): sessions keyed by `Mcp-Session-Id`.

A POSTed `initialize` opens a session: one `ServerSession` whose transport is fed the session's
POSTed messages (each a `Frame` with the POST's `PostRoute` as its reply route; on asyncio, a
request of a running session is served in its POST's own task instead, `Session.serve_here`, since
that task waits for the answer anyway) and whose own outgoing stream (notifications and requests
unrelated to any request: list changes, resource updates) is the standalone GET stream. The id
(visible ASCII) comes back in the `Mcp-Session-Id` header of the initialize response, and every
later request must carry it: missing -> 400, unknown or ended -> 404. A session opened by an
authenticated principal is bound to it: a request of another principal (or of none) with its id
gets the same 404, as if it did not exist. Sessions are bounded in all (`max_sessions`) and per
authenticated principal (`max_sessions_per_principal`), so one principal cannot hold every session;
past a bound, `initialize` gets 503 with `Retry-After` (and `data.retryAfter`): the earliest a
session can have expired for idleness, and says how to free one of the principal's own (DELETE).
Notifications and responses POSTed get 202. `DELETE` ends the session. A dropped connection is not
a cancellation (the client sends `notifications/cancelled`): the stream goes on and can be resumed
with `GET` + `Last-Event-ID`, or is refused with 410 when the events after that id are no longer
kept (never resumed with a silent gap). Idle sessions (no request for `idle_timeout` seconds,
nothing open) are closed.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from ...auth.shared.principal import principal_of
from ...core.transport import Frame, Inbound, Outgoing, Transport, TransportContext
from ...protocol import wire
from ...protocol.errors import INVALID_REQUEST
from ..session import ServerSession
from .asgi import HttpResponse, LateWatch, Post, Receive, Timers, accepts, error_body, hold
from .events import EventStore, stream_of
from .streams import PostRoute, SseStream

if TYPE_CHECKING:
    from .. import Server

log = logging.getLogger("mcpgen.runtime.server.http")
SESSION_HEADER = "mcp-session-id"
INBOUND_BUFFER = 64  # POSTed messages waiting for the session's reader


class HttpSession:
    """One handshake-era session: a `ServerSession`, its streams, its in-flight POSTs."""

    def __init__(self, owner: HandshakeSessions, session_id: str, principal: str | None = None) -> None:
        self.owner = owner
        self.id = session_id
        self.principal = principal  # who opened it (authenticated): only they may use it
        self._feed, inbound = anyio.create_memory_object_stream[Inbound](INBOUND_BUFFER)
        self._out, self._out_recv = anyio.create_memory_object_stream[Outgoing](INBOUND_BUFFER)
        transport = Transport(inbound, self._out, owner.max_message_bytes, TransportContext("http"))
        self.session: ServerSession = ServerSession(owner.server, transport)
        self.standalone = SseStream(f"{session_id}/0", owner.store, owner.retry_ms)
        self.streams: dict[str, SseStream] = {}  # POST streams still running, by stream id
        self._numbers = itertools.count(1)
        self.busy = 0  # HTTP requests of this session being served now
        self.last_seen = time.monotonic()
        self.closed = False

    def new_stream(self) -> SseStream:
        stream = SseStream(f"{self.id}/{next(self._numbers)}", self.owner.store, self.owner.retry_ms)
        self.streams[stream.id] = stream  # until it ends; then only the event store knows it
        stream.on_end = self._forget
        return stream

    def _forget(self, stream: SseStream) -> None:
        self.streams.pop(stream.id, None)

    async def run(self) -> None:
        server = self.owner.server
        server.sessions.add(self.session)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump)
                await self.session.run()
                self._out.close()
        except Exception:  # one broken session must not take the endpoint down
            log.exception("HTTP session %s failed", self.id)
        finally:
            self.closed = True
            self._out.close()  # (again, when the session failed: nothing is sent after this)
            self._feed.close()
            server.sessions.discard(self.session)
            self.owner.remove(self)
            self.standalone.end_now()
            for stream in list(self.streams.values()):
                stream.end_now()
            if self.owner.store is not None:
                with anyio.CancelScope(shield=True):
                    await self.owner.store.forget(f"{self.id}/")

    async def _pump(self) -> None:
        """The session's own outgoing messages go to the standalone GET stream."""
        async with self._out_recv:
            async for item in self._out_recv:
                await self.standalone.emit(item.data)

    async def feed(self, item: Inbound) -> bool:
        try:
            await self._feed.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def close(self) -> None:
        """End the session: its id answers 404 from now on; in-flight requests are cancelled."""
        self.closed = True
        self.owner.remove(self)
        self._feed.close()
        self.session.close()  # now: its reader may be waiting for room, not reading the end of its feed


class HandshakeSessions:
    """The handshake-era side of one HTTP endpoint: its sessions and its POST/GET/DELETE handling."""

    def __init__(  # noqa: PLR0913  (keyword-only settings from HttpApp)
        self,
        server: Server,
        *,
        store: EventStore | None,
        retry_ms: int | None,
        keepalive: float | None,
        idle_timeout: float | None,
        max_sessions: int | None,
        max_message_bytes: int,
        max_sessions_per_principal: int | None = None,
    ) -> None:
        self.server = server
        self.store = store
        self.retry_ms = retry_ms
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_sessions_per_principal = max_sessions_per_principal
        self.max_message_bytes = max_message_bytes
        self.sessions: dict[str, HttpSession] = {}
        self.held: Counter[str] = Counter()  # open sessions per authenticated principal
        self.task_group: TaskGroup | None = None
        self.timers: Timers | None = None  # the request deadlines of the asyncio loop serving (None: trio)

    def remove(self, session: HttpSession) -> None:
        """Forget a session (once, whichever way it ended)."""
        if self.sessions.pop(session.id, None) is not None and session.principal is not None:
            self.held[session.principal] -= 1
            if self.held[session.principal] <= 0:
                del self.held[session.principal]

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def reap_interval(self) -> float | None:
        return min(self.idle_timeout / 4, 60.0) if self.idle_timeout is not None else None

    async def reap(self) -> None:
        """Close sessions idle for longer than `idle_timeout` (runs while the app runs)."""
        interval = self.reap_interval
        if interval is None:
            return
        while True:
            await anyio.sleep(interval)
            self.close_idle(time.monotonic())

    def close_idle(self, now: float) -> int:
        """Close the sessions idle at `now`; how many."""
        if self.idle_timeout is None:
            return 0
        idle = [s for s in self.sessions.values() if s.busy == 0 and now - s.last_seen > self.idle_timeout]
        for session in idle:
            session.close()
        return len(idle)

    def close_all(self) -> None:
        for session in list(self.sessions.values()):
            session.close()

    def end_streams(self) -> None:
        """End the standalone GET streams (shutdown): their clients reconnect elsewhere."""
        for session in self.sessions.values():
            session.standalone.end_now()

    # -- requests ----------------------------------------------------------------------------

    def _find(self, headers: dict[str, str], auth: Any) -> tuple[HttpSession | None, tuple[int, str] | None]:
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            return None, (400, "Bad Request: this request needs the Mcp-Session-Id header (initialize first)")
        found = self.sessions.get(session_id.strip())
        if found is None or found.closed or found.principal != principal_of(auth):
            return None, (404, "Session not found: it ended or never existed; initialize a new session")
        return found, None

    async def post(self, message: wire.Message, data: bytes, post: Post) -> None:
        headers, exchange = post.headers, post.exchange
        request_id = message.id if isinstance(message, (wire.Request, wire.Invalid)) else None
        if isinstance(message, wire.Invalid):
            if message.response_to is not None:  # an answer to our request that cannot be read: fail the request
                found_session, _ = self._find(headers, post.auth)
                if found_session is not None:
                    context = TransportContext("http", headers=headers, auth=post.auth, can_send_request=True)
                    await found_session.feed(Frame(data, context, decoded=message))
            await exchange.respond(400, error_body(request_id, message.code, message.message))
            return
        opening = isinstance(message, wire.Request) and message.method in self._session_methods
        if opening and SESSION_HEADER not in headers:
            found: HttpSession | None = await self._open(exchange, request_id, principal_of(post.auth))
            if found is None:
                return
        else:
            found, problem = self._find(headers, post.auth)
            if found is None:
                assert problem is not None
                await exchange.respond(problem[0], error_body(request_id, INVALID_REQUEST, problem[1]))
                return
            version = headers.get("mcp-protocol-version")
            if version is not None and not opening and not self._supported(version.strip()):
                text = f"Bad Request: unsupported MCP-Protocol-Version {version!r}"
                await exchange.respond(400, error_body(request_id, INVALID_REQUEST, text))
                return
        found.busy += 1
        found.last_seen = time.monotonic()
        try:
            await self._deliver(found, message, data, post, opening)
        finally:
            found.busy -= 1
            found.last_seen = time.monotonic()

    @functools.cached_property
    def _session_methods(self) -> frozenset[str]:
        return frozenset(r.session_method for r in self.server.eras.newest_first if r.session_method is not None)

    def _supported(self, version: str) -> bool:
        return version in self._session_versions

    @functools.cached_property
    def _session_versions(self) -> frozenset[str]:
        """The server's versions of a session era."""
        eras = self.server.eras
        return frozenset(v for v in self.server.versions if not eras.of(v).self_contained)

    async def _open(
        self, exchange: HttpResponse, request_id: wire.RequestId | None, principal: str | None
    ) -> HttpSession | None:
        if self.task_group is None:
            text = "the MCP app is not running: serve it with its ASGI lifespan (see Server.http_app)"
            await exchange.respond(500, error_body(request_id, INVALID_REQUEST, text))
            return None
        refused = self._full(principal)
        if refused is not None:
            text, retry_after = refused
            data: dict[str, Any] = {} if retry_after is None else {"retryAfter": retry_after}
            headers = [] if retry_after is None else [(b"retry-after", str(retry_after).encode())]
            await exchange.respond(503, error_body(request_id, INVALID_REQUEST, text, data or None), headers=headers)
            return None
        session = HttpSession(self, secrets.token_urlsafe(24), principal)
        self.sessions[session.id] = session
        if principal is not None:
            self.held[principal] += 1
        self.task_group.start_soon(session.run)
        exchange.headers.append((SESSION_HEADER.encode(), session.id.encode()))
        return session

    def _full(self, principal: str | None) -> tuple[str, int | None] | None:
        """Why a new session may not open now, and in how many seconds a retry can succeed at the
        earliest (None: sessions never expire by themselves; one must end first)."""
        per_principal = self.max_sessions_per_principal
        if principal is not None and per_principal is not None and self.held[principal] >= per_principal:
            retry_after = self._retry_after(s for s in self.sessions.values() if s.principal == principal)
            text = (
                f"Service Unavailable: this principal holds {self.held[principal]} sessions, the most one principal "
                "may hold; end one (DELETE with its Mcp-Session-Id)"
            )
        elif self.max_sessions is not None and len(self.sessions) >= self.max_sessions:
            retry_after = self._retry_after(self.sessions.values())
            text = f"Service Unavailable: the server holds {len(self.sessions)} sessions, the most it may"
        else:
            return None
        if retry_after is not None:
            return (
                f"{text}, or retry in {retry_after} s at the earliest, when an idle one can have expired",
                retry_after,
            )
        return f"{text}; sessions do not expire by themselves, so a retry succeeds only once one ends", None

    def _retry_after(self, sessions: Iterable[HttpSession]) -> int | None:
        """The earliest a retry can succeed, in seconds: when the first of `sessions` can have been
        closed for idleness (an idle one after what is left of its idle time, a busy one the whole
        idle time after it finishes; the reaper runs every `reap_interval`). None when sessions
        never expire by themselves."""
        if self.idle_timeout is None or self.reap_interval is None:
            return None
        now = time.monotonic()
        left = [s.last_seen + self.idle_timeout - now if s.busy == 0 else self.idle_timeout for s in sessions]
        if not left:
            return None
        return max(1, math.ceil(max(min(left), 0.0) + self.reap_interval))

    async def _deliver(
        self, session: HttpSession, message: wire.Message, data: bytes, post: Post, opening: bool
    ) -> None:
        exchange = post.exchange
        if not isinstance(message, wire.Request):
            context = TransportContext("http", headers=post.headers, auth=post.auth, can_send_request=True)
            if not await session.feed(Frame(data, context, decoded=message)):
                await exchange.respond(404, error_body(None, INVALID_REQUEST, "Session not found: it ended"))
                return
            await exchange.respond(202)
            return

        on_final: Callable[[Outgoing], None] | None = None
        if opening:

            def refused_opening(final: Outgoing) -> None:
                if final.is_error:  # a refused initialize opens no session
                    session.close()

            on_final = refused_opening

        route = PostRoute(exchange, session.new_stream, on_final)
        context = TransportContext("http", headers=post.headers, auth=post.auth, can_send_request=True, reply=route)
        if self.timers is not None and not opening:
            await self._serve_here(session, message, context, route, post)
            return
        if not await session.feed(Frame(data, context, decoded=message)):
            await exchange.respond(404, error_body(message.id, INVALID_REQUEST, "Session not found: it ended"))
            return
        completed = await hold(post.receive, route.released, self.keepalive, route.keepalive, exchange, self.timers)
        await route.finish(completed)

    async def _serve_here(
        self, session: HttpSession, request: wire.Request, context: TransportContext, route: PostRoute, post: Post
    ) -> None:
        """On asyncio, a request of a running session is served in the POST's own task (its
        answer is what the task waits for): no trip through the session's reader, no task of its
        own. The client hanging up is still not a cancellation: the stream is detached (later
        events are only stored, for a resumption) and the handler goes on."""
        assert self.timers is not None
        left = False

        def detach() -> None:
            nonlocal left
            left = True
            if route.stream is not None:
                route.stream.detach(route.exchange)

        watcher = LateWatch(
            post.receive, route.is_released, detach, self.keepalive, route.keepalive, post.exchange, self.timers
        )
        try:
            served = await session.session.serve_here(request, context)
        finally:
            watcher.stop()
        if not served:
            await post.exchange.respond(404, error_body(request.id, INVALID_REQUEST, "Session not found: it ended"))
            return
        await route.finish(not left)

    async def get(self, headers: dict[str, str], exchange: HttpResponse, receive: Receive, auth: Any = None) -> None:
        if not accepts(headers.get("accept"), "text/event-stream"):
            await exchange.respond(406, error_body(None, INVALID_REQUEST, "GET needs Accept: text/event-stream"))
            return
        session, problem = self._find(headers, auth)
        if session is None:
            assert problem is not None
            await exchange.respond(problem[0], error_body(None, INVALID_REQUEST, problem[1]))
            return
        last = headers.get("last-event-id")
        stream, after = session.standalone, None
        if last is not None:
            last = last.strip()
            stream_id = stream_of(last)
            if not stream_id.startswith(f"{session.id}/"):
                await exchange.respond(400, error_body(None, INVALID_REQUEST, "Last-Event-ID of another session"))
                return
            if stream_id != session.standalone.id:
                stream = session.streams.get(stream_id) or SseStream(stream_id, self.store, None, ended=True)
            after = last
        elif stream.attached:
            await exchange.respond(409, error_body(None, INVALID_REQUEST, "this session has a GET stream open"))
            return
        released = anyio.Event()
        session.busy += 1
        try:
            if not await stream.attach(exchange, released, after):
                text = (
                    f"Gone: the events after {after!r} are no longer kept (the event store holds the last events of "
                    "each stream), so this stream cannot be resumed without losing some"
                )
                await exchange.respond(410, error_body(None, INVALID_REQUEST, text, {"lastEventId": after}))
                return
            completed = await hold(receive, released, self.keepalive, stream.keepalive, exchange, self.timers)
            async with stream.lock:
                if not completed:
                    stream.detach(exchange)
                else:
                    await exchange.end()
        finally:
            session.busy -= 1
            session.last_seen = time.monotonic()

    async def delete(self, headers: dict[str, str], exchange: HttpResponse, auth: Any = None) -> None:
        session, problem = self._find(headers, auth)
        if session is None:
            assert problem is not None
            await exchange.respond(problem[0], error_body(None, INVALID_REQUEST, problem[1]))
            return
        session.close()
        await exchange.respond(200)
