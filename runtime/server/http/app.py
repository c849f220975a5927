"""A `Server` as a Streamable HTTP endpoint: a plain ASGI 3 application serving both eras.

    app = server.http_app()          # then: uvicorn module:app, hypercorn (trio), or mount it
    server.run_http(port=8000)       # or let mcpgen run uvicorn: http://127.0.0.1:8000/mcp

One endpoint (default path `/mcp`) serves both protocol eras, told apart by the
`MCP-Protocol-Version` header: a version of the modern era (or an unknown one) goes to the
self-contained path (`modern`: one request per POST, through the pure router); a handshake-era
version, or no header at all, to the session path (`sessions`). Without the header, a body that
carries modern `_meta` is modern too (and refused for the missing header, -32020). Which era a
version belongs to is the era rules' answer (`protocol.eras.Eras.of_header`).

Before either: Host and Origin checks (`security`: 421 / 403), the method (POST; GET and
DELETE for sessions; 405 otherwise), `Content-Type: application/json` (415), an `Accept` naming
both JSON and SSE (406), the body size limit (413), then JSON-RPC decoding (400 with -32700 or
-32600). No input makes the app raise: whatever reaches it gets an HTTP answer.

Serving needs the ASGI lifespan (uvicorn and hypercorn send it): the server's own `lifespan`,
sessions, idle-session reaping and the change bus run in it. Mounted inside another app
(Starlette, FastAPI), pass this app's `lifespan` to the outer one:
`Starlette(routes=[Mount("/", app)], lifespan=app.lifespan)` (or enter `app.run()` in yours).
Custom routes (`server.custom_route`) are served next to the endpoint.
The authenticated principal, if an authentication middleware put one in the scope under
`mcpgen.auth`, reaches handlers as `ctx.auth`. `auth=` (a `mcpgen.runtime.auth.ProtectedResource`)
builds that middleware in: the protected resource metadata is served (before the Host/Origin
checks: it is public), and after those checks every request needs a valid token with the scopes
its message needs (the tool's `scopes=` for a `tools/call`); a handshake-era session is then
bound to the principal that opened it (another principal gets 404, as for an unknown session).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from ...auth.shared.principal import AUTH_SCOPE_KEY, MESSAGE_SCOPE_KEY
from ...protocol import wire
from ...protocol.eras import message_version
from ...protocol.errors import INVALID_REQUEST, http_status
from ...protocol.http_headers import PROTOCOL_VERSION
from ..session import ServerSession
from .asgi import (
    CLOSE,
    BodyDeadline,
    BodyTimeout,
    Disconnected,
    HttpResponse,
    Post,
    Receive,
    Scope,
    Send,
    Timers,
    accepts_json_and_sse,
    error_body,
    headers_of,
    media_types,
    read_body,
)
from .events import EventStore, MemoryEventStore
from .modern import refuse_posted, serve_modern
from .routes import serve_route
from .run import running_on_trio
from .security import HttpSecurity
from .sessions import SESSION_HEADER, HandshakeSessions

if TYPE_CHECKING:
    from ...auth.server.middleware import BearerAuthMiddleware
    from ...auth.server.resource import ProtectedResource
    from .. import Server
    from ..context import RequestContext

log = logging.getLogger("mcpgen.runtime.server.http")
_DEFAULT_STORE: Any = object()


class HttpApp:
    """The Streamable HTTP endpoint of one `Server` (ASGI 3).

    - `path`: where the endpoint is (`None`: any path);
    - `security`: Host/Origin checks and the body size limit (`HttpSecurity`; by default strict
      when the server is bound to a loopback address);
    - `event_store`: where handshake-era SSE events are kept for resumption (default: in memory;
      `None`: streams are not resumable and get no event ids);
    - `retry_ms`: the reconnection delay told to handshake-era clients on each SSE stream;
    - `keepalive`: seconds of silence after which a response commits to SSE and gets a `:` comment
      line (and then every `keepalive` seconds), so long calls and listen streams stay open;
    - `session_idle_timeout` / `max_sessions` / `max_sessions_per_principal`: when handshake-era
      sessions are closed for idleness, and how many may be open in all and per authenticated
      principal (503 past that, with `Retry-After` when an idle session will expire);
    - `auth`: OAuth protection (`mcpgen.runtime.auth.ProtectedResource`; needs httpx, and the
      `auth` extra for `JWTVerifier`): bearer tokens checked, tool scopes enforced, metadata served.
    """

    def __init__(  # noqa: PLR0913  (keyword-only settings, each documented above)
        self,
        server: Server,
        *,
        path: str | None = "/mcp",
        security: HttpSecurity | None = None,
        event_store: EventStore | None = _DEFAULT_STORE,
        retry_ms: int | None = 1000,
        keepalive: float | None = 15.0,
        session_idle_timeout: float | None = 1800.0,
        max_sessions: int | None = 10_000,
        max_sessions_per_principal: int | None = 100,
        auth: ProtectedResource | None = None,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.security = security or HttpSecurity()
        self.keepalive = keepalive
        self.stateless = ServerSession(server, None)  # serves every self-contained (modern) request
        store = MemoryEventStore() if event_store is _DEFAULT_STORE else event_store
        self.sessions = HandshakeSessions(
            server,
            store=store,
            retry_ms=retry_ms,
            keepalive=keepalive,
            idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
            max_sessions_per_principal=max_sessions_per_principal,
            max_message_bytes=self.security.max_body_bytes,
        )
        self._verdicts: dict[tuple[str | None, ...], _Verdict] = {}  # what header values decide (`_verdict`)
        self._checked_by = self.security
        self._eras_read = server.eras
        self._task_group: TaskGroup | None = None
        self.closing = False  # `close_streams` was called: the server is shutting down
        self._timers: Timers | None = None  # the request deadlines of the asyncio loop it runs on (None: trio)
        self.auth: BearerAuthMiddleware | None = None
        if auth is not None:
            self.auth = auth.wrap(
                self._dispatch, scopes_for_request=server.scopes_for, max_body_size=self.security.max_body_bytes
            )

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task_group is not None

    @property
    def timers(self) -> Timers | None:
        """The request deadlines of the asyncio loop it runs on (one loop timer for all; None when
        not running, or on trio): the servers mcpgen runs keep each connection's head deadline there."""
        return self._timers

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run the endpoint's background work (sessions, reaping, the change bus, tasks and the task
        store's change feed) for the body."""
        if self._task_group is not None:
            raise RuntimeError("this app is running already")
        self.server.build_validators()  # before serving: no first request waits on them
        async with self.server.running(), anyio.create_task_group() as tg:
            self._task_group = self.sessions.task_group = tg
            self.closing = False
            self._timers = self.sessions.timers = None if running_on_trio() else Timers(asyncio.get_running_loop())
            self.stateless.background = tg  # tasks created by self-contained requests run here
            tg.start_soon(self.sessions.reap)
            await tg.start(self._run_bus)
            await tg.start(self.server.tasks.run)
            try:
                yield
            finally:
                self.close_streams()
                self.sessions.close_all()
                self._task_group = self.sessions.task_group = self.stateless.background = None
                if self._timers is not None:
                    self._timers.close()
                self._timers = self.sessions.timers = None
                tg.cancel_scope.cancel()

    async def _run_bus(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            await self.server.bus.run(self.server.deliver_here, task_status=task_status)
        except Exception:
            log.exception("the change bus failed; changes of other processes no longer arrive")

    def lifespan(self, app: Any = None) -> AbstractAsyncContextManager[None]:
        """A Starlette/FastAPI `lifespan` that runs this endpoint (for mounting it in another app)."""
        return self.run()

    def close_streams(self) -> None:
        """Begin a graceful shutdown: every `subscriptions/listen` stream ends with its result,
        standalone GET streams end (their clients reconnect). Servers call it before waiting for
        open responses to finish."""
        self.closing = True
        self.server.stop_listening()
        self.sessions.end_streams()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        try:
            async with self.run():
                await send({"type": "lifespan.startup.complete"})
                while (await receive())["type"] != "lifespan.shutdown":
                    pass
        except Exception as exc:
            log.exception("the MCP app failed to start or stop")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    # -- requests ----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            exchange = HttpResponse(send)
            try:
                receive = BodyDeadline(receive, self.security.body_timeout, self._timers)
                await self._http(scope, receive, send, exchange)
            except Disconnected:
                return
            except BodyTimeout:  # a client that sends its body a byte at a time does not keep the connection
                if not exchange.started:
                    text = f"Request Timeout: the body must arrive within {self.security.body_timeout} s"
                    await exchange.respond(408, error_body(None, INVALID_REQUEST, text), headers=CLOSE)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    def _route_path(self, scope: Scope) -> str:
        path, own = scope.get("path"), self.path
        if own is not None and path == own and not scope.get("root_path"):
            return own  # the endpoint itself (most requests)
        path = str(path or "/")
        root = str(scope.get("root_path") or "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path.rstrip("/") or "/"

    async def _http(self, scope: Scope, receive: Receive, send: Send, exchange: HttpResponse) -> None:
        if self.auth is not None:  # what is sent around `exchange` (the middleware's answers) counts too
            send = exchange.watching(send)
        if self.auth is not None and scope.get("path") in self.auth.metadata_paths:
            await self.auth(scope, receive, send)  # the protected resource metadata: public
            return
        if self.server.routes and await self._custom(scope, receive, exchange):
            return
        own = self.path
        if own is not None and (scope.get("path") != own or scope.get("root_path")) and self._route_path(scope) != own:
            await exchange.respond(404, b"Not Found", b"text/plain; charset=utf-8")
            return
        headers = headers_of(scope)
        verdict = self._verdict(scope, headers)
        refused = verdict[0]
        if refused is not None:
            await exchange.respond(refused[0], error_body(None, INVALID_REQUEST, refused[1]))
            return
        if self.auth is not None:
            await self.auth(scope, receive, send)  # then `_dispatch`, with the principal in the scope
        elif scope.get("method") == "POST":  # (most requests)
            await self._post(scope, headers, exchange, receive, verdict)
        else:
            await self._serve(scope, headers, exchange, receive)

    def _verdict(self, scope: Scope, headers: dict[str, str]) -> _Verdict:
        """What the request's headers decide before its body is read: (the Host/Origin refusal,
        the `Content-Type`/`Accept` refusal of a POST, whether `MCP-Protocol-Version` names a
        self-contained era (None: no such header)). Clients send the same few values again and
        again: each combination is worked out once."""
        get = headers.get
        server_address = scope.get("server")
        key = (
            get("host"),
            get("origin"),
            server_address[0] if server_address else None,
            get("content-type"),
            get("accept"),
            get(PROTOCOL_VERSION),
        )
        if self._checked_by is not self.security or self._eras_read is not self.server.eras:
            self._checked_by, self._eras_read = self.security, self.server.eras  # (replaced: verdicts start again)
            self._verdicts.clear()
        verdict = self._verdicts.get(key)
        if verdict is None:
            _, _, address, content_type, accept, version = key
            verdict = (
                self.security.refusal(headers, address),
                _media_refusal(content_type, accept),
                None if version is None else self.server.eras.of_header(version).self_contained,
            )
            _remember(self._verdicts, key, verdict)
        return verdict

    async def _custom(self, scope: Scope, receive: Receive, exchange: HttpResponse) -> bool:
        """Serve a custom route (`server.custom_route`), if the path is one."""
        found = self.server.routes.get(self._route_path(scope))
        if found is None:
            return False
        methods, handler = found
        method = str(scope.get("method", ""))
        if method not in methods and not (method == "HEAD" and "GET" in methods):
            allowed = ", ".join(sorted(methods)).encode("latin-1")
            await exchange.respond(405, b"Method Not Allowed", b"text/plain; charset=utf-8", [(b"allow", allowed)])
            return True
        try:
            await serve_route(handler, scope, receive, exchange)
        except (Disconnected, BodyTimeout):
            raise  # the request's own end (a 408 for a body too slow), as for the MCP endpoint
        except Exception:
            log.exception("the custom route %s failed", scope.get("path"))
            if not exchange.started:
                await exchange.respond(500, b"Internal Server Error", b"text/plain; charset=utf-8")
        return True

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The endpoint behind the authorization middleware."""
        await self._serve(scope, headers_of(scope), HttpResponse(send), receive)

    async def _serve(self, scope: Scope, headers: dict[str, str], exchange: HttpResponse, receive: Receive) -> None:
        method = scope.get("method", "")
        if method == "POST":
            await self._post(scope, headers, exchange, receive, self._verdict(scope, headers))
        elif method in ("GET", "DELETE"):
            if self._verdict(scope, headers)[2]:
                await exchange.respond(405, headers=[(b"allow", b"POST")])
            elif method == "GET":
                await self.sessions.get(headers, exchange, receive, scope.get(AUTH_SCOPE_KEY))
            else:
                await self.sessions.delete(headers, exchange, scope.get(AUTH_SCOPE_KEY))
        else:
            await exchange.respond(405, headers=[(b"allow", b"GET, POST, DELETE")])

    async def _post(
        self, scope: Scope, headers: dict[str, str], exchange: HttpResponse, receive: Receive, verdict: _Verdict
    ) -> None:
        refused = verdict[1]
        if refused is not None:
            await exchange.respond(refused[0], error_body(None, INVALID_REQUEST, refused[1]))
            return
        read = scope.get(MESSAGE_SCOPE_KEY)  # the auth middleware read and decoded it already
        if read is not None:
            body, message = read
        else:
            limit = self.security.max_body_bytes
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                found = None
            else:
                first = await receive()
                found = first.get("body", b"") if first["type"] == "http.request" else None
                if found is None or first.get("more_body", False) or len(found) > limit:
                    found = await read_body(receive, limit, first)  # (most bodies are one message)
            if found is None:
                text = f"Payload Too Large: a message may have at most {limit} bytes"
                await exchange.respond(413, error_body(None, INVALID_REQUEST, text, {"limit": limit}))
                return
            body, message = found, wire.decode(found)
        post = Post(headers, scope.get(AUTH_SCOPE_KEY), exchange, receive)
        contained = verdict[2]
        if not (contained if contained is not None else self._unversioned_self_contained(headers, message)):
            await self.sessions.post(message, body, post)
        elif isinstance(message, wire.Invalid):
            status = http_status(message.code)
            await exchange.respond(
                status if status >= 400 else 400, error_body(message.id, message.code, message.message)
            )
        elif isinstance(message, wire.Request):
            await serve_modern(self.stateless, message, post, self.keepalive, self._timers)
        else:
            await refuse_posted(exchange, message)

    # -- era routing -------------------------------------------------------------------------

    def _unversioned_self_contained(self, headers: dict[str, str], message: wire.Message) -> bool:
        """Is a POST without `MCP-Protocol-Version` a self-contained request (the modern path,
        where it is refused for the missing header) rather than part of a session? A request (not
        the session's opening one, not of a session) that names its version in `_meta` is."""
        if SESSION_HEADER in headers or not isinstance(message, wire.Request):
            return False
        if any(message.method == rules.session_method for rules in self.server.eras.newest_first):
            return False
        return message_version(message.params) is not None


_Verdict = tuple["tuple[int, str] | None", "tuple[int, str] | None", "bool | None"]
_REMEMBERED = 64  # header values whose verdict is kept (then forgotten all at once)


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _REMEMBERED:
        cache.clear()
    cache[key] = value


def _media_refusal(content_type: str | None, accept: str | None) -> tuple[int, str] | None:
    """(status, reason) when a POST's `Content-Type` or `Accept` is not what Streamable HTTP needs."""
    if media_types(content_type) != {"application/json"}:
        return 415, "Unsupported Media Type: POST a JSON-RPC message as application/json"
    if not accepts_json_and_sse(accept):
        return 406, "Not Acceptable: the client must accept application/json and text/event-stream"
    return None


async def close_sse_stream(ctx: RequestContext) -> bool:
    """Close the connection of the request's SSE stream before its response (SSE polling,
    handshake era): the client reconnects with `GET` + `Last-Event-ID` after the stream's `retry`
    interval and receives the rest. False when the request did not come over such a stream."""
    route = ctx.request.context.reply
    return route is not None and await route.close_connection()
