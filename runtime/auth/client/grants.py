"""Flows without a user at a browser (the MCP authorization extensions):

- `ClientCredentials`: the client acts on its own behalf (`client_credentials` grant) and
  authenticates with a secret (`client_secret_basic` / `client_secret_post`) or a private key
  (`private_key_jwt`).
- `WorkloadIdentity`: a workload presents a JWT its platform issued it (RFC 7523 JWT bearer grant).
  Errors are raised as they come: no retry and no other grant is tried.
- `EnterpriseManaged`: enterprise-managed authorization. The user's identity provider token is
  exchanged at the identity provider for an identity assertion JWT authorization grant (ID-JAG,
  RFC 8693 token exchange), which is then presented to the MCP server's authorization server
  (RFC 7523 JWT bearer grant).

Each is an `httpx.Auth` like `OAuth`, with the same discovery, scope, DPoP and storage handling;
the keyword options of `OAuthFlow` (`server_url`, `storage`, `dpop`...) apply.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import ClassVar, TypeAlias, TypedDict

import httpx
from typing_extensions import Unpack

from ..shared.errors import RegistrationError, TokenRequestError, UnsupportedServerError
from ..shared.metadata import AuthorizationServerMetadata
from ..shared.signing import SigningKey
from .flow import AuthContext, OAuthFlow
from .storage import TokenSet, TokenStorage
from .tokens import ClientAuth, token_endpoint_call

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"

Assertion: TypeAlias = str | Callable[[], str | Awaitable[str]]


class FlowOptions(TypedDict, total=False):
    """The keyword options every flow accepts (see `OAuthFlow`)."""

    server_url: str | None
    storage: TokenStorage | None
    protocol_version: str | None
    http_client: httpx.AsyncClient | None
    timeout: float
    dpop: bool | None
    dpop_key: SigningKey | None
    max_authorizations: int
    legacy_fallbacks: bool
    refresh_margin: float
    allow_insecure_http: bool


async def _resolve(assertion: Assertion) -> str:
    if isinstance(assertion, str):
        return assertion
    value = assertion()
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, str) or not value:
        raise TypeError("the assertion provider must return a non-empty string")
    return value


def _secret_auth(
    client_id: str | None,
    client_secret: str | None,
    key: SigningKey | None,
    meta: AuthorizationServerMetadata,
    method: str | None = None,
) -> ClientAuth:
    """Client authentication from what the client holds: a key → `private_key_jwt`; a secret → the
    configured method, else basic or post as the server offers (basic when it says nothing); else
    `none` (with `client_id` in the form when there is one)."""
    if key is not None:
        return ClientAuth("private_key_jwt", client_id, None, key, meta.issuer)
    if client_secret is None:
        return ClientAuth("none", client_id)
    if method is None:
        offered = meta.token_endpoint_auth_methods_supported or ("client_secret_basic",)
        post_only = "client_secret_basic" not in offered and "client_secret_post" in offered
        method = "client_secret_post" if post_only else "client_secret_basic"
    return ClientAuth(method, client_id, client_secret)


def _with_scope(form: dict[str, str], scopes: list[str]) -> dict[str, str]:
    if scopes:
        form["scope"] = " ".join(scopes)
    return form


def _require_grant(meta: AuthorizationServerMetadata, grant: str) -> None:
    if meta.grant_types_supported is not None and grant not in meta.grant_types_supported:
        raise UnsupportedServerError(f"{meta.issuer} does not support the {grant} grant")


class _IssuerBound(OAuthFlow):
    """A grant whose client credentials belong to one authorization server (`issuer`, or the first
    one used). Subclasses name `grant_type` and give the grant's own form fields
    (`_grant_fields`); the request, the client authentication and refreshes are shared."""

    grant_type: ClassVar[str]
    client_id: str | None
    client_secret: str | None = None
    signing_key: SigningKey | None = None
    auth_method: str | None = None

    def __init__(self, issuer: str | None, **options: Unpack[FlowOptions]) -> None:
        super().__init__(**options)
        self._bound_issuer = issuer

    def _preferred_issuer(self) -> str | None:
        return self._bound_issuer

    def _check_issuer(self, issuer: str) -> None:
        if self._bound_issuer is None:
            self._bound_issuer = issuer
        elif self._bound_issuer != issuer:
            raise RegistrationError(
                f"these client credentials belong to {self._bound_issuer}, but the server now uses {issuer}"
            )

    async def _grant_fields(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> dict[str, str]:
        """The grant's form fields besides `grant_type` and `scope`."""
        return {}

    def _scopes(self, suggested: list[str]) -> list[str]:
        """The scopes to ask for, given those the server suggested."""
        return suggested

    async def _grant(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> TokenSet:
        meta = ctx.metadata
        self._check_issuer(meta.issuer)
        _require_grant(meta, self.grant_type)
        scopes = self._scopes(scopes)
        fields = await self._grant_fields(http, ctx, scopes)
        form = _with_scope({"grant_type": self.grant_type, **fields}, scopes)
        return await self._request_tokens(http, ctx, form, self._secret(meta), scopes)

    async def _client_auth(self, meta: AuthorizationServerMetadata, client_id: str | None) -> ClientAuth | None:
        return self._secret(meta)

    def _secret(self, meta: AuthorizationServerMetadata) -> ClientAuth:
        return _secret_auth(self.client_id, self.client_secret, self.signing_key, meta, self.auth_method)


class ClientCredentials(_IssuerBound):
    """The `client_credentials` grant, as client `client_id`. Give `client_secret` (method
    `auth_method`, default: what the server offers) or `signing_key` (`private_key_jwt`, assertion
    audience = the issuer). `scopes`, when given, replace the server-suggested scopes on the first
    request. `issuer` binds the credentials to that authorization server (default: the first one
    used). See `OAuthFlow` for the remaining options.

    Raises:
        ValueError: neither `client_secret` nor `signing_key` was given.
    """

    grant_type = "client_credentials"

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        signing_key: SigningKey | None = None,
        auth_method: str | None = None,
        scopes: list[str] | None = None,
        issuer: str | None = None,
        **options: Unpack[FlowOptions],
    ) -> None:
        if client_secret is None and signing_key is None:
            raise ValueError("ClientCredentials needs client_secret or signing_key")
        super().__init__(issuer, **options)
        self.client_id = client_id
        self.client_secret = client_secret
        self.signing_key = signing_key
        self.auth_method = auth_method
        self.scopes = scopes

    def _scopes(self, suggested: list[str]) -> list[str]:
        return list(self.scopes) if self.scopes is not None and self._requested is None else suggested


class WorkloadIdentity(_IssuerBound):
    """The RFC 7523 JWT bearer grant with a workload identity token as `assertion` (a string, or a
    callable returning one, called for each grant so a rotated token is picked up). `client_id` and
    `client_secret` are sent when the authorization server wants the client identified too;
    `issuer` binds them to that authorization server (default: the first one used). See `OAuthFlow`
    for the remaining options."""

    grant_type = JWT_BEARER

    def __init__(
        self,
        assertion: Assertion,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        **options: Unpack[FlowOptions],
    ) -> None:
        super().__init__(issuer, **options)
        self.assertion = assertion
        self.client_id = client_id
        self.client_secret = client_secret

    async def _grant_fields(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> dict[str, str]:
        return {"assertion": await _resolve(self.assertion)}


class EnterpriseManaged(_IssuerBound):
    """Enterprise-managed authorization. `id_token` (string or callable) is the user's token from the
    identity provider whose token endpoint is `idp_token_endpoint` (client `idp_client_id`, with
    `idp_client_secret` when it is confidential there). The resulting ID-JAG is presented to the MCP
    server's authorization server as client `client_id` / `client_secret` (bound to `issuer`, or to
    the first authorization server used). See `OAuthFlow` for the remaining options."""

    grant_type = JWT_BEARER

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        *,
        id_token: Assertion,
        idp_token_endpoint: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        issuer: str | None = None,
        **options: Unpack[FlowOptions],
    ) -> None:
        super().__init__(issuer, **options)
        self.id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.client_id = client_id
        self.client_secret = client_secret
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def _grant_fields(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> dict[str, str]:
        return {"assertion": await self._exchange(http, ctx, scopes)}

    async def _exchange(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> str:
        """RFC 8693 token exchange at the identity provider: ID token in, ID-JAG out."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG_TOKEN_TYPE,
            "subject_token": await _resolve(self.id_token),
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": ctx.issuer,
            "resource": ctx.resource,
        }
        idp = AuthorizationServerMetadata(issuer=self.idp_token_endpoint, token_endpoint=self.idp_token_endpoint)
        auth = _secret_auth(self.idp_client_id, self.idp_client_secret, None, idp)
        doc = await token_endpoint_call(http, self.idp_token_endpoint, _with_scope(form, scopes), auth)
        issued_type = doc.get("issued_token_type")
        token = doc.get("access_token")
        if issued_type not in (None, ID_JAG_TOKEN_TYPE) or not isinstance(token, str) or not token:
            raise TokenRequestError(
                f"the identity provider did not issue an ID-JAG (issued_token_type {issued_type!r})", status=200
            )
        return token
