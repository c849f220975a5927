"""uvicorn's HTTP/1.1 protocols with a deadline for each request head (imports uvicorn: load it
only to serve).

uvicorn bounds the time between requests on a connection but not the time a request's head may
take to arrive. `TimedH11Protocol` (h11, pure Python) and `TimedHttpToolsProtocol` (httptools, the
C parser uvicorn prefers when it is installed) close a connection whose next request head is not
complete `header_timeout` seconds after the connection opened (or after the previous response
completed): slowloris. The deadline is the served app's (`HttpApp.security.header_timeout`,
found through any middleware uvicorn wraps around it), so the classes are plain module attributes
that uvicorn's worker processes import by name (`http="module:Class"`). When the server shuts down
(it tells each open connection), the app's `subscriptions/listen` and standalone streams end first
(`HttpApp.close_streams`), so the wait for open responses does not last the whole graceful
timeout, in worker processes too.

Both also write a response's head with its body (`OneWriteHead`): uvicorn writes them one after
the other, two system calls and two TCP segments for a JSON answer; here one.

`http_protocol()` names the fastest one installed, as uvicorn's own "auto" would pick.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .security import DEFAULT_HEADER_TIMEOUT

if TYPE_CHECKING:
    from .app import HttpApp
    from .asgi import Timers

H11 = f"{__name__}:TimedH11Protocol"
HTTPTOOLS = f"{__name__}:TimedHttpToolsProtocol"


def http_protocol() -> str:
    """The protocol uvicorn should run, by import name: httptools when installed, else h11."""
    return HTTPTOOLS if importlib.util.find_spec("httptools") is not None else H11


def served_app(app: Any) -> HttpApp | None:
    """The `HttpApp` uvicorn serves, through the middleware it wraps around it (`.app` attributes);
    told by its attributes (the app module imports this one's importer, `run`)."""
    for _ in range(8):
        if app is None:
            return None
        if hasattr(app, "close_streams") and hasattr(app, "security") and hasattr(app, "closing"):
            found: HttpApp = app
            return found
        app = getattr(app, "app", None)
    return None


def timers_of(app: Any, loop: asyncio.AbstractEventLoop) -> Timers | None:
    """The shared request deadlines of the served app, when it runs them on `loop`."""
    found = served_app(app)
    timers: Timers | None = getattr(found, "timers", None)
    return timers if timers is not None and timers.loop is loop else None


def header_timeout_of(app: Any) -> float:
    """The head deadline of the served app (the default one for another app)."""
    found = served_app(app)
    return found.security.header_timeout if found is not None else DEFAULT_HEADER_TIMEOUT


class OneWriteHead:
    """A connection's transport that writes a response's head with its body, in one system call
    (and one TCP segment) where uvicorn writes them one after the other: told (`hold`) that a new
    request came, it holds the next write (the head) until the one after it. A head without a
    `Content-Length` (an SSE stream's, a `100 Continue`) goes out on the loop's next turn when
    nothing follows at once; one with a length waits for its body, or for the response to be
    complete (`flush`, which the protocol calls then) or the transport to close (`close` flushes;
    a connection already lost drops it). A write that is not a head (`HTTP/...`) is never held.
    Everything else passes through to the transport."""

    __slots__ = ("_flush", "_held", "_loop", "_transport", "hold")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush: asyncio.Handle | None = None
        self.hold = False  # the next write is a response's head: hold it

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:  # the body after the head (most responses: both in one step of the app)
            self._held = None
            if self._flush is not None:
                self._flush.cancel()
                self._flush = None
            self._transport.write(held + data)
        elif self.hold and bytes(data[:5]) == b"HTTP/":
            # (only a head: a request pipelined while an earlier response streams makes `hold` true
            # before that response's next body chunk, which must pass through at once)
            self.hold = False
            self._held = held = bytes(data)
            if b"\r\ncontent-length:" not in held.lower():  # (with a length, its body follows: see `flush`)
                self._flush = self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Write a held head now."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def writelines(self, data: Any) -> None:
        self.flush()
        self._transport.writelines(data)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:  # the transport's other methods (set_protocol, ...)
        return getattr(self._transport, name)


class HeadDeadline:
    """The deadline itself, mixed into a uvicorn protocol (which gives `loop`, `transport`, `cycle`
    and `app`): armed when the connection opens and when a response completes, disarmed when
    the next request's head has come (a new request cycle). It is an entry of the served app's
    shared `Timers` (adding and dropping one is a dict entry, no loop timer per request), or a
    loop timer of its own when the app has none on this loop (another app, not running)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    app: Any
    _head_timer: asyncio.TimerHandle | None = None
    _head_due: Timers | None = None  # the shared timers holding the deadline (armed there)
    _waiting_after: object = None  # the request cycle before the head being waited for
    _header_timeout: float | None = None
    _timers: Timers | None = None  # the served app's shared timers on this loop (once looked up)
    _writes: OneWriteHead
    _written_for: object = None  # the request cycle whose response head was last held

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        if self._header_timeout is None:  # (the connection's first deadline: what it uses, looked up)
            self._header_timeout = header_timeout_of(self.app)
            self._timers = timers_of(self.app, self.loop)
        timers = self._timers
        self._waiting_after = self.cycle
        if timers is not None:
            self._head_due = timers
            timers.add(self, self.loop.time() + self._header_timeout)
        else:
            self._head_timer = self.loop.call_later(self._header_timeout, self._head_too_slow)

    def _disarm_head_timer(self) -> None:
        if self._head_due is not None:
            self._head_due.discard(self)
            self._head_due = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_came(self) -> None:
        if (self._head_due is not None or self._head_timer is not None) and self.cycle is not self._waiting_after:
            self._disarm_head_timer()  # the head came: the app bounds the body

    def due(self) -> None:
        """The shared timers' call: the deadline has passed."""
        self._head_due = None
        self._head_too_slow()

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.cycle is self._waiting_after and not self.transport.is_closing():
            self.transport.close()

    def _closing_streams(self) -> None:
        """The server shuts down: the app's long-lived streams end (once per app)."""
        app = served_app(self.app)
        if app is not None and app.running and not app.closing:
            app.close_streams()

    # The protocol's own methods, extended: `HeadDeadline` comes first in each protocol's MRO, so
    # `super()` is the uvicorn protocol's.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._writes = writes = OneWriteHead(transport, self.loop)  # type: ignore[arg-type]
        super().connection_made(writes)  # type: ignore[misc]
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        cycle = self.cycle
        if cycle is not self._written_for:  # a new request: its response's head waits for its body
            self._written_for = cycle
            self._writes.hold = True
        self._head_came()

    def on_response_complete(self) -> None:
        self._writes.flush()  # (a head held for a body that never came: a HEAD request's)
        super().on_response_complete()  # type: ignore[misc]
        cycle = self.cycle  # (a request pipelined behind this one is being served already: no head is awaited)
        if not self.transport.is_closing() and (cycle is None or cycle.response_complete):
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def shutdown(self) -> None:
        self._closing_streams()
        super().shutdown()  # type: ignore[misc]


class TimedH11Protocol(HeadDeadline, H11Protocol):
    """uvicorn's h11 protocol with the head deadline, writing a head with its body."""


if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TimedHttpToolsProtocol(HeadDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with the head deadline, writing a head with its body."""
