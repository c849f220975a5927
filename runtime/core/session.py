"""The session core shared by client and server: JSON-RPC 2.0 over a transport.

It owns what does not depend on the side: reading and classifying messages (`wire`), request
ids (a counter, never reused), pending requests with their deadlines, cancellation both ways
(`notifications/cancelled`), progress (`progressToken` -> callback), replies routed the way the
request came (`TransportContext.reply`; the route is told when its request is over), and turning
bad input into JSON-RPC errors:

- malformed JSON -> -32700 (no id); a batch, a non-object, bad `params` -> -32600;
- a message over the size limit -> -32600, with the id when its first bytes carry one (an
  oversized response fails the call it answers instead of leaving it waiting); so does a response
  that is not valid JSON (`NaN` in a result) whose head shows the id it answers;
- what a handler raises: `McpError` -> its code, anything else -> -32603 (a stray cancellation
  included: only a cancellation of the request itself, or of the session, ends the handler quietly).

After any of these the session keeps serving. At most `max_in_flight` requests from the peer run
at once. Past that, the reader does not stop: a request is parked in a FIFO backlog of at most
`max_backlog` (default: `max_in_flight`) and started, in arrival order, as a running one finishes.
The reader goes on reading, so the answers to our own requests (a handler's elicitation or
sampling waits for one), `notifications/cancelled` and progress are never stuck behind the bound:
with every running handler waiting on the peer, a reader that stopped for room would wait forever.
A `notifications/cancelled` for a parked request drops it with no answer (the spec lets a
cancelled request go unanswered); the session's end (`close`, or its input ending) refuses the
parked ones as requests coming after the end. When the backlog is full too, the request is
answered at once with -31503 naming both limits (`data`: `maxInFlight`, `maxBacklog`) rather than
the reader stopping: stopping would bring the hang back for a peer that fills the backlog, and an
error lets the peer retry. Memory stays bounded against a flooding peer either way: at most
`max_in_flight + max_backlog` requests are held, and a peer that writes without reading our
answers is held by our writes blocking on its full input. On asyncio HTTP handshake sessions a
POST waits for room in its own task (`serve_here`), counted in the same backlog bound, refused
the same way past it and dropped the same way by a cancellation. Each message is
encoded once (`Outgoing` carries the object and its bytes) and decoded once (a transport that
decoded a message already hands it over decoded). What a request means (which methods exist,
params, capabilities) belongs to the subclasses: the server routes with `protocol.routing`.

On asyncio the per-call path is lighter, with the same behaviour: a call of ours sent through
our pipe is queued at once and waits on one loop future, its deadline a timer handle (moved by an
authorization as a cancel scope's would be); a request from the peer runs on a plain loop task
with a `TaskScope`, and the session waits for (or cancels) those tasks as a task group would.
Elsewhere (trio, a reply route, another transport, a full pipe) anyio's cancel scopes and task
group do it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from anyio.abc import TaskGroup

from ..protocol import wire
from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    SERVER_OVERLOADED,
    ConnectionClosed,
    McpError,
    McpRuntimeError,
    MessageTooLarge,
    RemoteProtocolError,
    RequestTimeout,
)
from .correlation import Correlation, Pending, ProgressCallback
from .pipe import PipeSend, new_waiter, running_loop, wait, wake
from .transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    HEAD_BYTES,
    Authorizing,
    Failure,
    Inbound,
    Outgoing,
    Oversized,
    ReplyRoute,
    Transport,
    TransportContext,
)
from .worker import OrderedWorker

if TYPE_CHECKING:
    from ..protocol.routing import Route

log = logging.getLogger("mcpgen.runtime.core")

RequestId = wire.RequestId
DEFAULT_MAX_IN_FLIGHT = 256
CALLBACK_BUFFER = 1024  # notifications whose callbacks have not run yet before the reader waits
NO_TRANSPORT = TransportContext("none", can_send_request=False)


class _Default:
    """The "use the session's default" marker for timeouts."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()
Timeout = float | _Default | None


class _Timer:
    """A call's deadline on the asyncio loop: one timer handle that wakes the waiting caller when
    it passes (cheaper than a cancel scope per call). `deadline` may be moved while the call
    waits (an authorization holding the call up stops it: `math.inf`), as a cancel scope's can."""

    __slots__ = ("_deadline", "_handle", "_loop", "_waiter", "expired")

    def __init__(self, loop: asyncio.AbstractEventLoop, deadline: float, waiter: asyncio.Future[None]) -> None:
        self._loop = loop
        self._waiter = waiter
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = math.inf
        self.expired = False
        self.deadline = deadline

    @property
    def deadline(self) -> float:
        return self._deadline

    @deadline.setter
    def deadline(self, value: float) -> None:
        self.cancel()
        self._deadline = value
        if value != math.inf and not self.expired:
            self._handle = self._loop.call_at(value, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.expired = True
        wake(self._waiter)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class TaskScope:
    """The cancel scope of a request that runs on a loop task of its own (asyncio): cancelling it
    cancels that task while it is inside the scope, and the scope catches that cancellation; the
    part of anyio's `CancelScope` that `Session.serve` uses, without its bookkeeping per request."""

    __slots__ = ("_inside", "_loop", "_task", "cancel_called", "cancelled_caught")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop  # the loop it runs on, when known (else the running one is looked up)
        self._task: asyncio.Task[Any] | None = None
        self._inside = False
        self.cancel_called = False
        self.cancelled_caught = False

    def __enter__(self) -> TaskScope:
        # (given the loop, the task is found without looking the running loop up, which on
        # Python 3.11 makes a getpid system call)
        self._task = asyncio.current_task(self._loop)
        self._inside = True
        if self.cancel_called and self._task is not None:  # cancelled before it started
            self._task.cancel()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        self._inside = False
        if self.cancel_called and exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+: the task is no longer cancelling
            if uncancel is not None:
                uncancel()
            self.cancelled_caught = True
            return True
        return False

    def cancel(self) -> None:
        if self.cancel_called:
            return
        self.cancel_called = True
        if self._inside and self._task is not None:
            self._task.cancel()


@dataclass
class IncomingRequest:
    """A request from the peer, as the routing code sees it."""

    id: RequestId
    method: str
    params: dict[str, Any] | None
    context: TransportContext
    cancel_scope: anyio.CancelScope | TaskScope = field(default_factory=anyio.CancelScope)
    route: Route | None = None  # set by a transport that routed the request already

    @property
    def meta(self) -> dict[str, Any]:
        meta = (self.params or {}).get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> RequestId | None:
        token = self.meta.get("progressToken")
        return token if wire.is_request_id(token) else None


class Session:
    """One connection. Subclasses implement `handle_request` and `handle_notification`."""

    side: ClassVar[str] = "?"  # "client" or "server": who we are

    def __init__(
        self,
        transport: Transport | None,
        *,
        request_timeout: float | None = 60.0,
        max_message_bytes: int | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_backlog: int | None = None,
    ) -> None:
        self.transport = transport
        self.context = transport.context if transport is not None else NO_TRANSPORT
        self.request_timeout = request_timeout
        self.max_message_bytes = max_message_bytes or (
            transport.max_message_bytes if transport else DEFAULT_MAX_MESSAGE_BYTES
        )
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        if max_backlog is not None and max_backlog < 0:
            raise ValueError("max_backlog must not be negative")
        self.max_backlog = max_in_flight if max_backlog is None else max_backlog
        # Requests past max_in_flight, parked in arrival order (the reader goes on reading meanwhile).
        self._backlog: OrderedDict[RequestId, IncomingRequest] = OrderedDict()
        self._waiting_here = 0  # serve_here callers (asyncio HTTP POSTs) waiting for room
        # Those callers by request id (a peer's `notifications/cancelled` drops them as it drops parked ones).
        self._here: dict[RequestId, list[IncomingRequest]] = {}
        self.calls = Correlation(self.side)
        self._in_flight: dict[RequestId, IncomingRequest] = {}
        self._task_group: TaskGroup | None = None
        self._on_asyncio = False  # (set as `run` starts)
        self._loop: asyncio.AbstractEventLoop | None = None  # the asyncio loop it runs on (set as `run` starts)
        # On asyncio, requests from the peer run on plain loop tasks (cheaper than the task group's,
        # which wraps each in a cancel scope and an event); the session waits for them as the group would.
        self._tasks: set[asyncio.Task[None]] = set()
        # Our pipe takes a message at once when it has room: a request is queued without a send coroutine.
        send = transport.send if transport is not None else None
        self._send_now = send.send_nowait if isinstance(send, PipeSend) else None
        self._room: anyio.Event | None = None  # set when a request finishes while a POST or `drain` waits
        self._is_closed = False
        self.callbacks = OrderedWorker("notification callbacks", mark=True, buffer=CALLBACK_BUFFER)
        self.bad_frames = 0  # messages from the peer that were not JSON-RPC at all

    # -- hooks for subclasses --------------------------------------------------------------

    async def handle_request(self, request: IncomingRequest) -> Any:
        """Serve one request; return the result object (a dict or a model) or raise `McpError`."""
        raise McpError(f"method not found: {request.method}", code=-32601)

    async def handle_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        """Act on one notification from the peer (cancel and progress are handled already)."""

    def can_cancel(self, method: str) -> bool:
        """May we send `notifications/cancelled` for an outgoing request of `method`?"""
        return True

    def accepts_cancel(self, incoming: IncomingRequest) -> bool:
        """May the peer cancel this request (legacy `initialize` may not be cancelled)?"""
        return True

    def on_closed(self) -> None:
        """Called once when the transport has closed."""

    # -- running ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._is_closed

    @property
    def in_flight(self) -> int:
        """Requests from the peer being served now."""
        return len(self._in_flight)

    @property
    def backlog(self) -> int:
        """Requests from the peer waiting for room (past `max_in_flight`)."""
        return len(self._backlog) + self._waiting_here

    @property
    def pending(self) -> int:
        """Our requests waiting for the peer's answer."""
        return len(self.calls.pending)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch messages until the transport closes."""
        if self.transport is None:
            raise RuntimeError("this session has no transport to read; feed it with serve_inline()")
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            self._loop = running_loop()
            self._on_asyncio = self._loop is not None
            self.callbacks.attach(tg)
            self.attach(tg)
            task_status.started()
            try:
                receive = self.transport.receive.receive  # (not `async for`: one frame less per message)
                try:
                    while True:
                        await self.receive(await receive())
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                finally:
                    self.close()
                    with anyio.CancelScope(shield=True):
                        await self.transport.receive.aclose()  # the reader's end: nothing reads it after this
                        await self._refuse_parked()
                await self._join_tasks()
                await self.settle()
            except BaseException:
                await self._join_tasks(cancel=True)  # the session is cancelled (or failed): so are its requests
                raise
        self._task_group = None

    def attach(self, task_group: TaskGroup) -> None:
        """Called as `run` starts, with the session's task group (where its callbacks and, off
        asyncio, the peer's requests run): a subclass may run workers of its own there."""

    async def settle(self) -> None:
        """Called once the reader is done and the requests on loop tasks have finished, still inside
        the session's task group (which then waits for whatever still runs there)."""

    async def drain(self) -> None:
        """Wait for the peer's requests still finishing in the task group (off asyncio) and for the
        callbacks queued before the end: what the task group would wait for on its own."""
        while self._in_flight:
            await self._shared_room().wait()
        await self.callbacks.join()

    async def _join_tasks(self, *, cancel: bool = False) -> None:
        """Wait for the requests running on loop tasks (as a task group waits for its tasks); when
        `cancel`, or when this wait is cancelled, cancel them first."""
        if not self._tasks:
            return
        if not cancel:
            try:
                while self._tasks:
                    await asyncio.wait(list(self._tasks))
                return
            except BaseException:
                await self._join_tasks(cancel=True)
                raise
        for task in self._tasks:
            task.cancel()
        with anyio.CancelScope(shield=True):
            while self._tasks:
                await asyncio.wait(list(self._tasks))

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:  # what a task group does with a failed task: the session fails with it
            if self._task_group is not None:
                self._task_group.start_soon(_reraise, error)
            else:  # pragma: no cover - tasks are joined before the group closes
                log.error("a request task failed after its session ended", exc_info=error)

    def close(self) -> None:
        """End the session now, as when its input ends: it is closed and the peer's requests
        running are cancelled; those waiting for room (parked, or POSTs waiting in their own
        tasks) are not served but refused as requests coming after the end. For an end decided
        beside the input (an HTTP DELETE)."""
        self._close()
        for incoming in list(self._in_flight.values()):
            incoming.cancel_scope.cancel()

    async def _refuse_parked(self) -> None:
        """The session ended: the parked requests are refused as requests coming after the end (by
        the reader as it stops, shielded: a cancelled refusal would leave a response half sent)."""
        while self._backlog:
            _, incoming = self._backlog.popitem(last=False)
            await self._refuse_ended(incoming.id, incoming.context.reply)

    def _close(self) -> None:
        if self._is_closed:
            return
        self._is_closed = True
        self.callbacks.close()
        self.calls.close(lambda method: ConnectionClosed(f"the connection closed before {method} was answered"))
        self.on_closed()

    def defer(self, callback: Callable[..., Awaitable[Any] | Any], *args: Any) -> None:
        """Run user code (a notification callback) after the reader, in order, on one worker task:
        the reader never waits on it, so the callback may itself make requests on this session."""
        self.callbacks.submit(callback, *args)

    # -- outgoing ----------------------------------------------------------------------------

    async def send_message(
        self, message: Mapping[str, Any], *, route: ReplyRoute | None = None, final: bool = False
    ) -> None:
        """Encode and send one message: on `route` when given, else on the transport.

        Raises `MessageTooLarge` (nothing sent) over the size limit, `ConnectionClosed` when the
        connection is gone, ValueError/TypeError when the message cannot be encoded.
        """
        item = self._encode(message, route)
        if final and route is None and self._send_now is not None:
            try:  # a reply is the last thing its task does: queued at once when the pipe has room
                self._send_now(item)
                return
            except anyio.WouldBlock:
                pass
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                raise ConnectionClosed("the connection is closed") from exc
        await self._deliver(item, route, final)

    def _encode(self, message: Mapping[str, Any], route: ReplyRoute | None) -> Outgoing:
        data = wire.dumps(message)
        if len(data) > self.max_message_bytes:
            raise MessageTooLarge(f"a {len(data)}-byte message is over the {self.max_message_bytes}-byte limit")
        if route is None and self._is_closed:
            raise ConnectionClosed("the connection is closed")
        return Outgoing(data, message=message)

    async def _deliver(self, item: Outgoing, route: ReplyRoute | None, final: bool) -> None:
        try:
            if route is not None:
                await route.send(item, final=final)
            elif self.transport is not None:
                await self.transport.send.send(item)
            else:
                raise ConnectionClosed("this message has nowhere to go (no transport, no reply route)")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise ConnectionClosed("the connection is closed") from exc

    async def send_notification(
        self, method: str, params: Mapping[str, Any] | None = None, *, route: ReplyRoute | None = None
    ) -> None:
        await self.send_message(wire.notification(method, params), route=route)

    def next_id(self) -> int:
        """Reserve a request id (for callers that must know it before the request is sent)."""
        return self.calls.next_id()

    async def send_request(  # noqa: PLR0913 - every keyword is a documented option
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
        route: ReplyRoute | None = None,
        sent: anyio.Event | None = None,
    ) -> Any:
        """Send a request and wait for its result (a parsed JSON value); raise `McpError` on an error reply.

        The timeout is a deadline for the whole call, the send included (stopped while the transport
        reports the call held up by an authorization, then restarted); `sent` is set once the
        request is on its way. On timeout or
        cancellation the peer is told (`notifications/cancelled`, where the protocol allows it)
        without holding the caller, and `RequestTimeout` (or the cancellation) propagates. On a
        closed session (a reply route given or not) it fails at once with `ConnectionClosed`.
        """
        if self._is_closed:  # (checked here for a reply route's call too: nothing would ever answer it)
            raise ConnectionClosed(f"the connection is closed: {method} was not sent")
        if request_id is None:
            request_id = self.calls.next_id()
        pending = self.calls.open(request_id, method, on_progress)
        body: dict[str, Any] | None = dict(params) if params is not None else None
        if pending.token is not None:
            body = dict(body or {})
            body["_meta"] = {**(body.get("_meta") or {}), "progressToken": pending.token}
        limit = self.request_timeout if isinstance(timeout, _Default) else timeout
        try:
            item = self._encode(wire.request(request_id, method, body), route)
        except BaseException:
            self.calls.discard(request_id)
            raise
        loop = self._queue_now(item, request_id, pending) if route is None else None
        if loop is not None:
            await self._await_answer(loop, request_id, method, pending, limit, sent)
        else:
            await self._send_and_wait(item, request_id, method, pending, limit, route, sent)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _queue_now(self, item: Outgoing, request_id: RequestId, pending: Pending) -> asyncio.AbstractEventLoop | None:
        """Give the call its waiter, and on asyncio with a pipe that has room, queue the request at
        once: the loop when it is queued (wait with `_await_answer`), else None (`_send_and_wait`)."""
        loop = running_loop() if self._send_now is not None else None
        if loop is None:
            pending.waiter = new_waiter()
            return None
        pending.waiter = loop.create_future()
        try:
            self._send_now(item)  # type: ignore[misc]
        except anyio.WouldBlock:
            return None  # the pipe is full: send it the general way, which waits for room
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            self.calls.discard(request_id)
            raise ConnectionClosed("the connection is closed") from exc
        return loop

    async def _send_and_wait(  # noqa: PLR0913
        self,
        item: Outgoing,
        request_id: RequestId,
        method: str,
        pending: Pending,
        limit: float | None,
        route: ReplyRoute | None,
        sent: anyio.Event | None,
    ) -> None:
        """Send the request (waiting for room) and wait for its answer, all within one cancel scope
        for the deadline (any backend, any transport or reply route)."""
        if pending.waiter is None:  # a reply route's request (`_queue_now` gives the others theirs)
            pending.waiter = new_waiter()
        was_sent = False
        try:
            with anyio.fail_after(limit if limit is not None else math.inf) as deadline:
                pending.deadline, pending.limit = deadline, limit
                await self._deliver(item, route, False)
                was_sent = True
                if sent is not None:
                    sent.set()
                await wait(pending.waiter)
        except TimeoutError:
            if was_sent:
                self._cancel_remote(request_id, method, f"timed out after {limit} s", route)
            raise RequestTimeout(f"{method} timed out after {limit} s") from None
        except anyio.get_cancelled_exc_class():
            if was_sent:
                self._cancel_remote(request_id, method, "cancelled by the caller", route)
            raise
        finally:
            self.calls.discard(request_id)
        if pending.barrier > self.callbacks.done:
            await self.callbacks.catch_up(pending.barrier, timeout=limit)

    async def _await_answer(  # noqa: PLR0913
        self,
        loop: asyncio.AbstractEventLoop,
        request_id: RequestId,
        method: str,
        pending: Pending,
        limit: float | None,
        sent: anyio.Event | None,
    ) -> None:
        """The asyncio path of `send_request` once the request is queued: wait on the call's loop
        future, with a timer for its deadline."""
        if sent is not None:
            sent.set()
        waiter = pending.waiter
        timer = _Timer(loop, loop.time() + limit, waiter) if limit is not None else None
        pending.deadline, pending.limit = timer, limit
        try:
            await waiter
        except asyncio.CancelledError:
            self._cancel_remote(request_id, method, "cancelled by the caller", None)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self.calls.discard(request_id)
        if not pending.settled:  # the timer woke us
            self._cancel_remote(request_id, method, f"timed out after {limit} s", None)
            raise RequestTimeout(f"{method} timed out after {limit} s")
        if pending.barrier > self.callbacks.done:
            await self.callbacks.catch_up(pending.barrier, timeout=limit)

    def _cancel_remote(self, request_id: RequestId, method: str, reason: str, route: ReplyRoute | None) -> None:
        """Tell the peer, in the background: a peer that stopped reading cannot hold the caller."""
        if self._is_closed or self._task_group is None or not self.can_cancel(method):
            return
        self._task_group.start_soon(self._send_cancel, request_id, reason, route)

    async def _send_cancel(self, request_id: RequestId, reason: str, route: ReplyRoute | None) -> None:
        with anyio.move_on_after(self.request_timeout if self.request_timeout is not None else 30.0):
            try:
                params = {"requestId": request_id, "reason": reason}
                await self.send_notification("notifications/cancelled", params, route=route)
            except McpRuntimeError:
                pass

    # -- incoming ----------------------------------------------------------------------------

    async def receive(self, item: Inbound) -> None:
        """Handle one message from the transport (requests start on their own task)."""
        if isinstance(item, Oversized):
            await self._on_oversized(item)
            return
        if isinstance(item, Failure):
            self._on_failure(item)
            return
        if isinstance(item, Authorizing):
            self.calls.authorizing(item.request_id, item.active)
            item.applied.set()
            return
        data, context = item.data, item.context or self.context
        if len(data) > self.max_message_bytes:
            await self._on_oversized(Oversized(len(data), self.max_message_bytes, data[:HEAD_BYTES], context))
            return
        message = item.decoded if item.decoded is not None else wire.decode(data)
        if isinstance(message, wire.Invalid):
            if message.response_to is not None:
                self._on_damaged_answer(message.response_to, message.message)
                return
            if message.code == PARSE_ERROR:
                self.bad_frames += 1
            await self._refuse(message, context)
        elif isinstance(message, wire.Response):
            self.calls.answer(message, self.callbacks.queued)
        elif isinstance(message, wire.Notification):
            await self._on_notification(message.method, message.params, context)
        else:
            await self._start(message, context)

    async def _refuse(self, invalid: wire.Invalid, context: TransportContext) -> None:
        if not invalid.answer:
            log.warning("ignored a message: %s", invalid.message)
            return
        await self._reply_quietly(wire.error(invalid.id, invalid.code, invalid.message), context.reply)

    async def _reply_quietly(self, message: Mapping[str, Any], route: ReplyRoute | None) -> None:
        try:
            await self.send_message(message, route=route, final=True)
        except McpRuntimeError:
            pass

    async def _on_oversized(self, item: Oversized) -> None:
        context = item.context or self.context
        request_id, is_request = wire.partial_id(item.head)
        log.warning("dropped a message of at least %d bytes (limit %d)", item.size_at_least, item.limit)
        waiting = self.calls.pending.get(request_id) if request_id is not None and not is_request else None
        if waiting is not None and request_id is not None:  # an answer to our call: fail the call, do not drop it
            limit = f"over the {item.limit}-byte message limit"
            self.calls.fail(
                request_id, RemoteProtocolError(f"the answer to {waiting.method} was {limit} and was dropped")
            )
            return
        message = f"message too large: over {item.limit} bytes"
        reply = wire.error(request_id if is_request else None, INVALID_REQUEST, message, {"limit": item.limit})
        await self._reply_quietly(reply, context.reply)

    def _on_damaged_answer(self, request_id: RequestId, problem: str) -> None:
        """An answer to our call that could not be read: fail the call, do not leave it waiting."""
        waiting = self.calls.pending.get(request_id)
        if waiting is None:
            log.warning("ignored an unreadable response to unknown request %r: %s", request_id, problem)
            return
        self.calls.fail(request_id, RemoteProtocolError(f"the answer to {waiting.method} could not be read: {problem}"))

    def _on_failure(self, failure: Failure) -> None:
        """The transport could not get our call an answer: fail the call with its reason."""
        error = failure.error
        if not self.calls.fail(
            failure.request_id, error if isinstance(error, McpRuntimeError) else ConnectionClosed(str(error))
        ):
            log.debug("ignored a transport failure for unknown or finished request %r", failure.request_id)

    async def _start(self, request: wire.Request, context: TransportContext) -> None:
        if len(self._in_flight) >= self.max_in_flight:  # no room: park it, keep reading
            await self._park(request, context)
            return
        if self._is_closed:  # ended (`close`) before the reader got here: a request coming after the end
            await self._refuse_ended(request.id, context.reply)
            return
        if request.id in self._in_flight:
            await self._refuse_reused_id(request, context)
            return
        assert self._task_group is not None
        loop = running_loop()
        if loop is None:
            incoming = IncomingRequest(request.id, request.method, request.params, context)
            self._in_flight[request.id] = incoming
            self._task_group.start_soon(self._serve_registered, incoming)
            return
        incoming = IncomingRequest(request.id, request.method, request.params, context, TaskScope())
        self._in_flight[request.id] = incoming
        task = loop.create_task(self._serve_registered(incoming))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _launch(self, incoming: IncomingRequest, loop: asyncio.AbstractEventLoop | None) -> None:
        """Start a parked request (as `_start` starts one that found room)."""
        assert self._task_group is not None
        self._in_flight[incoming.id] = incoming
        if loop is None:
            self._task_group.start_soon(self._serve_registered, incoming)
            return
        task = loop.create_task(self._serve_registered(incoming))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    async def _park(self, request: wire.Request, context: TransportContext) -> None:
        """Past `max_in_flight`: into the backlog (started as room frees), or refused when it is full."""
        if self._is_closed:
            await self._refuse_ended(request.id, context.reply)
            return
        if request.id in self._in_flight or request.id in self._backlog:
            await self._refuse_reused_id(request, context)
            return
        if self.backlog >= self.max_backlog:
            await self._refuse_overloaded(request, context)
            return
        scope = TaskScope() if running_loop() is not None else anyio.CancelScope()
        self._backlog[request.id] = IncomingRequest(request.id, request.method, request.params, context, scope)

    async def _refuse_overloaded(self, request: wire.Request, context: TransportContext) -> None:
        log.warning("refused a %s request: %d running, %d waiting", request.method, self.in_flight, self.backlog)
        message = (
            f"too many requests: {self.max_in_flight} running and {self.max_backlog} waiting "
            f"(max_in_flight={self.max_in_flight}, max_backlog={self.max_backlog}); retry once answers arrive"
        )
        data = {"maxInFlight": self.max_in_flight, "maxBacklog": self.max_backlog}
        await self._reply_quietly(wire.error(request.id, SERVER_OVERLOADED, message, data), context.reply)
        if context.reply is not None:
            context.reply.request_ended()

    def _start_parked(self) -> None:
        """Room freed: start the parked requests in arrival order while there is room."""
        backlog = self._backlog
        loop = running_loop()
        while backlog and len(self._in_flight) < self.max_in_flight and not self._is_closed:
            _, incoming = backlog.popitem(last=False)
            if incoming.id in self._in_flight:  # taken meanwhile by a request served in its own task
                assert self._task_group is not None
                self._task_group.start_soon(self._refuse_parked_reuse, incoming)
                continue
            self._launch(incoming, loop)

    async def _refuse_parked_reuse(self, incoming: IncomingRequest) -> None:
        request = wire.Request(incoming.id, incoming.method, incoming.params)
        try:
            await self._refuse_reused_id(request, incoming.context)
        finally:
            if incoming.context.reply is not None:
                incoming.context.reply.request_ended()

    def _drop_parked(self, target: RequestId) -> bool:
        """A `notifications/cancelled` for a request waiting for room (parked, or a `serve_here`
        caller waiting in its own task): dropped, unanswered."""
        incoming = self._backlog.get(target)
        if incoming is None:
            waiting = [waiting for waiting in self._here.get(target, ()) if self.accepts_cancel(waiting)]
            for each in waiting:  # (its caller ends the request: `serve_here`)
                each.cancel_scope.cancel()
            return bool(waiting)
        if not self.accepts_cancel(incoming):
            return False
        del self._backlog[target]
        if incoming.context.reply is not None:
            incoming.context.reply.request_ended()
        return True

    async def serve_here(self, request: wire.Request, context: TransportContext) -> bool:
        """Serve a request from the peer in the calling task, as `_start` would on a task of its
        own (used on asyncio): a reply route's task (a handshake-era HTTP POST) waits for its
        answer anyway. It is in flight meanwhile (the peer cancels it, closing the session cancels
        it); past `max_in_flight` it waits for room, counted in the backlog (a cancellation drops
        it, unanswered). False, with nothing done, when the session is not running (not yet, or
        no more)."""
        if self._task_group is None or self._is_closed:
            return False
        if len(self._in_flight) >= self.max_in_flight:
            if self.backlog >= self.max_backlog:  # the reader's rule: refused
                await self._refuse_overloaded(request, context)
                return True
            if await self._wait_here(request, context):  # cancelled by the peer meanwhile: no answer
                if context.reply is not None:
                    context.reply.request_ended()
                return True
            if self._is_closed:  # it ended while this waited: as for a request coming after the end
                return False
        if request.id in self._in_flight:  # (checked after the wait: a request waiting with it may have it now)
            await self._refuse_reused_id(request, context)
            return True
        scope = TaskScope(self._loop) if self._on_asyncio else anyio.CancelScope()  # (any backend)
        incoming = IncomingRequest(request.id, request.method, request.params, context, scope)
        self._in_flight[request.id] = incoming
        await self._serve_registered(incoming)
        return True

    async def _wait_here(self, request: wire.Request, context: TransportContext) -> bool:
        """`serve_here` past `max_in_flight`: wait for room in the caller's task, counted in the
        backlog. True when a `notifications/cancelled` for its id dropped it meanwhile (as a parked
        request is dropped), also when the drop came as room freed, before this task resumed."""
        waiting = IncomingRequest(request.id, request.method, request.params, context)
        self._here.setdefault(request.id, []).append(waiting)
        self._waiting_here += 1
        try:
            with waiting.cancel_scope:
                await self._wait_for_room()
        finally:
            self._waiting_here -= 1
            same_id = self._here[request.id]
            same_id.remove(waiting)
            if not same_id:
                del self._here[request.id]
        return waiting.cancel_scope.cancel_called

    async def _refuse_ended(self, request_id: RequestId, route: ReplyRoute | None) -> None:
        """A request the session ended before serving (`close` while it was parked): its route
        answers it as a request coming after the end (a pipe's is gone with the pipe)."""
        if route is None:
            return
        error = wire.error(request_id, INVALID_REQUEST, f"the session ended before request {request_id!r} could start")
        try:
            await route.refuse_ended(Outgoing(wire.dumps(error), message=error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, McpRuntimeError):
            pass
        finally:
            route.request_ended()

    async def _refuse_reused_id(self, request: wire.Request, context: TransportContext) -> None:
        # Answering with this id would collide with the real answer: the error carries no id.
        log.warning("dropped a %s request reusing in-flight id %r", request.method, request.id)
        message = f"request id {request.id!r} is already in use; request dropped"
        await self._reply_quietly(wire.error(None, INVALID_REQUEST, message), context.reply)

    async def _wait_for_room(self) -> None:
        """Wait while `max_in_flight` requests run; those waiting (the reader, POST tasks) share one event."""
        while len(self._in_flight) >= self.max_in_flight:
            await self._shared_room().wait()

    def _shared_room(self) -> anyio.Event:
        """The event the next finishing request sets, one for every task waiting for a request to
        finish (making a new one would strand those waiting on the current one)."""
        room = self._room
        if room is None or room.is_set():
            room = self._room = anyio.Event()
        return room

    async def _serve_registered(self, incoming: IncomingRequest) -> None:
        try:
            await self.serve(incoming)
        finally:
            self._in_flight.pop(incoming.id, None)
            if self._backlog:
                self._start_parked()
            if self._room is not None:
                self._room.set()

    async def serve(self, incoming: IncomingRequest) -> None:
        """Run the handler for one request and send its reply (none if the request was cancelled);
        then tell its reply route the request is over. A request-scoped transport calls this in
        its own task: cancelling that task cancels the handler, and nothing is sent after that."""
        reply: dict[str, Any] | None = None
        try:
            with incoming.cancel_scope:
                try:
                    result = await self.handle_request(incoming)
                    reply = wire.result(incoming.id, result if type(result) is dict else wire.to_wire(result))
                except McpError as exc:
                    reply = wire.error(incoming.id, exc.code, exc.message, exc.data)
                except anyio.get_cancelled_exc_class():
                    if incoming.cancel_scope.cancel_called or anyio.current_effective_deadline() == -math.inf:
                        raise  # the request or the session is being cancelled: ours, so it propagates
                    log.warning(
                        "the handler for %s was cancelled from outside; answering with an error", incoming.method
                    )
                    reply = wire.error(
                        incoming.id, INTERNAL_ERROR, f"Internal error: the {incoming.method} handler was cancelled"
                    )
                except Exception as exc:
                    log.exception("handler for %s failed", incoming.method)
                    reply = wire.error(incoming.id, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
            if incoming.cancel_scope.cancelled_caught or reply is None:
                return  # cancelled by the peer: no response
            await self._send_reply(incoming, reply)
        finally:
            if incoming.context.reply is not None:
                incoming.context.reply.request_ended()

    async def _send_reply(self, incoming: IncomingRequest, reply: dict[str, Any]) -> None:
        route = incoming.context.reply
        try:
            if route is None:
                await self.send_message(reply, route=route, final=True)
            else:  # `send_message` on a reply route, without its two frames (every HTTP POST's answer)
                item = self._encode(reply, route)
                try:
                    await route.send(item, final=True)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
                    raise ConnectionClosed("the connection is closed") from exc
            return
        except ConnectionClosed:
            return
        except MessageTooLarge as exc:
            log.error("the reply to %s is too large: %s", incoming.method, exc)
            error = wire.error(incoming.id, INTERNAL_ERROR, f"Internal error: the reply is too large: {exc}")
        except (ValueError, TypeError) as exc:  # not serialisable: the handler's bug, not the session's end
            log.error("could not encode the reply to %s: %s", incoming.method, exc)
            error = wire.error(incoming.id, INTERNAL_ERROR, f"Internal error: the reply could not be encoded: {exc}")
        await self._reply_quietly(error, route)

    async def _on_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        if method == "notifications/cancelled":
            target = (params or {}).get("requestId")
            incoming = self._in_flight.get(target) if wire.is_request_id(target) else None
            if incoming is not None:
                if self.accepts_cancel(incoming):
                    incoming.cancel_scope.cancel()
            elif (self._backlog or self._here) and wire.is_request_id(target):
                self._drop_parked(target)
        elif method == "notifications/progress":
            await self.calls.progress(params or {})
            return
        try:
            await self.handle_notification(method, params, context)
        except McpError as exc:
            log.warning("ignored %s notification: %s", method, exc)
        except Exception:
            log.exception("notification handler for %s failed", method)


async def _reraise(error: BaseException) -> None:
    raise error
