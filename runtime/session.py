"""The session core shared by client and server: JSON-RPC 2.0 over a `Transport`.

It owns what does not depend on the side: framing and parsing, request ids (a counter, never
reused), pending requests with timeouts, cancellation both ways (`notifications/cancelled`),
progress (`progressToken` -> callback), and turning bad input into JSON-RPC errors:

- malformed JSON -> -32700 (no id); a batch (JSON array) or a non-object -> -32600;
- a message over the size limit -> -32600 (no id), dropped without being buffered;
- what a handler raises: `McpError` -> its code, anything else -> -32603.

After any of these the session keeps serving. Routing (which methods exist, params validation,
direction and capability checks) belongs to the subclasses, which read the generated tables.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from .transport import Oversized, Transport

log = logging.getLogger("mcpgen.runtime")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
RequestId = str | int


class _Default:
    """The "use the session's default" marker for timeouts."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


def dumps(message: Mapping[str, Any]) -> bytes:
    """JSON for the wire; NaN and infinities (not JSON) become null."""
    return pydantic_core.to_json(message, inf_nan_mode="null")


@dataclass
class IncomingRequest:
    """A request from the peer, as the routing code sees it."""

    id: RequestId
    method: str
    params: dict[str, Any] | None
    session: Session
    cancel_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @property
    def meta(self) -> dict[str, Any]:
        meta = (self.params or {}).get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> RequestId | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None


@dataclass
class _Pending:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: McpError | None = None
    barrier: int = 0  # callbacks queued before the response arrived


_IN_CALLBACK: contextvars.ContextVar[bool] = contextvars.ContextVar("mcpgen_in_callback", default=False)


class Session:
    """One connection. Subclasses implement `handle_request` and `handle_notification`."""

    side: str = "?"  # "client" or "server": who we are

    def __init__(
        self,
        transport: Transport,
        *,
        request_timeout: float | None = 60.0,
        max_message_bytes: int | None = None,
    ) -> None:
        self.transport = transport
        self.request_timeout = request_timeout
        self.max_message_bytes = max_message_bytes or transport.max_message_bytes
        self._ids = itertools.count(1)
        self._progress_tokens = itertools.count(1)
        self._pending: dict[RequestId, _Pending] = {}
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._in_flight: dict[RequestId, IncomingRequest] = {}
        self._task_group: TaskGroup | None = None
        self._is_closed = False
        self._deferred: MemoryObjectSendStream[tuple[Callable[..., Any], tuple[Any, ...]]] | None = None
        self._deferred_queued = 0
        self._deferred_done = 0
        self._deferred_waiters: list[tuple[int, anyio.Event]] = []
        self.bad_frames = 0  # messages from the peer that were not JSON-RPC at all

    # -- hooks for subclasses --------------------------------------------------------------

    async def handle_request(self, request: IncomingRequest) -> Any:
        """Serve one request; return the result object (a dict or a model) or raise `McpError`."""
        raise McpError(f"method not found: {request.method}", code=-32601)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        """Act on one notification from the peer (cancel and progress are handled already)."""

    def can_cancel(self, method: str) -> bool:
        """May we send `notifications/cancelled` for an outgoing request of `method`?"""
        return True

    def on_closed(self) -> None:
        """Called once when the transport has closed."""

    # -- running ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._is_closed

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch messages until the transport closes."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            task_status.started()
            try:
                async for frame in self.transport.receive:
                    await self._on_frame(frame)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                self._close_pending()
                if self._deferred is not None:
                    self._deferred.close()
                for incoming in list(self._in_flight.values()):
                    incoming.cancel_scope.cancel()
        self._task_group = None

    def defer(self, callback: Callable[..., Awaitable[Any] | Any], *args: Any) -> None:
        """Run user code (a notification callback) after the reader, in order, on one worker task:
        the reader never waits on it, so the callback may itself make requests on this session."""
        if self._deferred is None:  # started on first use: most sessions never need it
            if self._task_group is None or self._is_closed:
                return
            self._deferred, pending = anyio.create_memory_object_stream[tuple[Callable[..., Any], tuple[Any, ...]]](
                math.inf
            )
            self._task_group.start_soon(self._run_deferred, pending)
        try:
            self._deferred.send_nowait((callback, args))
            self._deferred_queued += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _run_deferred(
        self, pending: MemoryObjectReceiveStream[tuple[Callable[..., Any], tuple[Any, ...]]]
    ) -> None:
        _IN_CALLBACK.set(True)  # this task's requests need not wait for callbacks (they are the callbacks)
        async with pending:
            async for callback, args in pending:
                try:
                    outcome = callback(*args)
                    if outcome is not None and hasattr(outcome, "__await__"):
                        await outcome
                except Exception:
                    log.exception("a notification callback failed")
                finally:
                    self._deferred_done += 1
                    for target, event in list(self._deferred_waiters):
                        if target <= self._deferred_done:
                            event.set()

    async def _catch_up(self, barrier: int) -> None:
        """Wait until the callbacks of notifications that arrived before a response have run,
        so a call returns after, say, its log messages were delivered."""
        if barrier <= self._deferred_done or _IN_CALLBACK.get() or self._is_closed:
            return
        event = anyio.Event()
        entry = (barrier, event)
        self._deferred_waiters.append(entry)
        try:
            with anyio.move_on_after(30):
                await event.wait()
        finally:
            self._deferred_waiters.remove(entry)

    def _close_pending(self) -> None:
        if self._is_closed:
            return
        self._is_closed = True
        for _, event in self._deferred_waiters:
            event.set()
        for pending in self._pending.values():
            pending.error = ConnectionClosed(f"the connection closed before {pending.method} was answered")  # type: ignore[assignment]
            pending.done.set()
        self.on_closed()

    async def send_message(self, message: Mapping[str, Any]) -> None:
        if self._is_closed:
            raise ConnectionClosed("the connection is closed")
        try:
            await self.transport.send.send(dumps(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise ConnectionClosed("the connection is closed") from exc

    # -- outgoing ----------------------------------------------------------------------------

    async def send_notification(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_message(message)

    def next_id(self) -> int:
        """Reserve a request id (for callers that must know it before the request is sent)."""
        return next(self._ids)

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
    ) -> Any:
        """Send a request and wait for its result (a parsed JSON value); raise `McpError` on an error reply.

        On timeout or cancellation the peer is told (`notifications/cancelled`) where the
        protocol allows it, and `RequestTimeout` (or the cancellation) propagates.
        """
        if request_id is None:
            request_id = next(self._ids)
        body: dict[str, Any] | None = dict(params) if params is not None else None
        token: RequestId | None = None
        if on_progress is not None:
            token = f"{self.side}-progress-{next(self._progress_tokens)}"
            body = dict(body or {})
            body["_meta"] = {**(body.get("_meta") or {}), "progressToken": token}
            self._progress[token] = on_progress
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if body is not None:
            message["params"] = body
        pending = _Pending(method)
        self._pending[request_id] = pending
        limit = self.request_timeout if isinstance(timeout, _Default) else timeout
        try:
            await self.send_message(message)
            try:
                with anyio.fail_after(limit if limit is not None else math.inf):
                    await pending.done.wait()
            except TimeoutError:
                await self._cancel_remote(request_id, method, f"timed out after {limit} s")
                raise RequestTimeout(f"{method} timed out after {limit} s") from None
            except anyio.get_cancelled_exc_class():
                with anyio.move_on_after(1.0, shield=True):  # a peer that stopped reading cannot hold us
                    await self._cancel_remote(request_id, method, "cancelled by the caller")
                raise
        finally:
            self._pending.pop(request_id, None)
            if token is not None:
                self._progress.pop(token, None)
        await self._catch_up(pending.barrier)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _cancel_remote(self, request_id: RequestId, method: str, reason: str) -> None:
        if self._is_closed or not self.can_cancel(method):
            return
        try:
            await self.send_notification("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except ConnectionClosed:
            pass

    # -- incoming ----------------------------------------------------------------------------

    async def _reply_error(self, request_id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        reply: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
        if request_id is not None:
            reply["id"] = request_id
        try:
            await self.send_message(reply)
        except ConnectionClosed:
            pass

    async def _on_frame(self, frame: bytes | Oversized) -> None:
        if isinstance(frame, Oversized) or len(frame) > self.max_message_bytes:
            size = frame.size_at_least if isinstance(frame, Oversized) else len(frame)
            log.warning("dropped a %d-byte message (limit %d)", size, self.max_message_bytes)
            await self._reply_error(
                None,
                INVALID_REQUEST,
                f"message too large: over {self.max_message_bytes} bytes",
                {"limit": self.max_message_bytes},
            )
            return
        try:
            message = pydantic_core.from_json(frame, cache_strings="keys")
        except ValueError as exc:
            self.bad_frames += 1
            await self._reply_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        if isinstance(message, list):
            await self._reply_error(
                None, INVALID_REQUEST, "batch requests are not supported (JSON-RPC batching was removed from MCP)"
            )
            return
        if not isinstance(message, dict):
            await self._reply_error(None, INVALID_REQUEST, "a JSON-RPC message must be an object")
            return
        raw_id = message.get("id")
        valid_id = isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool)
        if message.get("jsonrpc") != "2.0":
            if "method" in message and "id" in message:  # only a request gets an answer
                await self._reply_error(raw_id if valid_id else None, INVALID_REQUEST, 'jsonrpc must be "2.0"')
            else:
                log.warning('ignored a message without jsonrpc "2.0"')
            return
        method = message.get("method")
        if method is None:
            self._on_response(message, raw_id if valid_id else None)
            return
        if not isinstance(method, str):
            await self._reply_error(raw_id if valid_id else None, INVALID_REQUEST, "method must be a string")
            return
        params = message.get("params")
        if "id" in message:
            if not valid_id:
                await self._reply_error(None, INVALID_REQUEST, "request id must be a string or an integer (not null)")
                return
            if params is not None and not isinstance(params, dict):
                await self._reply_error(raw_id, -32602, "params must be an object")
                return
            assert isinstance(raw_id, (str, int))
            await self._start_request(raw_id, method, params)
            return
        if params is not None and not isinstance(params, dict):
            log.warning("ignored %s notification with non-object params", method)
            return
        await self._on_notification(method, params)

    def _on_response(self, message: dict[str, Any], request_id: RequestId | None) -> None:
        if request_id is None:
            error = message.get("error")
            if isinstance(error, dict):
                log.warning("peer reported an error without an id: %s", error)
            else:
                log.warning("ignored a message that is neither request, notification nor response")
            return
        pending = self._pending.get(request_id)
        if pending is None:
            log.debug("ignored a response to unknown or finished request %r", request_id)
            return
        pending.barrier = self._deferred_queued
        if "error" in message:
            pending.error = McpError.from_error(message["error"])
        elif "result" in message:
            pending.result = message["result"]
        else:
            pending.error = McpError("malformed response: neither result nor error", code=INTERNAL_ERROR)
        pending.done.set()

    async def _start_request(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        if request_id in self._in_flight:
            # Answering with this id would collide with the real answer: the error carries no id.
            log.warning("dropped a %s request reusing in-flight id %r", method, request_id)
            await self._reply_error(
                None, INVALID_REQUEST, f"request id {request_id!r} is already in use; request dropped"
            )
            return
        incoming = IncomingRequest(request_id, method, params, self)
        self._in_flight[request_id] = incoming
        assert self._task_group is not None
        self._task_group.start_soon(self._serve, incoming)

    async def _serve(self, incoming: IncomingRequest) -> None:
        reply: dict[str, Any] | None = None
        try:
            with incoming.cancel_scope:
                try:
                    result = await self.handle_request(incoming)
                    reply = {"jsonrpc": "2.0", "id": incoming.id, "result": result}
                except McpError as exc:
                    reply = {"jsonrpc": "2.0", "id": incoming.id, "error": exc.to_error()}
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as exc:
                    log.exception("handler for %s failed", incoming.method)
                    reply = {
                        "jsonrpc": "2.0",
                        "id": incoming.id,
                        "error": {"code": INTERNAL_ERROR, "message": f"Internal error: {type(exc).__name__}: {exc}"},
                    }
            if incoming.cancel_scope.cancelled_caught:
                return  # cancelled by the peer: no response
            if reply is not None:
                await self._send_reply(incoming, reply)
        finally:
            self._in_flight.pop(incoming.id, None)

    async def _send_reply(self, incoming: IncomingRequest, reply: dict[str, Any]) -> None:
        try:
            await self.send_message(self._encode_reply(reply))
        except ConnectionClosed:
            pass
        except (ValueError, TypeError) as exc:  # not serialisable: the handler's bug, not the session's end
            log.error("could not encode the reply to %s: %s", incoming.method, exc)
            error = {"code": INTERNAL_ERROR, "message": f"Internal error: the reply could not be encoded: {exc}"}
            try:
                await self.send_message({"jsonrpc": "2.0", "id": incoming.id, "error": error})
            except (ConnectionClosed, ValueError, TypeError):
                pass

    def _encode_reply(self, reply: dict[str, Any]) -> dict[str, Any]:
        result = reply.get("result")
        if result is not None and hasattr(result, "model_dump"):
            reply["result"] = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return reply

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled":
            target = (params or {}).get("requestId")
            incoming = self._in_flight.get(target) if isinstance(target, (str, int)) else None
            if incoming is not None and self.accepts_cancel(incoming):
                incoming.cancel_scope.cancel()
            await self._maybe_handle_notification(method, params)
            return
        if method == "notifications/progress":
            token = (params or {}).get("progressToken")
            callback = self._progress.get(token) if isinstance(token, (str, int)) else None
            if callback is not None:
                progress = params.get("progress") if params else None
                if isinstance(progress, (int, float)) and not isinstance(progress, bool):
                    total = params.get("total") if params else None
                    message = params.get("message") if params else None
                    try:
                        outcome = callback(
                            float(progress),
                            float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
                            message if isinstance(message, str) else None,
                        )
                        if outcome is not None:
                            await outcome
                    except Exception:
                        log.exception("progress callback failed")
            return
        await self._maybe_handle_notification(method, params)

    def accepts_cancel(self, incoming: IncomingRequest) -> bool:
        """Whether the peer may cancel this request (legacy `initialize` may not be cancelled)."""
        return True

    async def _maybe_handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        try:
            await self.handle_notification(method, params)
        except McpError as exc:
            log.warning("ignored %s notification: %s", method, exc)
        except Exception:
            log.exception("notification handler for %s failed", method)
