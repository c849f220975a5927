"""Errors raised by the authorization code (client and protected-resource side).

All derive from `AuthError`, itself a `McpRuntimeError`, so a caller catching the runtime's root
error also sees authorization failures. None of them crosses the wire as a JSON-RPC error: on the
client they end the HTTP request that needed authorization; on the server `InvalidToken` becomes an
HTTP 401 with a `WWW-Authenticate` challenge.
"""

from __future__ import annotations

# The root lives with the runtime's other errors: catching it needs no import of this package.
from ...protocol.errors import AuthError, AuthorizationRequired


class DiscoveryError(AuthError):
    """No usable protected resource metadata or authorization server metadata was found."""


class ResourceMismatchError(DiscoveryError):
    """The protected resource metadata names a resource that is not the server being accessed.

    Raised before any authorization request is made (RFC 9728 §3.3, RFC 8707). Besides the
    `message`: `resource`, the resource the metadata names, and `server_url`, the server accessed."""

    def __init__(self, message: str, *, resource: str, server_url: str) -> None:
        super().__init__(message)
        self.resource = resource
        self.server_url = server_url


class IssuerMismatchError(DiscoveryError):
    """Authorization server metadata whose `issuer` differs from the issuer it was looked up for
    (RFC 8414 §3.3): the document is not used. Besides the `message`: `expected`, the issuer
    looked up, and `found`, the document's `issuer` value."""

    def __init__(self, message: str, *, expected: str, found: object) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found


class InsecureEndpointError(DiscoveryError):
    """An endpoint authorization would use (the MCP server, the issuer, its token, authorization or
    registration endpoint) is plain `http://` on a host that is not loopback: tokens, codes and
    client secrets would cross the network in clear (OAuth 2.1 §1.5). Nothing is sent to it.
    `allow_insecure_http=True` on the flow lifts the check, for a test deployment. Besides the
    `message`: `url`, the endpoint refused."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class UnsupportedServerError(AuthError):
    """The authorization server lacks something this client requires (PKCE with S256, a grant type,
    a usable token endpoint authentication method)."""


class RegistrationError(AuthError):
    """No client identity could be obtained (no pre-registered credentials for this issuer, no
    client ID metadata document support, dynamic registration refused or unavailable)."""


class AuthorizationResponseError(AuthError):
    """The authorization response (the redirect back to the client) was rejected.

    `reason` is one of `iss_mismatch`, `iss_missing`, `state_mismatch`, `error` (the authorization
    server reported `error`; `error` and `error_description` are then set, and only then: an error
    response whose `iss` did not validate is never surfaced), `no_code`, or `no_response` (the user
    agent never came back: timeout, or the server did not redirect to the redirect URI). The
    `message` says it for people."""

    def __init__(
        self, message: str, *, reason: str, error: str | None = None, error_description: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.error = error
        self.error_description = error_description


class TokenRequestError(AuthError):
    """The token endpoint (or an identity provider's, for a token exchange) refused a request.

    `status` is the HTTP status of the refusal; `error` the OAuth error code (`invalid_grant`,
    `invalid_client`, ...) and `error_description` its description, when the response had them;
    the `message` says it for people."""

    def __init__(
        self, message: str, *, status: int, error: str | None = None, error_description: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.error_description = error_description


class AuthorizationLimitExceeded(AuthError):
    """The server kept refusing the request (401, or 403 `insufficient_scope`) after the allowed number
    of authorization attempts for it. `status` is the last refusal's HTTP status, `scopes` what the
    last challenge asked for, and the `message` says it for people."""

    def __init__(self, message: str, *, status: int, scopes: tuple[str, ...]) -> None:
        super().__init__(message)
        self.status = status
        self.scopes = scopes


class MissingExtraError(AuthError, ImportError):
    """A feature needs the optional `auth` extra (`pip install 'mcpgen[auth]'`), which is not installed."""


class InvalidToken(AuthError):
    """Server side: the bearer token is missing, malformed, expired, not for this resource or not
    trusted. The middleware answers 401 with `error="invalid_token"`."""


class VerifierUnavailable(AuthError):
    """Server side: the token could not be checked right now (the JWKS or introspection endpoint is
    unreachable or failing). The middleware answers 503, not 401: the token may well be good."""


__all__ = [
    "AuthError",
    "AuthorizationLimitExceeded",
    "AuthorizationRequired",
    "AuthorizationResponseError",
    "DiscoveryError",
    "InvalidToken",
    "IssuerMismatchError",
    "MissingExtraError",
    "RegistrationError",
    "ResourceMismatchError",
    "TokenRequestError",
    "UnsupportedServerError",
    "VerifierUnavailable",
]
