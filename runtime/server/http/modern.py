"""Streamable HTTP for the modern era (2026-07-28 on): every POST is one self-contained request.

There is no session: one shared `ServerSession` (without a transport) serves each POST's request
in the ASGI task (`Session.serve`). The request is routed first (`ServerSession.route`), so a
refusal gets its HTTP status (400, 404) before anything is sent; then its handler runs with a
`ModernRoute` as the reply route:

- the response is `application/json` (status from the JSON-RPC error code, 200 for results)
  unless a notification for this request comes first (progress, log messages, a listen stream's
  acknowledgement), then the answer is an SSE stream (`X-Accel-Buffering: no`), ended by the
  response;
- a handler quiet for `keepalive` seconds commits to SSE and gets `:` comment lines, so proxies
  and client idle timeouts leave long calls and `subscriptions/listen` streams open;
- the client closing the response stream cancels the handler; nothing more is sent for it.

Watching for that hang-up (and keeping the response alive) needs a task waiting on the ASGI
`receive`. On asyncio it is started only once a handler has run `asgi.WATCH_AFTER` seconds
(`LateWatch`): the many short requests run with no task, task group, cancel scope or timer of
their own (a deadline of the loop's shared timer, dropped). On trio it runs next to the handler, in a task group.

Error responses echo the request id. GET and DELETE answer 405 (`Allow: POST`); session ids and
`Last-Event-ID` are ignored; POSTed notifications get 202, POSTed responses 400.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import anyio

from ...core.session import IncomingRequest, TaskScope
from ...core.transport import Outgoing, ReplyRoute, TransportContext
from ...protocol import wire
from ...protocol.errors import INVALID_REQUEST, http_status
from ...protocol.routing import Rejection
from . import asgi
from .asgi import JSON, HttpResponse, LateWatch, Post, Receive, Timers, error_body, sse_frame, watch

if TYPE_CHECKING:
    from ..session import ServerSession


def status_of(item: Outgoing) -> int:
    """The HTTP status of a final JSON-RPC message: its error code's, or 200."""
    if not item.is_error:
        return 200
    error = item.message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return http_status(code) if isinstance(code, int) and not isinstance(code, bool) else 200


class ModernRoute(ReplyRoute, TaskScope):
    """The reply route of one modern POST: JSON unless notifications come first, then SSE.

    On asyncio it is also the request's cancel scope (a `TaskScope`: the handler runs in the
    POST's task) and the deadline of the loop's shared `Timers` after which the POST gets its
    watcher (as `asgi.LateWatch` does): one object per POST for all three."""

    # The state of a POST just begun, as class defaults (an instance sets what changes): the
    # route's, and the `TaskScope`'s (these shadow its slots: this class's instances keep them in
    # their `__dict__`).
    finished = False  # the request was served (what a watcher of its response asks)
    _locked: anyio.Lock | None = None  # made when first needed: most answers never need it
    _task: asyncio.Task[Any] | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _inside = False
    cancel_called = False
    cancelled_caught = False
    _receive: Receive | None = None
    _keepalive: float | None = None
    _timers: Timers | None = None
    _watching: anyio.CancelScope | None = None
    _watch_task: asyncio.Task[None] | None = None

    def __init__(
        self,
        exchange: HttpResponse,
        receive: Receive | None = None,
        keepalive: float | None = None,
        timers: Timers | None = None,
    ) -> None:
        self.exchange = exchange
        if timers is not None:  # the watcher starts once the handler has run this long
            self._receive, self._keepalive, self._timers, self._loop = receive, keepalive, timers, timers.loop
            after = asgi.WATCH_AFTER
            delay = after if keepalive is None or keepalive > after else keepalive
            timers.add(self, timers.loop.time() + delay)

    @property
    def _lock(self) -> anyio.Lock:
        if self._locked is None:
            self._locked = anyio.Lock(fast_acquire=True)  # uncontended: no trip through the event loop
        return self._locked

    def done(self) -> bool:
        return self.finished

    async def send(self, item: Outgoing, *, final: bool) -> None:
        exchange = self.exchange
        if final and not exchange.started and (self._locked is None or not self._locked.locked()):
            # The common answer: one JSON response, nothing else written for this request. The
            # lock is free and `respond` marks the response started before it awaits anything,
            # so a keep-alive coming meanwhile finds it started (and writes nothing after it).
            if not (exchange.finished or exchange.gone):
                await exchange.respond(status_of(item) if "error" in item.message else 200, item.data, JSON)
            return
        async with self._lock:
            if not exchange.open:
                return
            if final and not exchange.started:
                await exchange.respond(status_of(item), item.data, JSON)
                return
            if not exchange.started:
                await exchange.start_sse()
            await exchange.chunk(sse_frame(item.data))
            if final:
                await exchange.end()

    async def keepalive(self) -> None:
        async with self._lock:
            if not self.exchange.open:
                return
            if not self.exchange.started:
                await self.exchange.start_sse()
            await self.exchange.comment()

    # -- the late watcher (asyncio) ----------------------------------------------------------

    def due(self) -> None:
        """The handler has run `WATCH_AFTER` seconds: start watching for the client hanging up
        (and keep the response alive), in a task of the loop's own (a timer callback runs
        outside any task, where anyio finds no event loop)."""
        if not self.finished and self._timers is not None:
            self._watch_task = task = self._timers.loop.create_task(self._watch())
            LateWatch.running.add(task)
            task.add_done_callback(LateWatch.running.discard)

    def stop(self) -> None:
        """The request was served: no watcher starts, and a running one ends (unless the response
        is complete: the ASGI server then ends it, answering its pending `receive`)."""
        self.finished = True
        task = self._watch_task
        if task is None:
            if self._timers is not None:
                self._timers.discard(self)
            return
        if not self.exchange.open:
            return
        if self._watching is not None:
            self._watching.cancel()
        else:
            task.cancel()  # not started yet: it never runs

    async def _watch(self) -> None:
        if self.finished or self._receive is None:
            return
        hung_up, idle = LateWatch.callbacks(self.done, self.cancel, self._keepalive, self.keepalive)
        with anyio.CancelScope() as self._watching:
            await watch(self._receive, hung_up, self._keepalive, idle)


async def serve_modern(
    session: ServerSession,
    request: wire.Request,
    post: Post,
    keepalive: float | None,
    timers: Timers | None = None,
) -> None:
    """Route and serve one modern request (decoded already), answering on the POST's response:
    routed first, so a refusal gets its HTTP status; then served in this task. With the asyncio
    loop's `timers`, the POST's watcher starts only if the handler outlives `asgi.WATCH_AFTER`
    (the route is the request's cancel scope and that deadline); without them (trio) the watcher
    runs next to the handler from the start."""
    exchange = post.exchange
    if timers is None:
        route = ModernRoute(exchange)
        context = TransportContext(
            "http", headers=post.headers, auth=post.auth, can_send_request=False, reply=route, request_scoped=True
        )
        incoming = IncomingRequest(request.id, request.method, request.params, context)
    else:  # the handler runs in this task: a hang-up cancels the task within the request's scope (the route)
        route = ModernRoute(exchange, post.receive, keepalive, timers)
        context = TransportContext(
            "http", headers=post.headers, auth=post.auth, can_send_request=False, reply=route, request_scoped=True
        )
        incoming = IncomingRequest(request.id, request.method, request.params, context, route)
    try:
        routed = session.route(incoming)
        if isinstance(routed, Rejection):
            body = error_body(request.id, routed.code, routed.message, routed.data)
            await exchange.respond(routed.http_status, body, JSON)
            return
        incoming.route = routed
        if timers is None:
            await _serve_watched(session, incoming, route, post, keepalive)
            return
        await session.serve(incoming)
    finally:
        route.stop()


async def _serve_watched(
    session: ServerSession, incoming: IncomingRequest, route: ModernRoute, post: Post, keepalive: float | None
) -> None:
    """Serve with the watcher in a task group of this request, from the start."""
    exchange = post.exchange
    async with anyio.create_task_group() as tg:
        hung_up, idle = LateWatch.callbacks(route.done, tg.cancel_scope.cancel, keepalive, route.keepalive)
        tg.start_soon(watch, post.receive, hung_up, keepalive, idle)
        await session.serve(incoming)
        route.finished = True
        # No cancellation here (it is the costly part of a task group): once the response is
        # complete, the ASGI server answers the watcher's pending `receive` with a disconnect,
        # and the watcher returns; `idle` ends it otherwise.
        if not exchange.finished:
            tg.cancel_scope.cancel()


async def refuse_posted(exchange: HttpResponse, message: wire.Message) -> bool:
    """Answer a POST body that is not a request (True when answered): a notification is
    accepted and dropped (202), a response or an invalid message is refused (400)."""
    if isinstance(message, wire.Notification):
        await exchange.respond(202)
        return True
    if isinstance(message, wire.Response):
        body = error_body(None, INVALID_REQUEST, "a client must not POST responses in this protocol version")
        await exchange.respond(400, body)
        return True
    return False
