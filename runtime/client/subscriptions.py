"""Change notifications on the client: `Client.listen()` and what it yields.

On a modern connection `listen()` holds a `subscriptions/listen` request open and receives the
changes tagged with its id; on a handshake-era one it subscribes to resources and filters the
changes the server pushes. Either way the caller iterates a `Subscription` of `Event`s;
`sub.honoured` says what the server agreed to send.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from ..protocol.capabilities import has_capability
from ..protocol.changes import LIST_KINDS, uri_covered
from ..protocol.errors import (
    ConnectionClosed,
    InvalidParams,
    McpError,
    McpRuntimeError,
    RequestTimeout,
    validation_detail,
)

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from . import Client

log = logging.getLogger("mcpgen.runtime.client")
EVENT_BUFFER = 1000
RELISTEN_ATTEMPTS = 5  # consecutive re-opens of a broken listen stream without an acknowledgement
RELISTEN_BACKOFF = (0.0, 0.5, 1.0, 2.0, 4.0)  # seconds before a re-open, by breaks in a row
RELISTEN_STABLE = 10.0  # a stream that lived this long resets the backoff
RELISTEN_ACK_TIMEOUT: float | None = None  # how long a re-open may go unacknowledged (None: request_timeout)


@dataclass(frozen=True)
class Event:
    """A change the server announced: `kind` is `tools`, `prompts`, `resources` (list changed)
    or `resource` (the resource `uri` was updated); `params` are the notification's params."""

    kind: str
    uri: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    resumed: bool = False
    """True for the events a re-opened listen stream reports: what changed while the stream was
    down is unknown, so each subscribed kind and URI is reported once as changed."""


@dataclass(frozen=True)
class ListenRequest:
    """What to listen for: list kinds and resource URIs."""

    kinds: tuple[str, ...] = ()
    uris: tuple[str, ...] = ()


class Subscription:
    """Events of one `listen()`; iterate it (`async for event in sub`) or call `next()`.

    `Client.listen` makes it; `honoured` is what the server agreed to send (its acknowledgement:
    `toolsListChanged`, `resourceSubscriptions`, ...), empty until it acknowledges.

    Attributes:
        acknowledged: set once the server acknowledged the listen request.
        error: why the stream ended, when it ended on an error.
        resumes: how many times a broken listen stream was opened again.
    """

    def __init__(self, honoured: Mapping[str, Any] | None = None) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Event](EVENT_BUFFER)
        self.honoured: Mapping[str, Any] = honoured or {}
        self.acknowledged = anyio.Event()
        self.id: str | int | None = None
        self.error: McpRuntimeError | None = None
        self.resumes = 0  # how many times a broken listen stream was opened again
        self.on_acknowledged: Callable[[], None] | None = None

    def acknowledge(self, honoured: Mapping[str, Any]) -> None:
        """The server acknowledged the listen request (a re-opened one included), agreeing to `honoured`."""
        self.honoured = honoured
        self.acknowledged.set()
        callback, self.on_acknowledged = self.on_acknowledged, None
        if callback is not None:
            callback()

    def report_gap(self) -> None:
        """After a re-opened stream's acknowledgement: each subscribed kind and URI, as changed."""
        for key, value in self.honoured.items():
            if key.endswith("ListChanged") and value is True:
                self.push(Event(key[: -len("ListChanged")], resumed=True))
        for uri in self.honoured.get("resourceSubscriptions") or ():
            if isinstance(uri, str):
                self.push(Event("resource", uri, resumed=True))

    def push(self, event: Event) -> None:
        """Deliver `event` to the reader (dropped, with a warning, when the reader is too far behind)."""
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            log.warning("listen subscription is not being read; dropped %s", event)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def end(self) -> None:
        """End the events: the reader's iteration stops after the ones already delivered."""
        self._send.close()

    def close(self) -> None:
        """The subscription's block is over: both ends of its events are closed."""
        self._send.close()
        self._receive.close()

    def wants(self, event: Event) -> bool:
        """On a handshake-era connection: is `event` one this subscription asked for?"""
        if event.kind == "resource":
            return uri_covered(self.honoured.get("resourceSubscriptions") or [], event.uri or "")
        return bool(self.honoured.get(f"{event.kind}ListChanged"))

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._receive.__aiter__()

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; `RequestTimeout` if none comes within `timeout`, `ConnectionClosed` once the stream ended."""
        try:
            with anyio.fail_after(timeout):
                return await self._receive.receive()
        except TimeoutError:
            raise RequestTimeout(f"no change notification within {timeout} s") from None
        except anyio.EndOfStream:
            raise self.error or ConnectionClosed("the subscription has ended") from None


def event_for(method: str, params: Mapping[str, Any]) -> Event | None:
    """The `Event` a change notification announces, or None for any other notification."""
    if method == "notifications/resources/updated":
        uri = params.get("uri")
        return Event("resource", uri if isinstance(uri, str) else None, params)
    prefix, suffix = "notifications/", "/list_changed"
    if method.startswith(prefix) and method.endswith(suffix):
        kind = method[len(prefix) : -len(suffix)]
        if kind in LIST_KINDS:
            return Event(kind, None, params)
    return None


@asynccontextmanager
async def listen_stream(client: Client, request: ListenRequest) -> AsyncIterator[Subscription]:
    """Modern: a `subscriptions/listen` request, held open while the caller reads its events."""
    session = client.session
    wanted: dict[str, Any] = {f"{kind}ListChanged": True for kind in request.kinds}
    if request.uris:
        wanted["resourceSubscriptions"] = list(request.uris)
    spec = client.spec("subscriptions/listen")
    body = client.speaks.params_for(client, client.protocol_version, {"notifications": wanted})
    try:
        spec.parse_params(body)
    except ValidationError as exc:
        raise InvalidParams(f"invalid listen params: {validation_detail(exc)}") from None
    sub = Subscription()
    sub.id = session.next_id()
    session.listens[sub.id] = sub

    async def run() -> None:
        try:
            await _hold_listen(client, sub, body)
        except (McpError, ConnectionClosed, RequestTimeout) as exc:
            sub.error = exc
        finally:
            sub.end()
            sub.acknowledged.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                with anyio.fail_after(client.timeouts.request):
                    await sub.acknowledged.wait()
            except TimeoutError:
                raise RequestTimeout(
                    f"the server did not acknowledge the listen request within {client.timeouts.request} s"
                ) from None
            if sub.error is not None:
                raise sub.error
            try:
                yield sub
            finally:
                tg.cancel_scope.cancel()  # cancels the listen request (the peer is told)
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        if sub.id is not None:
            session.listens.pop(sub.id, None)
        sub.close()


async def _hold_listen(client: Client, sub: Subscription, body: dict[str, Any] | None) -> None:
    """Hold the listen request open. A stream that breaks after its acknowledgement (or whose
    connection fails) is opened again with a new id (streams of this era cannot be resumed), and
    the gap is reported as `resumed` events. A re-open that fails, is refused or is not
    acknowledged within the client's `request_timeout` counts against `RELISTEN_ATTEMPTS`; after
    that many in a row the last error is raised. The server ending an acknowledged listen with an
    error, or the connection closing, ends it at once."""
    session = client.session
    failures = 0  # re-opens in a row that got no acknowledgement
    streak = 0  # breaks in a row of streams that lived less than RELISTEN_STABLE seconds
    while True:
        opened = anyio.current_time()
        try:
            if await _listen_once(client, sub, body):
                return
            raise RequestTimeout("the re-opened listen stream was not acknowledged in time")
        except (McpError, ConnectionClosed, RequestTimeout) as exc:
            acknowledged = sub.acknowledged.is_set()
            if session.closed or (sub.resumes == 0 and not acknowledged):
                raise  # the connection is gone, or the first stream never got going (listen() says so)
            if acknowledged and isinstance(exc, McpError):
                raise  # the server ended the listen: its decision
            failures = 0 if acknowledged else failures + 1
            if failures >= RELISTEN_ATTEMPTS:
                raise
            log.info("the listen stream broke (%s); opening it again", exc)
        streak = 0 if anyio.current_time() - opened >= RELISTEN_STABLE else streak + 1
        await anyio.sleep(RELISTEN_BACKOFF[min(streak, len(RELISTEN_BACKOFF) - 1)])  # never a tight loop
        if sub.id is not None:
            session.listens.pop(sub.id, None)
        sub.id = session.next_id()
        session.listens[sub.id] = sub
        sub.resumes += 1
        sub.acknowledged = anyio.Event()


async def _listen_once(client: Client, sub: Subscription, body: dict[str, Any] | None) -> bool:
    """One listen request, until the server answers it (True). A re-opened one must be acknowledged
    within the client's `request_timeout`, else it is cancelled (False)."""
    assert sub.id is not None
    limit = RELISTEN_ACK_TIMEOUT if RELISTEN_ACK_TIMEOUT is not None else client.timeouts.request
    timeout = limit if sub.resumes else None
    with anyio.CancelScope(deadline=math.inf if timeout is None else anyio.current_time() + timeout) as scope:

        def acknowledged() -> None:
            scope.deadline = math.inf
            sub.report_gap()

        sub.on_acknowledged = acknowledged if sub.resumes else None
        await client.session.send_request("subscriptions/listen", body, timeout=None, request_id=sub.id)
    return not scope.cancelled_caught


@asynccontextmanager
async def pushed_subscription(client: Client, request: ListenRequest) -> AsyncIterator[Subscription]:
    """Handshake era: resource subscriptions plus the list changes the server pushes."""
    session = client.session
    caps = client.server_capabilities or {}
    honoured: dict[str, Any] = {
        f"{kind}ListChanged": True for kind in request.kinds if has_capability(caps, f"{kind}.listChanged")
    }
    subscribed = []
    if request.uris and has_capability(caps, "resources.subscribe"):
        for uri in request.uris:
            await client.request("resources/subscribe", {"uri": uri})
            subscribed.append(uri)
        honoured["resourceSubscriptions"] = subscribed
    sub = Subscription(honoured)
    key = f"pushed-{id(sub)}"
    session.listens[key] = sub
    try:
        yield sub
    finally:
        session.listens.pop(key, None)
        sub.close()
        for uri in subscribed:
            if not session.closed:
                try:
                    await client.request("resources/unsubscribe", {"uri": uri})
                except (McpError, ConnectionClosed):
                    pass
