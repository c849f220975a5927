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
`initialize` on it). Authorization is the exception: `auth=` (an `httpx.Auth`, such as the OAuth
flows of `mcpgen.runtime.auth`) answers a 401 or a 403 `insufficient_scope` challenge before the
call sees it, and while it authorizes the call's timeout stops (the user may be signing in); a
refusal that still reaches the call, or an authorization that fails, fails the call with an
`AuthError`, which a negotiating client never reads as an older server. A request that fails
because a reused pooled connection was reset (on its first sending, or on the one after an
authorization) is sent again once. httpx is imported on first use (the `http` extra).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ...core.transport import DEFAULT_MAX_MESSAGE_BYTES, Inbound, Outgoing, Transport, TransportContext
from ...protocol import http_headers as routing
from ...protocol import wire
from ...protocol.eras import message_version
from ...protocol.errors import (
    METHOD_NOT_FOUND,
    ConnectionClosed,
    EndpointNotFound,
    McpError,
    McpRuntimeError,
    SessionExpired,
)
from ...protocol.tables import VersionRegistry
from .channel import INITIALIZE, Channel, InFlight, authorization_refused, describe, http_error

if TYPE_CHECKING:
    import httpx
    from anyio.abc import ObjectReceiveStream

log = logging.getLogger("mcpgen.runtime.client.http")

HTTP = TransportContext("http", request_scoped=True)
ACCEPT = "application/json, text/event-stream"
INITIALIZED, CANCELLED = "notifications/initialized", "notifications/cancelled"


@dataclass
class Http:
    """A Streamable HTTP endpoint (a `Connector`; see the module docstring).

    `auth`: an `httpx.Auth` flow (OAuth, a bearer token, ...) applied to every request.
    `headers`: extra headers on every request. `timeout`: seconds to connect, write, or wait
    for a free pooled connection; `read_timeout`: seconds a response may stay silent (a
    stream's reconnection then starts, or the call fails). `client`: an `httpx.AsyncClient` of
    your own (not closed here). `get_stream`: open the handshake era's GET stream.
    `terminate_on_close`: DELETE the handshake-era session on close; `close_timeout`: how long
    that may take (default: `timeout`; a `Client` made from a URL gives its request timeout).
    `reconnect_delay`: seconds before resuming a stream whose server named no `retry`.
    `registry`: the tables (see below).
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
    close_timeout: float | None = None
    reconnect_delay: float = 1.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    registry: VersionRegistry | None = None
    """The generated tree whose tables say which params field `Mcp-Name` mirrors for each method
    (default: the one mcpgen ships; `Client(url, registry=...)` passes its own)."""

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
            outgoing, from_session = anyio.create_memory_object_stream[Outgoing](32)
            to_session, incoming = anyio.create_memory_object_stream[Inbound](64)
            for stream in (outgoing, from_session, to_session, incoming):  # all closed at the end, however it ends
                stack.callback(stream.close)
            tg = await stack.enter_async_context(anyio.create_task_group())
            link = Connection(self, client, to_session, tg)
            tg.start_soon(link.pump, from_session)
            try:
                yield Transport(incoming, outgoing, self.max_message_bytes, HTTP)
            finally:
                await link.close()
                tg.cancel_scope.cancel()


http = Http  # `http(url, auth=..., ...)`: the connector, with every option typed
"""Connect to a Streamable HTTP endpoint (the options: see `Http`)."""


@functools.cache
def _default_registry() -> VersionRegistry:
    return VersionRegistry()


class Connection(Channel):
    """One connection: the sending half, on the reading half (`Channel`, with the state both share)."""

    # -- outgoing ------------------------------------------------------------------------------

    async def pump(self, outgoing: ObjectReceiveStream[Outgoing]) -> None:
        """Send what the session writes, in order: requests each on a task of their own,
        notifications and responses one after the other."""
        async with outgoing:
            async for item in outgoing:
                message, data = item.message, item.data
                method = message.get("method")
                request_id = message.get("id")
                if isinstance(method, str) and wire.is_request_id(request_id):
                    self._start(data, message, method, request_id)
                elif method == CANCELLED:
                    await self._cancel(data, message)
                else:
                    await self._post_one_way(data, message, method)

    def _start(self, data: bytes, message: Mapping[str, Any], method: str, request_id: wire.RequestId) -> None:
        exchange = InFlight(request_id, method, _self_contained(message))
        superseded = self.exchanges.get(request_id)
        if superseded is not None:
            superseded.scope.cancel()
        self.exchanges[request_id] = exchange
        if method == INITIALIZE:  # a new session: the old one (and its GET stream) is over
            self.session_id, self.expired, self.handshake = None, False, True
            self._stop_listening()
        self.tg.start_soon(self._run, exchange, data, message)

    async def _cancel(self, data: bytes, message: Mapping[str, Any]) -> None:
        """A modern request is cancelled by closing its stream, and nothing is sent; a
        handshake-era one by `notifications/cancelled` (its stream is closed after that)."""
        params = message.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        exchange = self.exchanges.get(target) if wire.is_request_id(target) else None
        if exchange is not None and exchange.self_contained:
            exchange.scope.cancel()
            return
        if exchange is None and self.version is None:
            return  # no handshake-era session: nothing to tell (the answer came already)
        await self._post_one_way(data, message, CANCELLED)
        if exchange is not None:
            exchange.scope.cancel()

    async def _post_one_way(self, data: bytes, message: Mapping[str, Any], method: object) -> None:
        """A notification or a response: the server answers 202."""
        import httpx

        if method is None and not self.handshake:
            log.warning("not sending a response outside a handshake-era session: %r", data[:200])
            return
        try:
            response = await self._send("POST", self._headers(message, self_contained=_self_contained(message)), data)
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

    def _headers(self, message: Mapping[str, Any], *, self_contained: bool) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if self_contained:
            headers[routing.PROTOCOL_VERSION] = str(message_version(params))
            headers["Mcp-Method"] = str(method)
            registry = self.endpoint.registry or _default_registry()
            field = registry.name_param(str(method), message_version(params))
            name = routing.encode_value(params.get(field)) if field is not None else None
            if name is not None:
                headers["Mcp-Name"] = name
            if method == "tools/call":
                headers.update(self.tools.headers(params))
        elif method != INITIALIZE:
            headers.update(self._session_headers())
        return headers

    # -- one request ---------------------------------------------------------------------------

    async def _run(self, exchange: InFlight, data: bytes, message: Mapping[str, Any]) -> None:
        import httpx

        try:
            with exchange.scope:
                await self._exchange(exchange, data, message)
        except httpx.HTTPError as exc:
            await self._fail(exchange, ConnectionClosed(f"{exchange.method}: HTTP transport error: {describe(exc)}"))
        except McpRuntimeError as exc:  # from an auth flow, for instance
            await self._fail(exchange, exc)
        except Exception as exc:  # one request never takes the connection down
            log.exception("the HTTP exchange of %s failed", exchange.method)
            await self._fail(exchange, ConnectionClosed(f"{exchange.method}: {describe(exc)}"))
        finally:
            if self.exchanges.get(exchange.id) is exchange:
                del self.exchanges[exchange.id]

    async def _exchange(self, exchange: InFlight, data: bytes, message: Mapping[str, Any]) -> None:
        if self.expired and not exchange.self_contained and exchange.method != INITIALIZE:
            await self._fail(exchange, SessionExpired("the server ended the session; a new one must be started"))
            return
        headers = self._headers(message, self_contained=exchange.self_contained)
        sent_session = headers.get("Mcp-Session-Id")
        response = await self._send("POST", headers, data, request_id=exchange.id)
        try:
            status = response.status_code
            if status < 300:
                self.reached = True  # an MCP endpoint is there: a later bare 404 is about the request
            refused = authorization_refused(response, exchange.method)
            if refused is not None:
                await self._fail(exchange, refused)
            elif status >= 300:
                error: McpRuntimeError = await http_error(response, exchange.method)
                if status == 404 and sent_session is not None and not _unknown_method(error):
                    if self.session_id == sent_session:
                        self._session_ended()
                    error = SessionExpired(f"the server ended the session (HTTP 404 on {exchange.method})")
                elif status == 404 and not self.reached and not _unknown_method(error):
                    error = EndpointNotFound(_not_found(self.endpoint.url, exchange.method))
                await self._fail(exchange, error)
            elif status == 202:
                await self._fail(exchange, McpError(f"the server answered {exchange.method} with 202 and no response"))
            else:
                if exchange.method == INITIALIZE:
                    self._take_session_id(response)
                await self._answer(exchange, response)
        finally:
            await response.aclose()

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

    async def close(self) -> None:
        """End the handshake-era session (DELETE; 405 means the server keeps it)."""
        import httpx

        self._stop_listening()
        if self.session_id is None or not self.endpoint.terminate_on_close:
            return
        limit = self.endpoint.close_timeout if self.endpoint.close_timeout is not None else self.endpoint.timeout
        with anyio.CancelScope(shield=True), anyio.move_on_after(limit):
            try:
                response = await self._send("DELETE", self._session_headers())
                await response.aclose()
            except (httpx.HTTPError, McpRuntimeError) as exc:
                log.debug("could not end the session: %s", exc)


def _not_found(url: str, method: str) -> str:
    """What a 404 outside any session says: nothing is at that URL, and where endpoints usually are."""
    import httpx

    parsed = httpx.URL(url)
    usual = str(parsed.copy_with(path="/mcp", query=None, fragment=None))
    hint = f"; MCP endpoints are usually at the path /mcp (try {usual})" if parsed.path.rstrip("/") != "/mcp" else ""
    return f"{url} answered {method} with HTTP 404 Not Found: no MCP endpoint is at that URL{hint}"


def _unknown_method(error: McpRuntimeError) -> bool:
    """A 404 whose body is the server's own "method not found": the session is alive, the method is not."""
    if not isinstance(error, McpError):
        return False
    synthesized = isinstance(error.data, dict) and "httpStatus" in error.data
    return error.code == METHOD_NOT_FOUND and not synthesized


def _self_contained(message: Mapping[str, Any]) -> bool:
    """Does the message name its own version (a modern request: no session headers)?"""
    params = message.get("params")
    return message_version(params if isinstance(params, Mapping) else None) is not None
