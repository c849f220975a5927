"""MCP authorization: the OAuth 2.1 client flows and the protected-resource side.

Client (give one to the HTTP transport; each is an `httpx.Auth`):

    from mcpgen.runtime.auth import OAuth, FileTokenStorage
    auth = OAuth(storage=FileTokenStorage("~/.config/app/tokens.json"))
    async with httpx.AsyncClient(auth=auth) as http: ...

- `OAuth`: authorization code + PKCE for a user (`BrowserRedirectHandler` by default).
- `ClientCredentials`, `WorkloadIdentity`, `EnterpriseManaged`: the machine-to-machine extensions.
- `TokenStorage` (`InMemoryTokenStorage`, `FileTokenStorage`), `RedirectHandler`
  (`BrowserRedirectHandler`, `HeadlessRedirectHandler`), `ClientInfo`, `TokenSet`, `SigningKey`.

Server:

    auth = ProtectedResource(resource=url, authorization_servers=[issuer],
                             verifier=JWTVerifier(issuer=issuer, audience=url, jwks_uri=...))
    app = server.http_app(auth=auth)      # tools declare scopes: @server.tool(scopes=["notes:write"])

- `ProtectedResource` (what `Server.http_app(auth=...)` takes), `BearerAuthMiddleware` (the ASGI
  middleware it builds, usable around any app), `TokenVerifier` (`JWTVerifier`,
  `IntrospectionVerifier`), `AuthInfo` (the token's principal: `ctx.auth` in handlers, found in the
  ASGI scope under `AUTH_SCOPE_KEY`).

The JWT pieces (client assertions, DPoP, `JWTVerifier`) need the `auth` extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client.flow import AuthChallenge, AuthContext, OAuthFlow
    from .client.grants import ClientCredentials, EnterpriseManaged, FlowOptions, WorkloadIdentity
    from .client.oauth import OAuth, validate_authorization_response
    from .client.redirect import BrowserRedirectHandler, HeadlessRedirectHandler, RedirectHandler
    from .client.storage import ClientInfo, FileTokenStorage, InMemoryTokenStorage, TokenSet, TokenStorage
    from .server.dpop import DPoPProofChecker, InvalidDPoPProof
    from .server.middleware import BearerAuthMiddleware, auth_info_from_scope
    from .server.resource import ProtectedResource
    from .server.verifiers import IntrospectionVerifier, JWTVerifier, TokenVerifier
    from .shared.challenge import Challenge, format_challenge, parse_www_authenticate
    from .shared.errors import (
        AuthError,
        AuthorizationLimitExceeded,
        AuthorizationRequired,
        AuthorizationResponseError,
        DiscoveryError,
        InsecureEndpointError,
        InvalidToken,
        IssuerMismatchError,
        MissingExtraError,
        RegistrationError,
        ResourceMismatchError,
        TokenRequestError,
        UnsupportedServerError,
        VerifierUnavailable,
    )
    from .shared.metadata import AuthorizationServerMetadata, ProtectedResourceMetadata
    from .shared.principal import AUTH_SCOPE_KEY, AuthInfo
    from .shared.signing import DPoPProofs, SigningKey

# Each name is imported on first use, so that the server's side (which needs no httpx) and the
# client's side (which needs no ASGI server) load only what they use.
_EXPORTS: dict[str, str] = {
    "AUTH_SCOPE_KEY": ".shared.principal",
    "AuthChallenge": ".client.flow",
    "AuthContext": ".client.flow",
    "AuthError": ".shared.errors",
    "AuthInfo": ".shared.principal",
    "AuthorizationLimitExceeded": ".shared.errors",
    "AuthorizationRequired": ".shared.errors",
    "AuthorizationResponseError": ".shared.errors",
    "AuthorizationServerMetadata": ".shared.metadata",
    "BearerAuthMiddleware": ".server.middleware",
    "BrowserRedirectHandler": ".client.redirect",
    "Challenge": ".shared.challenge",
    "ClientCredentials": ".client.grants",
    "ClientInfo": ".client.storage",
    "DPoPProofChecker": ".server.dpop",
    "DPoPProofs": ".shared.signing",
    "DiscoveryError": ".shared.errors",
    "EnterpriseManaged": ".client.grants",
    "FileTokenStorage": ".client.storage",
    "FlowOptions": ".client.grants",
    "HeadlessRedirectHandler": ".client.redirect",
    "InMemoryTokenStorage": ".client.storage",
    "InsecureEndpointError": ".shared.errors",
    "IntrospectionVerifier": ".server.verifiers",
    "InvalidDPoPProof": ".server.dpop",
    "InvalidToken": ".shared.errors",
    "IssuerMismatchError": ".shared.errors",
    "JWTVerifier": ".server.verifiers",
    "MissingExtraError": ".shared.errors",
    "OAuth": ".client.oauth",
    "OAuthFlow": ".client.flow",
    "ProtectedResource": ".server.resource",
    "ProtectedResourceMetadata": ".shared.metadata",
    "RedirectHandler": ".client.redirect",
    "RegistrationError": ".shared.errors",
    "ResourceMismatchError": ".shared.errors",
    "SigningKey": ".shared.signing",
    "TokenRequestError": ".shared.errors",
    "TokenSet": ".client.storage",
    "TokenStorage": ".client.storage",
    "TokenVerifier": ".server.verifiers",
    "UnsupportedServerError": ".shared.errors",
    "VerifierUnavailable": ".shared.errors",
    "WorkloadIdentity": ".client.grants",
    "auth_info_from_scope": ".server.middleware",
    "format_challenge": ".shared.challenge",
    "parse_www_authenticate": ".shared.challenge",
    "validate_authorization_response": ".client.oauth",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AUTH_SCOPE_KEY",
    "AuthChallenge",
    "AuthContext",
    "AuthError",
    "AuthInfo",
    "AuthorizationLimitExceeded",
    "AuthorizationRequired",
    "AuthorizationResponseError",
    "AuthorizationServerMetadata",
    "BearerAuthMiddleware",
    "BrowserRedirectHandler",
    "Challenge",
    "ClientCredentials",
    "ClientInfo",
    "DPoPProofChecker",
    "DPoPProofs",
    "DiscoveryError",
    "EnterpriseManaged",
    "FileTokenStorage",
    "FlowOptions",
    "HeadlessRedirectHandler",
    "InMemoryTokenStorage",
    "InsecureEndpointError",
    "IntrospectionVerifier",
    "InvalidDPoPProof",
    "InvalidToken",
    "IssuerMismatchError",
    "JWTVerifier",
    "MissingExtraError",
    "OAuth",
    "OAuthFlow",
    "ProtectedResource",
    "ProtectedResourceMetadata",
    "RedirectHandler",
    "RegistrationError",
    "ResourceMismatchError",
    "SigningKey",
    "TokenRequestError",
    "TokenSet",
    "TokenStorage",
    "TokenVerifier",
    "UnsupportedServerError",
    "VerifierUnavailable",
    "WorkloadIdentity",
    "auth_info_from_scope",
    "format_challenge",
    "parse_www_authenticate",
    "validate_authorization_response",
]
