"""Streamable HTTP, the client side's reading half: one connection's state, and what comes back.

`Channel` sends one HTTP request (again once, when a reused pooled connection turns out to have
been closed under it) and reads the answers: a JSON body, or an event stream whose messages go to
the session one by one up to the response, with its resumption (GET with `Last-Event-ID`) when a
handshake-era stream ends early; and the handshake era's GET stream. `connector` builds the
connection on it (see there for the whole picture).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ...core.sse import SseEvent, SseParser
from ...core.transport import AUTHORIZING_EXTENSION, HEAD_BYTES, Authorizing, Failure, Frame, Inbound, Oversized
from ...protocol import wire
from ...protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    AuthorizationRequired,
    ConnectionClosed,
    McpError,
    MethodNotFound,
    RemoteProtocolError,
    ResponseStreamLost,
)
from .tool_headers import ToolHeaders

if TYPE_CHECKING:
    import httpx
    from anyio.abc import ObjectSendStream, TaskGroup

    from .connector import Http

log = logging.getLogger("mcpgen.runtime.client.http")

INITIALIZE = "initialize"
RESUME_ATTEMPTS = 3  # consecutive reconnections that bring nothing before a stream is given up
HEALTHY_STREAM = 1.0  # seconds: a stream open at least this long was no flapping
MIN_RETRY = 0.1  # seconds: a server's `retry` below this, with streams that end at once, gets backoff
BACKOFF_START, BACKOFF_MAX = 0.1, 30.0  # seconds: the first backed-off delay, doubled up to the last
ERROR_BODY_BYTES = 64 * 1024
DRAIN_SECONDS = 1.0  # how long the end of a stream is waited for once its answer came


@dataclass(eq=False)
class InFlight:
    """One request in flight: its POST (and any resumption) runs in `scope`. A self-contained
    request (modern) is its own exchange; one of a session (handshake era) may be resumed."""

    id: wire.RequestId
    method: str
    self_contained: bool
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class Reconnection:
    """When to open an event stream again after it ended: after the server's `retry` (else
    `default`), except when streams keep ending at once and the server asks for (almost) no
    delay, which would reconnect without bound: then after a delay that doubles each time
    (`BACKOFF_START` up to `BACKOFF_MAX`), until a stream stays open or the server asks for a
    real delay again."""

    def __init__(self, default: float) -> None:
        self.default = default
        self.streak = 0  # streams in a row that ended at once with (almost) no retry asked

    def delay(self, retry_ms: int | None, lifetime: float) -> float:
        asked = retry_ms / 1000 if retry_ms is not None else self.default
        if lifetime >= HEALTHY_STREAM or asked >= MIN_RETRY:
            self.streak = 0
            return asked
        self.streak += 1
        return max(asked, min(BACKOFF_START * 2.0 ** (self.streak - 1), BACKOFF_MAX))


class Channel:
    """One connection to the endpoint: its handshake-era session, what `tools/list` taught,
    the requests in flight; sending, and reading what comes back."""

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
        self.reached = False  # the endpoint answered a request with success at least once
        self.handshake = False  # an initialize went out: responses to the server's requests may follow
        self.exchanges: dict[wire.RequestId, InFlight] = {}
        self.tools = ToolHeaders()
        self.listening: anyio.CancelScope | None = None

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    async def _send(
        self, method: str, headers: dict[str, str], content: bytes | None = None, *, request_id: Any = None
    ) -> httpx.Response:
        """Send one HTTP request, streaming its response; again once if a reused pooled
        connection turned out to be closed before any answer came. An authorization flow that
        holds up our request `request_id` says so (`Authorizing`), so its timeout stops meanwhile."""
        import httpx

        auth: Any = self.endpoint.auth if self.endpoint.auth is not None else httpx.USE_CLIENT_DEFAULT
        if self.endpoint.headers:
            headers = {**self.endpoint.headers, **headers}
        extensions: dict[str, Any] = {}
        if request_id is not None:

            async def authorizing(active: bool) -> None:
                """Tell the session; return once it stopped (or restarted) the call's timeout."""
                item = Authorizing(request_id, active)
                if await self._put(item):
                    await item.applied.wait()

            extensions[AUTHORIZING_EXTENSION] = authorizing
        for attempt in (1, 2):
            probe = _ReuseProbe()
            request = self.client.build_request(
                method, self.url, headers=headers, content=content, extensions={**extensions, "trace": probe.trace}
            )
            try:
                return await self.client.send(request, stream=True, auth=auth)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if attempt == 2 or not probe.reused:
                    raise
                log.debug("a pooled connection was closed under %s (%s); sending it again", method, exc)
        raise AssertionError("unreachable")

    async def _answer(self, exchange: InFlight, response: httpx.Response) -> None:
        kind = _content_type(response)
        if kind == "application/json":
            body = await _read(response, self.limit)
            if isinstance(body, Oversized):  # this body answers this request, whatever its first bytes say
                limit = f"the {self.limit}-byte message limit"
                await self._fail(exchange, RemoteProtocolError(f"the answer to {exchange.method} was over {limit}"))
                return
            message = _object(body)
            error = message.get("error") if message is not None and message.get("id") is None else None
            if isinstance(error, dict) and isinstance(error.get("code"), int):
                await self._fail(exchange, McpError.from_error(error))  # it could not read our request at all
                return
            problem = _not_the_response(exchange, body, message)
            if problem is not None:  # the exchange is over: the call fails now rather than waiting for ever
                what = f"the server answered {exchange.method} (HTTP {response.status_code}) with {problem}"
                await self._fail(exchange, RemoteProtocolError(f"{what}, not its response"))
            else:
                await self._final(exchange, body, message)
        elif kind == "text/event-stream":
            await self._stream(exchange, response)
        else:
            await self._fail(exchange, McpError(f"the server answered {exchange.method} with content type {kind!r}"))

    async def _stream(self, exchange: InFlight, response: httpx.Response) -> None:
        """Read a POST's event stream up to the response; resume it, or fail the call, if it ends first."""
        parser = SseParser(self.limit)
        if await self._events(exchange, response, parser):
            return
        closed_at = anyio.current_time()
        if exchange.self_contained:
            await self._fail(exchange, ResponseStreamLost(f"the response stream of {exchange.method} broke"))
        elif parser.last_event_id is None:
            await self._fail(exchange, ConnectionClosed(f"the server closed the stream of {exchange.method} early"))
        else:
            await self._resume(exchange, parser, closed_at)

    async def _resume(self, exchange: InFlight, parser: SseParser, closed_at: float) -> None:
        """GET with `Last-Event-ID`, `retry` after the close, until the response comes."""
        import httpx

        idle = 0
        reconnection = Reconnection(self.endpoint.reconnect_delay)
        opened_at = closed_at
        while idle < RESUME_ATTEMPTS:
            await anyio.sleep_until(closed_at + reconnection.delay(parser.retry, closed_at - opened_at))
            headers = {"Accept": "text/event-stream", "Last-Event-ID": str(parser.last_event_id)}
            headers.update(self._session_headers())
            seen = parser.dispatched
            opened_at = anyio.current_time()
            try:
                response = await self._send("GET", headers)
            except httpx.TransportError:
                idle += 1
                closed_at = anyio.current_time()
                continue
            try:
                if response.status_code >= 300 or not _is_sse(response):
                    error = await http_error(response, exchange.method)
                    await self._fail(exchange, ConnectionClosed(f"could not resume the stream: {error}"))
                    return
                if await self._events(exchange, response, parser):
                    return
            finally:
                await response.aclose()
            closed_at = anyio.current_time()
            idle = 0 if parser.dispatched != seen else idle + 1
        await self._fail(exchange, ConnectionClosed(f"the stream of {exchange.method} could not be resumed"))

    async def _events(self, exchange: InFlight | None, response: httpx.Response, parser: SseParser) -> bool:
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
        except httpx.RequestError as exc:
            log.debug("a stream broke: %s", describe(exc))
        return False

    async def _event(self, exchange: InFlight | None, event: SseEvent) -> bool:
        if event.size_at_least:
            head = event.data.encode()[:HEAD_BYTES]
            await self._put(Oversized(event.size_at_least, self.limit, head))
            found, is_request = wire.partial_id(head)
            return exchange is not None and not is_request and found == exchange.id
        if event.event != "message" or not event.data.strip():
            return False  # a priming event, or an event type that carries no message
        data = event.data.encode()
        message = _object(data)
        if exchange is not None and message is None and wire.damaged_response(data) == exchange.id:
            problem = f"the answer to {exchange.method} on its event stream is not valid JSON"
            await self._fail(exchange, RemoteProtocolError(problem))
            return True
        if exchange is not None and message is not None:
            if "method" not in message and message.get("id") == exchange.id:
                await self._final(exchange, data, message)
                return True
            if exchange.self_contained and "method" in message and "id" in message:
                log.warning("ignored a %r request on a modern response stream", message.get("method"))
                return False
        await self._put(_frame(data, message))  # anything that is not JSON-RPC, the session answers
        return False

    async def _final(self, exchange: InFlight, data: bytes, message: Any = None) -> None:
        """The response: learn from it what the transport needs (the agreed version, the tools'
        annotations), then hand it over."""
        if message is None:
            message = _object(data)
        if exchange.method == INITIALIZE or (exchange.self_contained and exchange.method == "tools/list"):
            result = message.get("result") if isinstance(message, dict) else None
            if exchange.method == INITIALIZE:
                agreed = result.get("protocolVersion") if isinstance(result, dict) else None
                self.version = agreed if isinstance(agreed, str) else self.version
            elif self.tools.learn(result):
                data = wire.dumps(message)
        await self._put(_frame(data, message))

    async def _listen_loop(self) -> None:
        import httpx

        parser = SseParser(self.limit)
        idle = 0
        reconnection = Reconnection(self.endpoint.reconnect_delay)
        while idle < RESUME_ATTEMPTS:
            headers = {"Accept": "text/event-stream", **self._session_headers()}
            resuming = parser.last_event_id
            if resuming is not None:
                headers["Last-Event-ID"] = resuming
            seen = parser.dispatched
            opened_at = anyio.current_time()
            try:
                response = await self._send("GET", headers)
            except httpx.TransportError as exc:
                log.debug("the GET stream failed: %s", describe(exc))
            else:
                try:
                    if resuming is not None and response.status_code == 410:
                        log.warning(
                            "the server no longer has the GET stream's events after %r: some were lost", resuming
                        )
                        parser.last_event_id = None  # open it afresh
                        continue
                    if response.status_code >= 300 or not _is_sse(response):
                        log.debug("no GET stream: HTTP %d", response.status_code)
                        return  # 405: the server offers none; 404: not here (or the session is gone)
                    await self._events(None, response, parser)
                finally:
                    await response.aclose()
            idle = 0 if parser.dispatched != seen else idle + 1
            await anyio.sleep(reconnection.delay(parser.retry, anyio.current_time() - opened_at))

    async def _put(self, item: Inbound) -> bool:
        try:
            await self.inbox.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False  # the session is gone
        return True

    async def _fail(self, exchange: InFlight, error: Exception) -> None:
        await self._put(Failure(exchange.id, error))


class _ReuseProbe:
    """Watches httpcore's trace of one request: did its last sending go out on a connection opened
    before? (An authorization flow sends the same request again after a 401, perhaps on the pooled
    connection that carried the 401, which the server may have closed while the client authorized.)"""

    def __init__(self) -> None:
        self.connected = False  # a connection was opened for the sending under way
        self.reused = False

    async def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name.startswith("connection.connect_tcp.") or name.startswith("connection.connect_unix_socket."):
            self.connected = True
        elif name.endswith("send_request_headers.started"):
            self.reused, self.connected = not self.connected, False


def _frame(data: bytes, message: dict[str, Any] | None) -> Frame:
    """A message for the session, decoded already when it could be (the session decodes the rest)."""
    return Frame(data, decoded=wire.classify(message) if message is not None else None)


def _object(data: bytes) -> dict[str, Any] | None:
    try:
        found = wire.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _not_the_response(exchange: InFlight, body: bytes, message: dict[str, Any] | None) -> str | None:
    """What a JSON body that should be the exchange's response is instead (None: it is the response)."""
    if message is None:
        if not body.strip():
            return "an empty body"
        answered = wire.damaged_response(body)
        return "a response that is not valid JSON" if answered == exchange.id else "a body that is not a JSON object"
    if "method" in message:
        return f"a {'request' if 'id' in message else 'notification'} ({str(message['method'])[:100]!r})"
    if message.get("id") != exchange.id:
        return f"a response to another request (id {str(message.get('id'))[:100]!r})"
    return None


def _content_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "")).partition(";")[0].strip().lower()


def _is_sse(response: httpx.Response) -> bool:
    return _content_type(response) == "text/event-stream"


def describe(exc: BaseException) -> str:
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


def authorization_refused(response: httpx.Response, method: str) -> AuthorizationRequired | None:
    """A 401, or a 403 asking for more scope (`insufficient_scope`), that reached us: the client has
    no authorization flow, or its flow let the refusal through (a fixed token, say)."""
    status = response.status_code
    challenges = response.headers.get_list("www-authenticate")
    if status != 401 and not (status == 403 and any("insufficient_scope" in c for c in challenges)):
        return None
    what = "more scope" if status == 403 else "authorization"
    return AuthorizationRequired(
        f"{method}: the server requires {what} (HTTP {status}"
        + (f"; {challenges[0][:200]}" if challenges else "")
        + "); give the client an authorization flow, e.g. Client(url, auth=mcpgen.runtime.auth.OAuth())",
        status=status,
        challenge=", ".join(challenges) or None,
    )


async def http_error(response: httpx.Response, method: str) -> McpError:
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
