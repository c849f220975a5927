"""`ProtectedResource`: how an MCP server's Streamable HTTP endpoint is protected by OAuth 2.1.

    from mcpgen.runtime.auth import JWTVerifier, ProtectedResource

    auth = ProtectedResource(
        resource="https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
        verifier=JWTVerifier(issuer="https://auth.example.com", audience="https://mcp.example.com/mcp",
                             jwks_uri="https://auth.example.com/jwks"),
        scopes_supported=["notes:read", "notes:write"],
        required_scopes=["notes:read"],
    )
    app = server.http_app(auth=auth)            # or server.run_http(port=8000, auth=auth)

The endpoint then serves the protected resource metadata (RFC 9728) and refuses a request without
a valid token (401 with a `WWW-Authenticate` challenge) or without the scopes it needs (403
`insufficient_scope`): the `required_scopes` of every request, plus those of the tool a
`tools/call` names (`@server.tool(scopes=[...])`). Handlers see the token's `AuthInfo` as `ctx.auth`;
sealed `requestState` and handshake-era sessions are bound to its principal.

It only describes the protection: `wrap(app)` builds the `BearerAuthMiddleware` around any ASGI
app, which is what `Server.http_app(auth=...)` does with the server's own scope hook.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .middleware import DEFAULT_MAX_BODY, ASGIApp, BearerAuthMiddleware, ScopeCheck, ScopeHook
from .verifiers import TokenVerifier


@dataclass
class ProtectedResource:
    """The protection of one MCP endpoint (see the module docstring).

    `resource` is the endpoint's canonical URL as clients reach it (the audience tokens must be
    issued for); `authorization_servers` the issuers clients are sent to; `verifier` checks each
    token (`JWTVerifier`, `IntrospectionVerifier`, or your own `TokenVerifier`). `scopes_supported`
    is advertised in the metadata; `required_scopes` are needed by every request;
    `scopes_for_request(message)` may add scopes for a JSON-RPC message (besides the tools' own);
    `scope_satisfied(granted, required)` decides whether a granted set covers a scope (default:
    exact membership). `resource_name` and `extra_metadata` go into the metadata document;
    `serve_root_metadata` also serves it at the root well-known URL; `max_body_size` bounds the body
    the middleware reads to find the scopes a message needs (the endpoint's own limit, when served
    by `Server.http_app`). `dpop`: accept DPoP-bound tokens with their proofs (None: when the `auth`
    extra is installed); `dpop_required`: accept nothing else."""

    resource: str
    authorization_servers: Sequence[str]
    verifier: TokenVerifier
    scopes_supported: Sequence[str] | None = None
    required_scopes: Sequence[str] = ()
    scopes_for_request: ScopeHook | None = None
    scope_satisfied: ScopeCheck | None = None
    resource_name: str | None = None
    extra_metadata: Mapping[str, Any] | None = None
    serve_root_metadata: bool = False
    max_body_size: int = DEFAULT_MAX_BODY
    dpop: bool | None = None
    dpop_required: bool = False

    def wrap(
        self, app: ASGIApp, *, scopes_for_request: ScopeHook | None = None, max_body_size: int | None = None
    ) -> BearerAuthMiddleware:
        """`app` behind a `BearerAuthMiddleware` with these settings; `scopes_for_request` (the
        server's tool scopes, say) is asked besides this resource's own hook; `max_body_size`, when
        given, replaces this resource's own."""
        hooks = [hook for hook in (self.scopes_for_request, scopes_for_request) if hook is not None]
        return BearerAuthMiddleware(
            app,
            verifier=self.verifier,
            resource=self.resource,
            authorization_servers=self.authorization_servers,
            scopes_supported=self.scopes_supported,
            required_scopes=self.required_scopes,
            scopes_for_request=_union(hooks) if hooks else None,
            scope_satisfied=self.scope_satisfied,
            max_body_size=max_body_size if max_body_size is not None else self.max_body_size,
            resource_name=self.resource_name,
            extra_metadata=self.extra_metadata,
            serve_root_metadata=self.serve_root_metadata,
            dpop=self.dpop,
            dpop_required=self.dpop_required,
        )


def _union(hooks: list[ScopeHook]) -> ScopeHook:
    """One hook asking each of `hooks` (sync or async) and joining their scopes."""
    if len(hooks) == 1:
        return hooks[0]

    async def joined(message: Mapping[str, Any]) -> Iterable[str]:
        scopes: list[str] = []
        for hook in hooks:
            found = hook(message)
            scopes.extend(await found if inspect.isawaitable(found) else found)
        return scopes

    return joined
