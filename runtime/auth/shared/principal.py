"""The authenticated principal of a request on the server side.

`BearerAuthMiddleware` puts an `AuthInfo` into the ASGI scope under `AUTH_SCOPE_KEY`
(`scope["mcpgen.auth"]`); the HTTP transport hands it to handlers as `ctx.auth`. A middleware that
had to read a POST's body (to find the scopes its message needs) leaves the body and its decoded
message under `MESSAGE_SCOPE_KEY`, so the endpoint reads and parses each body once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._util import now
from .errors import InvalidToken

AUTH_SCOPE_KEY = "mcpgen.auth"
"""The ASGI scope key under which an authentication middleware puts the request's `AuthInfo`
(what the HTTP app hands handlers as `ctx.auth`)."""
MESSAGE_SCOPE_KEY = "mcpgen.message"  # (body bytes, `protocol.wire.decode(body)`)


@dataclass(frozen=True)
class AuthInfo:
    """A validated access token and who it speaks for.

    `subject` is the resource owner (`sub`), `client_id` the OAuth client the token was issued to,
    `scopes` the granted scopes, `expires_at` the expiry (epoch seconds) if known, `issuer` and
    `audience` as the token or the introspection response said, `claims` everything the verifier saw
    (JWT claims or the introspection response), `token` the raw access token (never log it).
    `dpop_jkt` is the thumbprint of the key a DPoP-bound token is bound to (its `cnf.jkt`): such a
    token is accepted only with a DPoP proof signed by that key, never as a bearer token."""

    token: str = field(repr=False)
    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    issuer: str | None = None
    audience: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)
    dpop_jkt: str | None = None

    @property
    def principal(self) -> str | None:
        """A stable identity to bind per-user state to: `issuer` + `subject` (else + `client_id`)."""
        who = self.subject or self.client_id
        if who is None:
            return None
        return f"{self.issuer or ''}#{who}"

    def has_scopes(self, required: Iterable[str]) -> bool:
        """Whether the token grants every scope of `required`."""
        return set(required) <= self.scopes

    @property
    def expired(self) -> bool:
        """Whether the token has expired (False when its expiry is unknown)."""
        return self.expires_at is not None and now() >= self.expires_at


def confirmation_jkt(claims: Mapping[str, Any]) -> str | None:
    """The `cnf.jkt` of token claims (RFC 9449 §6), None without one; `InvalidToken` for a
    confirmation whose `jkt` is not a non-empty string (a malformed binding never turns a token
    into a bearer token)."""
    cnf = claims.get("cnf")
    if not isinstance(cnf, Mapping) or "jkt" not in cnf:
        return None
    jkt = cnf["jkt"]
    if not isinstance(jkt, str) or not jkt:
        raise InvalidToken("malformed DPoP confirmation (cnf.jkt)")
    return jkt


def principal_of(auth: Any) -> str | None:
    """A stable string for the principal a request was made by (what sealed state is bound to):
    its `principal` (an `AuthInfo`: issuer and subject), else its `subject`, else its `client_id`,
    else the value itself; None without authentication."""
    if auth is None:
        return None
    for attribute in ("principal", "subject", "client_id"):
        value = getattr(auth, attribute, None)
        if isinstance(value, str) and value:
            return value
    return str(auth)
