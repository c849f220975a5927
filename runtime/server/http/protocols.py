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
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._head_came()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def shutdown(self) -> None:
        self._closing_streams()
        super().shutdown()  # type: ignore[misc]


class TimedH11Protocol(HeadDeadline, H11Protocol):
    """uvicorn's h11 protocol with the head deadline."""


if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TimedHttpToolsProtocol(HeadDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with the head deadline."""
