"""Streamable HTTP, the client side: `http(url)` is a `Connector` for a remote MCP server.

    async with Client("https://example.com/mcp") as client: ...       # or Client(http(url, auth=...))

Each message the session sends is a POST of its own to the endpoint. A request's answer comes
back as one JSON object or as an SSE stream (the notifications related to it, then the response);
a notification or a response gets `202 Accepted`. What else happens depends on the era of the
message, which the message itself says (a modern request names its version in `_meta`):

- Modern requests carry the routing headers: `MCP-Protocol-Version` (from `_meta`), `Mcp-Method`,
  `Mcp-Name`, and `Mcp-Param-*` for the tool arguments the tool's schema annotates (learned from
  `tools/list`, whose invalid tools are dropped). A broken response stream cannot be resumed: the
  call fails with `ResponseStreamLost` (the client sends it again). Cancelling a call closes its
  stream, which is the cancellation.
- Handshake-era messages carry `MCP-Protocol-Version` (what `initialize` agreed) and the session
  id the server gave (`Mcp-Session-Id`). After `notifications/initialized` a GET stream receives
  what the server sends outside any request (404 or 405: the server has none). A response stream
  that ends early after an event id is resumed by GET with `Last-Event-ID`, `retry` milliseconds
  after it closed. A 404 on a session means the server ended it: the call fails with
  `SessionExpired` (the client starts a new session). Closing the connection DELETEs the session.

HTTP errors become JSON-RPC errors of the call: the body's own error when it carries one,
otherwise an error naming the status (never a modern one, so a dual-era client falls back to
`initialize` on it). A request that fails because a reused pooled connection was reset is sent
again once. httpx is imported on first use (the `http` extra).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from .. import wire
from ..errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ConnectionClosed,
    McpError,
    McpRuntimeError,
    MethodNotFound,
    ResponseStreamLost,
    SessionExpired,
)
from ..registry import PROTOCOL_VERSION_KEY
from . import headers as routing
from .base import DEFAULT_MAX_MESSAGE_BYTES, HEAD_BYTES, Failure, Inbound, Oversized, Transport, TransportContext
from .sse import Event, SseParser
from .tool_headers import ToolHeaders

if TYPE_CHECKING:
    import httpx
    from anyio.abc import ObjectReceiveStream, ObjectSendStream, TaskGroup

log = logging.getLogger("mcpgen.runtime.transport.http")

HTTP = TransportContext("http")
ACCEPT = "application/json, text/event-stream"
INITIALIZE, INITIALIZED, CANCELLED = "initialize", "notifications/initialized", "notifications/cancelled"
RESUME_ATTEMPTS = 3  # consecutive reconnections that bring nothing before a stream is given up
ERROR_BODY_BYTES = 64 * 1024
DRAIN_SECONDS = 1.0  # how long the end of a stream is waited for once its answer came


@dataclass
class Http:
    """A Streamable HTTP endpoint (a `Connector`; see the module docstring).

    `auth`: an `httpx.Auth` flow (OAuth, a bearer token, ...) applied to every request.
    `headers`: extra headers on every request. `timeout`: seconds to connect, write, or wait
    for a free pooled connection; `read_timeout`: seconds a response may stay silent (a
    stream's reconnection then starts, or the call fails). `client`: an `httpx.AsyncClient` of
    your own (not closed here). `get_stream`: open the handshake era's GET stream.
    `terminate_on_close`: DELETE the handshake-era session on close. `reconnect_delay`: seconds
    before resuming a stream whose server named no `retry`.
    """

    url: str
    _: KW_ONLY
    auth: httpx.Auth | None = None
    headers: Mapping[str, str] | None = None
    timeout: float = 30.0
    read_timeout: float | None = 300.0
    client: httpx.AsyncClient | None = None
    get_stream: bool = True
    terminate_on_close: bool = True
    reconnect_delay: float = 1.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"a Streamable HTTP endpoint is an http:// or https:// URL, not {self.url!r}")
        if self.client is None and importlib.util.find_spec("httpx") is None:
            raise ImportError("Streamable HTTP needs httpx: pip install 'mcpgen[http]'")

    def __repr__(self) -> str:
        return f"http({self.url!r})"

    def connect(self) -> AbstractAsyncContextManager[Transport]:
        return self._connect()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Transport]:
        import httpx

        async with AsyncExitStack() as stack:
            client = self.client
            if client is None:
                timeout = httpx.Timeout(self.timeout, read=self.read_timeout)
                owned = httpx.AsyncClient(timeout=timeout)
                client = await stack.enter_async_context(owned)
            outgoing, from_session = anyio.create_memory_object_stream[bytes](32)
            to_session, incoming = anyio.create_memory_object_stream[Inbound](64)
            tg = await stack.enter_async_context(anyio.create_task_group())
            link = _Link(self, client, to_session, tg)
            tg.start_soon(link.pump, from_session)
            try:
                yield Transport(incoming, outgoing, self.max_message_bytes, HTTP)
            finally:
                await link.close()
                tg.cancel_scope.cancel()


def http(url: str, **options: Any) -> Http:
    """Connect to a Streamable HTTP endpoint (options: see `Http`)."""
    return Http(url, **options)


@dataclass(eq=False)
class _Exchange:
    """One request in flight: its POST (and any resumption) runs in `scope`."""

    id: wire.RequestId
    method: str
    modern: bool
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class _Link:
    """One connection's state: the handshake-era session, what `tools/list` taught, the requests
    in flight."""

    def __init__(
        self, endpoint: Http, client: httpx.AsyncClient, inbox: ObjectSendStream[Inbound], tg: TaskGroup
    ) -> None:
        import httpx

        self.endpoint, self.client, self.inbox, self.tg = endpoint, client, inbox, tg
        self.url = httpx.URL(endpoint.url)  # parsed once
        self.limit = endpoint.max_message_bytes
        self.session_id: str | None = None
        self.version: str | None = None  # what the handshake agreed (for MCP-Protocol-Version)
        self.expired = False  # the server ended the session; nothing but a new initialize can go
        self.handshake = False  # an initialize went out: responses to the server's requests may follow
        self.exchanges: dict[wire.RequestId, _Exchange] = {}
        self.tools = ToolHeaders()
        self.listening: anyio.CancelScope | None = None

    # -- outgoing ------------------------------------------------------------------------------

    async def pump(self, outgoing: ObjectReceiveStream[bytes]) -> None:
        """Send what the session writes, in order: requests each on a task of their own,
        notifications and responses one after the other."""
        async with outgoing:
            async for data in outgoing:
                message = wire.loads(data)
                method = message.get("method")
                request_id = message.get("id")
                if isinstance(method, str) and wire.is_request_id(request_id):
                    self._start(data, message, method, request_id)
                elif method == CANCELLED:
                    await self._cancel(data, message)
                else:
                    await self._post_one_way(data, message, method)

    def _start(self, data: bytes, message: dict[str, Any], method: str, request_id: wire.RequestId) -> None:
        exchange = _Exchange(request_id, method, _is_modern(message))
        superseded = self.exchanges.get(request_id)
        if superseded is not None:
            superseded.scope.cancel()
        self.exchanges[request_id] = exchange
        if method == INITIALIZE:  # a new session: the old one (and its GET stream) is over
            self.session_id, self.expired, self.handshake = None, False, True
            self._stop_listening()
        self.tg.start_soon(self._run, exchange, data, message)

    async def _cancel(self, data: bytes, message: dict[str, Any]) -> None:
        """A modern request is cancelled by closing its stream, and nothing is sent; a
        handshake-era one by `notifications/cancelled` (its stream is closed after that)."""
        params = message.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        exchange = self.exchanges.get(target) if wire.is_request_id(target) else None
        if exchange is not None and exchange.modern:
            exchange.scope.cancel()
            return
        if exchange is None and self.version is None:
            return  # no handshake-era session: nothing to tell (the answer came already)
        await self._post_one_way(data, message, CANCELLED)
        if exchange is not None:
            exchange.scope.cancel()

    async def _post_one_way(self, data: bytes, message: dict[str, Any], method: object) -> None:
        """A notification or a response: the server answers 202."""
        import httpx

        if method is None and not self.handshake:
            log.warning("not sending a response outside a handshake-era session: %r", data[:200])
            return
        try:
            response = await self._send("POST", self._headers(message, modern=_is_modern(message)), data)
        except (httpx.HTTPError, McpRuntimeError) as exc:
            log.warning("could not send %s: %s", method or "a response", exc)
            return
        try:
            if response.status_code == 404 and self.session_id is not None:
                self._session_ended()
            elif response.status_code >= 400:
                log.warning("the server refused %s: HTTP %d", method or "a response", response.status_code)
            elif method == INITIALIZED and self.endpoint.get_stream:
                self._listen()
        finally:
            await response.aclose()

    def _headers(self, message: Mapping[str, Any], *, modern: bool) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if modern:
            headers[routing.PROTOCOL_VERSION] = str(params["_meta"][PROTOCOL_VERSION_KEY])
            headers["Mcp-Method"] = str(method)
            field = routing.NAME_PARAMS.get(str(method))
            name = routing.encode_value(params.get(field)) if field is not None else None
            if name is not None:
                headers["Mcp-Name"] = name
            if method == "tools/call":
                headers.update(self.tools.headers(params))
        elif method != INITIALIZE:
            headers.update(self._session_headers())
        return headers

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    async def _send(self, method: str, headers: dict[str, str], content: bytes | None = None) -> httpx.Response:
        """Send one HTTP request, streaming its response; again once if a reused pooled
        connection turned out to be closed before any answer came."""
        import httpx

        auth: Any = self.endpoint.auth if self.endpoint.auth is not None else httpx.USE_CLIENT_DEFAULT
        if self.endpoint.headers:
            headers = {**self.endpoint.headers, **headers}
        for attempt in (1, 2):
            probe = _ReuseProbe()
            request = self.client.build_request(
                method, self.url, headers=headers, content=content, extensions={"trace": probe.trace}
            )
            try:
                return await self.client.send(request, stream=True, auth=auth)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if attempt == 2 or not probe.reused:
                    raise
                log.debug("a pooled connection was closed under %s (%s); sending it again", method, exc)
        raise AssertionError("unreachable")

    # -- one request ---------------------------------------------------------------------------

    async def _run(self, exchange: _Exchange, data: bytes, message: dict[str, Any]) -> None:
        import httpx

        try:
            with exchange.scope:
                await self._exchange(exchange, data, message)
        except httpx.HTTPError as exc:
            await self._fail(exchange, ConnectionClosed(f"{exchange.method}: HTTP transport error: {_describe(exc)}"))
        except McpRuntimeError as exc:  # from an auth flow, for instance
            await self._fail(exchange, exc)
        except Exception as exc:  # one request never takes the connection down
            log.exception("the HTTP exchange of %s failed", exchange.method)
            await self._fail(exchange, ConnectionClosed(f"{exchange.method}: {_describe(exc)}"))
        finally:
            if self.exchanges.get(exchange.id) is exchange:
                del self.exchanges[exchange.id]

    async def _exchange(self, exchange: _Exchange, data: bytes, message: dict[str, Any]) -> None:
        if self.expired and not exchange.modern and exchange.method != INITIALIZE:
            await self._fail(exchange, SessionExpired("the server ended the session; a new one must be started"))
            return
        headers = self._headers(message, modern=exchange.modern)
        sent_session = headers.get("Mcp-Session-Id")
        response = await self._send("POST", headers, data)
        try:
            status = response.status_code
            if status == 404 and sent_session is not None:
                if self.session_id == sent_session:
                    self._session_ended()
                ended = SessionExpired(f"the server ended the session (HTTP 404 on {exchange.method})")
                await self._fail(exchange, ended)
            elif status >= 300:
                await self._fail(exchange, await _http_error(response, exchange.method))
            elif status == 202:
                await self._fail(exchange, McpError(f"the server answered {exchange.method} with 202 and no response"))
            else:
                if exchange.method == INITIALIZE:
                    self._take_session_id(response)
                await self._answer(exchange, response)
        finally:
            await response.aclose()

    async def _answer(self, exchange: _Exchange, response: httpx.Response) -> None:
        kind = _content_type(response)
        if kind == "application/json":
            body = await _read(response, self.limit)
            if isinstance(body, Oversized):
                await self._put(body)
            else:
                await self._final(exchange, body)
        elif kind == "text/event-stream":
            await self._stream(exchange, response)
        else:
            await self._fail(exchange, McpError(f"the server answered {exchange.method} with content type {kind!r}"))

    async def _stream(self, exchange: _Exchange, response: httpx.Response) -> None:
        """Read a POST's event stream up to the response; resume it, or fail the call, if it ends first."""
        parser = SseParser(self.limit)
        if await self._events(exchange, response, parser):
            return
        closed_at = anyio.current_time()
        if exchange.modern:
            await self._fail(exchange, ResponseStreamLost(f"the response stream of {exchange.method} broke"))
        elif parser.last_event_id is None:
            await self._fail(exchange, ConnectionClosed(f"the server closed the stream of {exchange.method} early"))
        else:
            await self._resume(exchange, parser, closed_at)

    async def _resume(self, exchange: _Exchange, parser: SseParser, closed_at: float) -> None:
        """GET with `Last-Event-ID`, `retry` after the close, until the response comes."""
        import httpx

        idle = 0
        while idle < RESUME_ATTEMPTS:
            delay = parser.retry / 1000 if parser.retry is not None else self.endpoint.reconnect_delay
            await anyio.sleep_until(closed_at + delay)
            headers = {"Accept": "text/event-stream", "Last-Event-ID": str(parser.last_event_id)}
            headers.update(self._session_headers())
            seen = parser.dispatched
            try:
                response = await self._send("GET", headers)
            except httpx.TransportError:
                idle += 1
                closed_at = anyio.current_time()
                continue
            try:
                if response.status_code >= 300 or not _is_sse(response):
                    error = await _http_error(response, exchange.method)
                    await self._fail(exchange, ConnectionClosed(f"could not resume the stream: {error}"))
                    return
                if await self._events(exchange, response, parser):
                    return
            finally:
                await response.aclose()
            closed_at = anyio.current_time()
            idle = 0 if parser.dispatched != seen else idle + 1
        await self._fail(exchange, ConnectionClosed(f"the stream of {exchange.method} could not be resumed"))

    async def _events(self, exchange: _Exchange | None, response: httpx.Response, parser: SseParser) -> bool:
        """Deliver a stream's messages; True once the response to `exchange` came (False: the
        stream ended before it)."""
        import httpx

        chunks = response.aiter_bytes()
        try:
            async for chunk in chunks:
                for event in parser.feed(chunk):
                    if await self._event(exchange, event):
                        await _drain(chunks)
                        return True
        except httpx.TransportError as exc:
            log.debug("a stream broke: %s", _describe(exc))
        return False

    async def _event(self, exchange: _Exchange | None, event: Event) -> bool:
        if event.size_at_least:
            head = event.data.encode()[:HEAD_BYTES]
            await self._put(Oversized(event.size_at_least, self.limit, head))
            found, is_request = wire.partial_id(head)
            return exchange is not None and not is_request and found == exchange.id
        if event.event != "message" or not event.data.strip():
            return False  # a priming event, or an event type that carries no message
        data = event.data.encode()
        message = _object(data)
        if exchange is not None and message is not None:
            if "method" not in message and message.get("id") == exchange.id:
                await self._final(exchange, data, message)
                return True
            if exchange.modern and "method" in message and "id" in message:
                log.warning("ignored a %r request on a modern response stream", message.get("method"))
                return False
        await self._put(data)  # anything that is not JSON-RPC, the session answers
        return False

    async def _final(self, exchange: _Exchange, data: bytes, message: Any = None) -> None:
        """The response: learn from it what the transport needs (the agreed version, the tools'
        annotations), then hand it over."""
        if exchange.method == INITIALIZE or (exchange.modern and exchange.method == "tools/list"):
            if message is None:
                message = _object(data)
            result = message.get("result") if isinstance(message, dict) else None
            if exchange.method == INITIALIZE:
                agreed = result.get("protocolVersion") if isinstance(result, dict) else None
                self.version = agreed if isinstance(agreed, str) else self.version
            elif self.tools.learn(result):
                data = wire.dumps(message)
        await self._put(data)

    # -- the session ---------------------------------------------------------------------------

    def _take_session_id(self, response: httpx.Response) -> None:
        found = response.headers.get("mcp-session-id")
        if found is None:
            return
        if found and all(0x21 <= ord(c) <= 0x7E for c in found):
            self.session_id = found
        else:
            log.warning("ignored a session id that is not visible ASCII: %r", found)

    def _session_ended(self) -> None:
        self.session_id, self.expired = None, True
        self._stop_listening()

    def _listen(self) -> None:
        self._stop_listening()
        scope = self.listening = anyio.CancelScope()
        self.tg.start_soon(self._listen_stream, scope)

    def _stop_listening(self) -> None:
        if self.listening is not None:
            self.listening.cancel()
            self.listening = None

    async def _listen_stream(self, scope: anyio.CancelScope) -> None:
        """The GET stream: what the server sends outside any request, reconnecting after `retry`."""
        try:
            with scope:
                await self._listen_loop()
        except Exception:  # a background stream never takes the connection down
            log.exception("the GET stream failed")

    async def _listen_loop(self) -> None:
        import httpx

        parser = SseParser(self.limit)
        idle = 0
        while idle < RESUME_ATTEMPTS:
            headers = {"Accept": "text/event-stream", **self._session_headers()}
            if parser.last_event_id is not None:
                headers["Last-Event-ID"] = parser.last_event_id
            seen = parser.dispatched
            try:
                response = await self._send("GET", headers)
            except httpx.TransportError as exc:
                log.debug("the GET stream failed: %s", _describe(exc))
            else:
                try:
                    if response.status_code >= 300 or not _is_sse(response):
                        log.debug("no GET stream: HTTP %d", response.status_code)
                        return  # 405: the server offers none; 404: not here (or the session is gone)
                    await self._events(None, response, parser)
                finally:
                    await response.aclose()
            idle = 0 if parser.dispatched != seen else idle + 1
            await anyio.sleep(parser.retry / 1000 if parser.retry is not None else self.endpoint.reconnect_delay)

    async def close(self) -> None:
        """End the handshake-era session (DELETE; 405 means the server keeps it)."""
        import httpx

        self._stop_listening()
        if self.session_id is None or not self.endpoint.terminate_on_close:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.endpoint.timeout):
            try:
                response = await self._send("DELETE", self._session_headers())
                await response.aclose()
            except (httpx.HTTPError, McpRuntimeError) as exc:
                log.debug("could not end the session: %s", exc)

    # -- to the session ------------------------------------------------------------------------

    async def _put(self, item: Inbound) -> None:
        try:
            await self.inbox.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session is gone

    async def _fail(self, exchange: _Exchange, error: Exception) -> None:
        await self._put(Failure(exchange.id, error))


class _ReuseProbe:
    """Watches httpcore's trace of one request: did it go out on a connection opened before?"""

    def __init__(self) -> None:
        self.connected = False
        self.sent = False

    @property
    def reused(self) -> bool:
        return self.sent and not self.connected

    async def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name.startswith("connection.connect_tcp.") or name.startswith("connection.connect_unix_socket."):
            self.connected = True
        elif name.endswith("send_request_headers.started"):
            self.sent = True


def _is_modern(message: Mapping[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def _object(data: bytes) -> dict[str, Any] | None:
    try:
        found = wire.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _content_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "")).partition(";")[0].strip().lower()


def _is_sse(response: httpx.Response) -> bool:
    return _content_type(response) == "text/event-stream"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """The answer came: read the end of its stream (the server ends it next), so that the connection
    goes back to the pool instead of being closed. A server that keeps the stream open loses it."""
    import httpx

    left = HEAD_BYTES
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return
        except httpx.TransportError:
            return


async def _read(response: httpx.Response, limit: int) -> bytes | Oversized:
    """A response body, up to `limit` bytes (past that, only its head is kept)."""
    body = bytearray()
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size <= limit:
            body += chunk
        elif len(body) < HEAD_BYTES:
            body += chunk[: HEAD_BYTES - len(body)]
    if size > limit:
        return Oversized(size, limit, bytes(body[:HEAD_BYTES]))
    return bytes(body)


async def _http_error(response: httpx.Response, method: str) -> McpError:
    """The error a failed HTTP answer means: the JSON-RPC error in its body, or one naming the status."""
    body = await _read(response, ERROR_BODY_BYTES)
    status = response.status_code
    if isinstance(body, bytes):
        found = _object(body)
        error = found.get("error") if found is not None else None
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            return McpError.from_error(error)
    text = body.decode(errors="replace").strip()[:200] if isinstance(body, bytes) else ""
    detail = f"HTTP {status} {response.reason_phrase}" + (f": {text}" if text else "")
    if 300 <= status < 400:
        detail += f" (redirected to {response.headers.get('location')!r}; use that URL)"
    data = {"httpStatus": status}
    if status == 404:
        return MethodNotFound(f"{method}: {detail}", data=data)
    return McpError(f"{method}: {detail}", code=INVALID_REQUEST if status < 500 else INTERNAL_ERROR, data=data)
