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

from .challenge import Challenge, format_challenge, parse_www_authenticate
from .dpop import DPoPProofChecker, InvalidDPoPProof
from .errors import (
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
from .flow import AuthChallenge, AuthContext, OAuthFlow
from .grants import ClientCredentials, EnterpriseManaged, FlowOptions, WorkloadIdentity
from .metadata import AuthorizationServerMetadata, ProtectedResourceMetadata
from .middleware import BearerAuthMiddleware, auth_info_from_scope
from .oauth import OAuth, validate_authorization_response
from .principal import AUTH_SCOPE_KEY, AuthInfo
from .redirect import BrowserRedirectHandler, HeadlessRedirectHandler, RedirectHandler
from .resource import ProtectedResource
from .signing import DPoPProofs, SigningKey
from .storage import ClientInfo, FileTokenStorage, InMemoryTokenStorage, TokenSet, TokenStorage
from .verifiers import IntrospectionVerifier, JWTVerifier, TokenVerifier

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
