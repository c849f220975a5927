"""The authorization tests' in-process world: one MCP endpoint (`mcp.test`) behind the bearer
middleware, authorization servers on hosts of their own, and one routed HTTP client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from mcpgen.runtime.auth import (
    AUTH_SCOPE_KEY,
    BearerAuthMiddleware,
    HeadlessRedirectHandler,
    JWTVerifier,
    OAuth,
    TokenVerifier,
)

from support.auth_asgi import Router, routed_client
from support.auth_server import AuthServer

MCP_URL = "https://mcp.test/mcp"


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A stand-in MCP endpoint: answers each JSON-RPC request with who it was authorized for."""
    import json

    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    info = scope.get(AUTH_SCOPE_KEY)
    try:
        request = json.loads(body)
    except ValueError:
        request = {}
    result = {
        "method": request.get("method"),
        "subject": getattr(info, "subject", None),
        "client_id": getattr(info, "client_id", None),
        "scopes": sorted(getattr(info, "scopes", ())),
    }
    out = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out})


class Env:
    """One MCP server (`mcp.test`), authorization servers on their own hosts, one routed client."""

    def __init__(self) -> None:
        self.router = Router()
        self.http = routed_client(self.router)
        self.as1 = self.add_as(AuthServer())
        self.rs: BearerAuthMiddleware | None = None

    def add_as(self, server: AuthServer) -> AuthServer:
        self.router.mount(server.host, server.app)
        return server

    def resource_server(
        self,
        *,
        auth_server: AuthServer | None = None,
        required: tuple[str, ...] = (),
        scopes_supported: list[str] | None = None,
        hook: Callable[[Any], Any] | None = None,
        verifier: TokenVerifier | None = None,
        app: Any = echo_app,
        dpop: bool | None = False,
        dpop_required: bool = False,
    ) -> BearerAuthMiddleware:
        server = auth_server or self.as1
        verifier = verifier or JWTVerifier(
            issuer=server.issuer, audience=MCP_URL, jwks_uri=server.endpoint("jwks"), http_client=self.http
        )
        self.rs = BearerAuthMiddleware(
            app,
            verifier=verifier,
            resource=MCP_URL,
            authorization_servers=[server.issuer],
            required_scopes=required,
            scopes_supported=scopes_supported,
            scopes_for_request=hook,
            dpop=dpop,
            dpop_required=dpop_required,
        )
        self.router.mount("mcp.test", self.rs)
        return self.rs

    def oauth(self, **kwargs: Any) -> OAuth:
        kwargs.setdefault("redirect_handler", HeadlessRedirectHandler(http_client=self.http))
        kwargs.setdefault("http_client", self.http)
        return OAuth(**kwargs)

    async def call(
        self, auth: httpx.Auth, method: str = "tools/list", *, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
        return await self.http.post(MCP_URL, json=message, auth=auth, headers=headers or {})
