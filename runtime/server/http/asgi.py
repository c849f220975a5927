"""The HTTP side of Streamable HTTP on the server: one ASGI response at a time. Plain ASGI 3, no framework.

`HttpResponse` writes one HTTP response: a JSON body, an empty status, or a Server-Sent Events stream
(`event: message` frames with optional `id` and `retry`, and `:` comment lines for keep-alive).
Once the client has gone, writes are dropped (`gone`), never raised: a handler whose client hung
up finishes or is cancelled by its owner, it does not crash the app. The header helpers read the
ASGI scope's raw headers (lower-case names; repeated headers joined with commas, as RFC 9110 allows
for list-valued fields).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import anyio

from ...protocol import wire

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
HeaderList = list[tuple[bytes, bytes]]
log = logging.getLogger("mcpgen.runtime.server.http")
IDLE_CHECK = 15.0  # seconds between checks of a watcher whose server never wakes a pending receive
WATCH_AFTER = 0.05  # seconds a response waits before it gets a watcher (`LateWatch`)
_TIMER_SLACK = 0.001  # seconds before its time a deadline of `Timers` may be served
_TIMER_GRAIN = 0.01  # seconds at least between two rounds of `Timers` (a deadline may be served that late)

JSON = b"application/json"
EVENT_STREAM = b"text/event-stream"
CLOSE: HeaderList = [(b"connection", b"close")]  # the server closes the connection after this response
SSE_HEADERS: HeaderList = [
    (b"content-type", EVENT_STREAM),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # proxies (nginx) must not buffer the stream
]


def headers_of(scope: Scope) -> dict[str, str]:
    """The request headers as a dict of lower-case names (latin-1 values, as HTTP carries them,
    without surrounding whitespace: h11 strips it, httptools keeps what trails a value)."""
    raw = scope.get("headers") or ()
    try:  # clients send the same few headers again and again: each (name, value) is decoded once
        found = dict(map(_SEEN_HEADERS.__getitem__, raw))
    except (AttributeError, TypeError, ValueError):  # (a server giving other buffers, or lists for pairs)
        found = {}
    if len(found) == len(raw):
        return found
    found = {}
    for raw_name, raw_value in raw:
        name = bytes(raw_name).decode("latin-1").lower()
        value = bytes(raw_value).decode("latin-1").strip(" \t")
        found[name] = f"{found[name]},{value}" if name in found else value
    return found


class _Decoded(dict[tuple[bytes, bytes], tuple[str, str]]):
    """Request headers decoded: (name, value) as ASGI gives them -> (lower-case name, value)."""

    def __missing__(self, pair: tuple[bytes, bytes]) -> tuple[str, str]:
        name, value = pair
        read = (name.decode("latin-1").lower(), value.decode("latin-1").strip(" \t"))
        if len(value) <= _SEEN_LONGEST and name.lower() not in _SECRET_HEADERS:
            if len(self) >= _SEEN_MOST:
                self.clear()
            self[pair] = read
        return read


_SEEN_HEADERS = _Decoded()
_SEEN_MOST = 512  # decoded headers kept (then forgotten all at once): a unique value per request costs no more
_SEEN_LONGEST = 256  # longer values are decoded every time (tokens, signatures: seldom repeated)
_SECRET_HEADERS = frozenset({b"authorization", b"proxy-authorization", b"cookie"})  # never kept


def media_types(header: str | None) -> set[str]:
    """The media types of an `Accept` or `Content-Type` value, without parameters, lower-case."""
    if not header:
        return set()
    return {part.split(";", 1)[0].strip().lower() for part in header.split(",") if part.strip()}


def accepts(accept: str | None, wanted: str) -> bool:
    """Does an `Accept` header allow `wanted` (a missing header or a wildcard counts)?"""
    if accept is None:
        return False
    types = media_types(accept)
    family = wanted.split("/", 1)[0]
    return bool(types & {wanted, "*/*", f"{family}/*"})


def accepts_json_and_sse(accept: str | None) -> bool:
    """Does an `Accept` header allow both JSON and SSE (what a Streamable HTTP POST must accept)?
    The header is read once (most clients send the same value on every request)."""
    if accept is None:
        return False
    types = media_types(accept)
    if "*/*" in types:
        return True
    return bool(types & _JSON_TYPES) and bool(types & _SSE_TYPES)


_JSON_TYPES = frozenset({"application/json", "application/*"})
_SSE_TYPES = frozenset({"text/event-stream", "text/*"})


def error_body(request_id: wire.RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    return wire.dumps(wire.error(request_id, code, message, data))


def sse_frame(data: bytes | None, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One SSE event: `data: None` is a priming event (an id and an empty data line)."""
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode() + b"\n")
    if retry_ms is not None:
        parts.append(b"retry: %d\n" % retry_ms)
    if data is None:
        parts.append(b"data: \n\n")
    else:
        # JSON from `wire.dumps` has no raw newlines; split anyway so any payload stays one event.
        parts.append(b"event: message\n")
        parts.extend(b"data: " + line + b"\n" for line in data.split(b"\n"))
        parts.append(b"\n")
    return b"".join(parts)


class HttpResponse:
    """One HTTP response, written through ASGI `send`: JSON, an empty status, or an SSE stream."""

    # (the state of a response not started yet, as class defaults: set on an instance when it changes)
    started = False
    sse = False
    finished = False
    gone = False  # the client went away (or the server could not write): writes are dropped
    status = 0

    def __init__(self, send: Send, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        self._send = send
        self.headers: HeaderList = list(headers) if headers else []  # sent with whatever response this becomes

    @property
    def open(self) -> bool:
        return not (self.finished or self.gone)

    def watching(self, send: Send) -> Send:
        """`send`, marking this response started when a response starts through it (for answers
        written by others around this one, such as an authorization middleware's)."""

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.started = True
            await send(message)

        return watched

    async def _write(self, message: Message) -> None:
        if self.gone:
            return
        try:
            await self._send(message)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # the ASGI server reports a closed connection by raising (OSError and kin)
            self.gone = True

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        content_type: bytes | None = JSON,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        """A complete response: status, headers and body at once."""
        if self.started:
            raise RuntimeError("the response has started already")
        self.started, self.finished, self.status = True, True, status
        all_headers = self.headers  # (sent once: this response's own list)
        if headers:
            all_headers.extend(headers)
        if body and content_type is not None:
            all_headers.append((b"content-type", content_type))
        all_headers.append((b"content-length", b"%d" % len(body)))
        if self.gone:
            return
        try:
            await self._send({"type": "http.response.start", "status": status, "headers": all_headers})
            await self._send({"type": "http.response.body", "body": body, "more_body": False})
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # the ASGI server reports a closed connection by raising (OSError and kin)
            self.gone = True

    async def start_sse(self, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        if self.started:
            raise RuntimeError("the response has started already")
        self.started, self.sse, self.status = True, True, 200
        all_headers = [*self.headers, *SSE_HEADERS, *headers]
        await self._write({"type": "http.response.start", "status": 200, "headers": all_headers})

    async def chunk(self, data: bytes) -> None:
        """Raw bytes of the started SSE stream (frames from `sse_frame`, comments)."""
        if not self.finished:
            await self._write({"type": "http.response.body", "body": data, "more_body": True})

    async def comment(self) -> None:
        """A keep-alive comment line (clients ignore it; proxies see traffic)."""
        await self.chunk(b": keep-alive\n\n")

    async def end(self) -> None:
        """End the streamed response."""
        if self.started and not self.finished:
            self.finished = True
            await self._write({"type": "http.response.body", "body": b"", "more_body": False})


@dataclass(slots=True)
class Post:
    """One POST being answered: its headers (lower-case names), the authenticated principal (if
    any), the response being written and the ASGI `receive` (to see the client hang up)."""

    headers: dict[str, str]
    auth: Any
    exchange: HttpResponse
    receive: Receive


async def read_body(receive: Receive, limit: int, first: Message | None = None) -> bytes | None:
    """The request body, or None when it is over `limit` bytes (what was sent is drained first,
    as far as `limit` allows; the caller answers 413). Raises `Disconnected` when the client
    went away mid-body. `first`: the first message, when the caller received it already."""
    message = await receive() if first is None else first
    if message["type"] == "http.disconnect":
        raise Disconnected
    data: bytes = message.get("body", b"")
    if len(data) > limit:
        return None
    if not message.get("more_body", False):
        return data  # (most bodies: one message)
    chunks = [data]
    size = len(data)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        data = message.get("body", b"")
        size += len(data)
        if size > limit:
            return None
        chunks.append(data)
        if not message.get("more_body", False):
            return b"".join(chunks)


class Disconnected(Exception):
    """The client closed the connection before its request was read."""


class BodyTimeout(Exception):
    """The request's body did not all arrive in time."""


class Timers:
    """The deadlines of one asyncio loop's requests, served by one loop timer (set for the earliest)
    rather than a timer per request: most deadlines are dropped long before they are due (a body that
    came with the head, a response complete before its watcher was due), and adding or dropping one
    is a dict entry. Each entry is an object with a `due()` method, called when its time has come."""

    __slots__ = ("_at", "_due", "_handle", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._due: dict[Any, float] = {}  # entry -> when (loop time)
        self._handle: asyncio.TimerHandle | None = None
        self._at = math.inf  # when the timer is set for

    def add(self, entry: Any, when: float) -> None:
        self._due[entry] = when
        if when < self._at:
            self._set(when)

    def discard(self, entry: Any) -> None:
        self._due.pop(entry, None)

    def close(self) -> None:
        """Drop every deadline (the app stops)."""
        self._due.clear()
        if self._handle is not None:
            self._handle.cancel()
        self._handle, self._at = None, math.inf

    def _set(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._at = when
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle, self._at = None, math.inf
        now = self.loop.time() + _TIMER_SLACK  # (a loop timer may fire a little early: what is that close is due)
        due = [entry for entry, when in self._due.items() if when <= now]
        for entry in due:
            del self._due[entry]
        if self._due:  # (at most every `_TIMER_GRAIN`: many deadlines close together are served at once)
            self._set(max(min(self._due.values()), now + _TIMER_GRAIN))
        for entry in due:
            try:
                entry.due()
            except Exception:  # one entry's failure must not keep the others from their time
                log.exception("a request deadline failed")


class BodyDeadline:
    """A `receive` that must deliver the whole request body within `seconds` (then `BodyTimeout`);
    after the body, it passes messages through unbounded (waiting for a disconnect is normal).
    On asyncio (`timers`) a wait for the body is bounded by a deadline of the loop's shared timer
    that cancels the waiting task (most bodies are there with the head: the deadline is added and
    dropped, no timer of its own); elsewhere by a cancel scope."""

    __slots__ = ("_deadline", "_done", "_expired", "_receive", "_task", "_timers")

    def __init__(self, receive: Receive, seconds: float, timers: Timers | None = None) -> None:
        self._receive = receive
        self._timers = timers
        self._deadline = (timers.loop.time() if timers is not None else anyio.current_time()) + seconds
        self._done = False
        self._expired = False
        self._task: asyncio.Task[Any] | None = None

    async def __call__(self) -> Message:
        if self._done:
            return await self._receive()
        timers = self._timers
        if timers is None:
            with anyio.move_on_after(max(self._deadline - anyio.current_time(), 0.0)):
                return self._seen(await self._receive())
            raise BodyTimeout
        deadline = self._deadline
        if timers.loop.time() >= deadline:
            raise BodyTimeout
        self._task = task = asyncio.current_task(timers.loop)
        due = timers._due  # (`Timers.add` and `discard`, inline: this runs on every request)
        due[self] = deadline
        if deadline < timers._at:
            timers._set(deadline)
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            if not self._expired:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: the task is no longer cancelling
            if uncancel is not None:
                uncancel()
            raise BodyTimeout from None
        finally:
            due.pop(self, None)
            self._task = None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._done = True
        return message

    def due(self) -> None:
        if self._task is not None:
            self._expired = True
            self._task.cancel()

    def _seen(self, message: Message) -> Message:
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._done = True
        return message


async def watch(
    receive: Receive,
    on_disconnect: Callable[[], None],
    keepalive_seconds: float | None,
    on_idle: Callable[[], Awaitable[bool | None]],
) -> None:
    """Wait for the client to disconnect (then call `on_disconnect` and return); meanwhile call
    `on_idle` every `keepalive_seconds` (without keep-alive, every `IDLE_CHECK` seconds) and
    return when it answers False. ASGI servers answer a pending `receive` with a disconnect once
    the response is complete, so the watcher of a finished response ends by itself."""
    interval = keepalive_seconds if keepalive_seconds is not None else IDLE_CHECK
    while True:
        with anyio.move_on_after(interval):
            message = await receive()
            if message["type"] == "http.disconnect":
                on_disconnect()
                return
            continue
        if await on_idle() is False:
            return


class LateWatch:
    """A `watch` of one response that starts only once `WATCH_AFTER` seconds have passed (or
    `keepalive_seconds`, when sooner): a response complete before that (most are) never gets a
    task, nor a timer of its own (a deadline of the loop's shared `Timers`). Its watcher calls
    `cancel` when the client hangs up before the response is `done`, and `on_idle` every
    `keepalive_seconds` meanwhile (`callbacks`). The shared timer starts it in a task of the loop's
    own (a timer callback runs outside any task, where anyio finds no event loop); `stop` ends it,
    unless the response is complete, when the ASGI server ends it by answering its pending
    `receive` with a disconnect."""

    __slots__ = ("_args", "_exchange", "_scope", "_task", "_timers", "finished")
    running: ClassVar[set[asyncio.Task[None]]] = set()  # the loop holds tasks weakly: they are held here

    def __init__(  # noqa: PLR0913  (what `watch` takes, and where it runs)
        self,
        receive: Receive,
        done: Callable[[], bool],
        cancel: Callable[[], None],
        keepalive_seconds: float | None,
        on_idle: Callable[[], Awaitable[None]],
        exchange: HttpResponse,
        timers: Timers,
    ) -> None:
        self._args = (receive, done, cancel, keepalive_seconds, on_idle)
        self._exchange = exchange
        self._timers = timers
        self._scope: anyio.CancelScope | None = None
        self._task: asyncio.Task[None] | None = None
        self.finished = False
        delay = WATCH_AFTER if keepalive_seconds is None else min(WATCH_AFTER, keepalive_seconds)
        timers.add(self, timers.loop.time() + delay)

    @staticmethod
    def callbacks(
        done: Callable[[], bool],
        cancel: Callable[[], None],
        keepalive_seconds: float | None,
        on_idle: Callable[[], Awaitable[None]],
    ) -> tuple[Callable[[], None], Callable[[], Awaitable[bool]]]:
        """What a watcher of one response calls (for `LateWatch` or `watch`): `hung_up`, which
        calls `cancel` unless the response is `done` (a complete response's watcher is answered
        with a disconnect too), and `idle`, which stops the watcher once `done` and otherwise
        keeps the response alive (`on_idle`) when there is a keep-alive."""

        def hung_up() -> None:
            if not done():
                cancel()

        async def idle() -> bool:
            if done():
                return False
            if keepalive_seconds is not None:
                await on_idle()
            return True

        return hung_up, idle

    def due(self) -> None:
        if not self.finished:
            self._task = task = self._timers.loop.create_task(self._run())
            self.running.add(task)
            task.add_done_callback(self.running.discard)

    def stop(self) -> None:
        self.finished = True
        if self._task is None:
            self._timers.discard(self)
            return
        if not self._exchange.open:
            return
        if self._scope is not None:
            self._scope.cancel()
        else:
            self._task.cancel()  # not started yet: it never runs

    async def _run(self) -> None:
        if self.finished:
            return
        receive, done, cancel, keepalive_seconds, on_idle = self._args
        hung_up, idle = self.callbacks(done, cancel, keepalive_seconds, on_idle)
        with anyio.CancelScope() as self._scope:
            await watch(receive, hung_up, keepalive_seconds, idle)


async def hold(  # noqa: PLR0913  (what it waits for, and how)
    receive: Receive,
    done: anyio.Event,
    keepalive_seconds: float | None,
    on_idle: Callable[[], Awaitable[None]],
    exchange: HttpResponse,
    timers: Timers | None = None,
) -> bool:
    """Wait until `done` is set (True) or the client disconnects (False), calling `on_idle` every
    `keepalive_seconds` meanwhile. When `done` comes with `exchange` finished, the watcher is left
    to end on the server's disconnect rather than cancelled (cancelling costs more). With the
    asyncio loop's `timers`, the watcher starts only if the wait outlives `WATCH_AFTER` (`LateWatch`)."""
    left = False
    if timers is not None:
        if done.is_set():
            return True
        with anyio.CancelScope() as scope:

            def gone_late() -> None:
                nonlocal left
                left = True
                scope.cancel()

            watcher = LateWatch(receive, done.is_set, gone_late, keepalive_seconds, on_idle, exchange, timers)
            try:
                await done.wait()
            finally:
                watcher.stop()
        return not left

    async with anyio.create_task_group() as tg:

        def gone() -> None:
            nonlocal left
            left = True
            tg.cancel_scope.cancel()

        hung_up, idle = LateWatch.callbacks(done.is_set, gone, keepalive_seconds, on_idle)
        tg.start_soon(watch, receive, hung_up, keepalive_seconds, idle)
        await done.wait()
        if not exchange.finished:
            tg.cancel_scope.cancel()
    return not left


def plain(status: int, text: str) -> tuple[int, bytes, bytes]:
    """A short plain-text answer (for HTTP-level refusals that are not JSON-RPC)."""
    return status, text.encode(), b"text/plain; charset=utf-8"


def header_list(mapping: Mapping[str, str]) -> HeaderList:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in mapping.items()]
