"""`OAuth`: the authorization code flow with PKCE for a client acting on behalf of a user.

Client identity, in the specified priority order: pre-registered credentials (`client=`), a client
ID metadata document (`client_metadata_url=`, when the authorization server advertises support),
an earlier dynamic registration at the same issuer (from storage), a new dynamic registration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
from typing_extensions import Unpack

from ..shared._util import new_state, pkce_pair
from ..shared.errors import AuthorizationResponseError, RegistrationError, UnsupportedServerError
from ..shared.metadata import AuthorizationServerMetadata
from ..shared.signing import SigningKey
from .flow import AuthContext, OAuthFlow
from .grants import FlowOptions
from .redirect import BrowserRedirectHandler, RedirectHandler
from .storage import ClientInfo, TokenSet
from .tokens import ClientAuth, choose_auth_method, register_client, registration_auth_method


def validate_authorization_response(
    params: Mapping[str, str], *, state: str, metadata: AuthorizationServerMetadata
) -> str:
    """The authorization code, after the RFC 9207 `iss` check (simple string comparison against the
    issuer recorded from validated metadata; required when the server advertises it, compared
    whenever present), the `state` check and the error check, in that order: an `error` is never
    acted on before `iss` validated.

    Args:
        params: the query parameters of the redirect back to the client.
        state: the `state` the authorization request was sent with.
        metadata: the authorization server's validated metadata.

    Returns:
        The authorization code.

    Raises:
        AuthorizationResponseError: a check failed (its `reason` says which).
    """
    iss = params.get("iss")
    if iss is None and metadata.iss_parameter_supported:
        raise AuthorizationResponseError(
            "authorization response lacks the `iss` parameter its server advertises", reason="iss_missing"
        )
    if iss is not None and iss != metadata.issuer:
        raise AuthorizationResponseError(
            f"authorization response `iss` {iss!r} is not the expected issuer {metadata.issuer!r}",
            reason="iss_mismatch",
        )
    if params.get("state") != state:
        raise AuthorizationResponseError("authorization response `state` does not match", reason="state_mismatch")
    error = params.get("error")
    if error is not None:
        description = params.get("error_description")
        raise AuthorizationResponseError(
            f"authorization refused: {error}" + (f" ({description})" if description else ""),
            reason="error",
            error=error,
            error_description=description,
        )
    code = params.get("code")
    if not code:
        raise AuthorizationResponseError("authorization response carries no code", reason="no_code")
    return code


def _with_query(url: str, params: Mapping[str, str]) -> str:
    return url + ("&" if urlsplit(url).query else "?") + urlencode(params)


class OAuth(OAuthFlow):
    """Authorization code + PKCE (S256) + `state` + RFC 8707 `resource` + RFC 9207 `iss` checks.

    `redirect_handler` gets the user through the authorization endpoint (default: a
    `BrowserRedirectHandler`). `client` are pre-registered credentials (with `issuer` set they are
    only used at that authorization server; without, they bind to the first one used).
    `client_metadata_url` is this client's metadata document (an https URL with a path), used as its
    `client_id` where the server supports that. `client_name`, `application_type` and
    `client_metadata` describe the client in dynamic registrations. `offline_access` asks for
    `offline_access` (refresh tokens) when the authorization server lists it. `client_signing_key`
    signs `private_key_jwt` client assertions for a `client` registered with that method.
    See `OAuthFlow` for the remaining parameters.

    Raises:
        ValueError: `client_metadata_url` is not an https URL with a path.
    """

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        *,
        redirect_handler: RedirectHandler | None = None,
        client: ClientInfo | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpgen",
        application_type: str = "native",
        client_metadata: Mapping[str, Any] | None = None,
        client_signing_key: SigningKey | None = None,
        offline_access: bool = True,
        **options: Unpack[FlowOptions],
    ) -> None:
        super().__init__(**options)
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        self._redirect = redirect_handler
        self.client = client
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.application_type = application_type
        self.client_metadata = dict(client_metadata or {})
        self.client_signing_key = client_signing_key
        self.offline_access = offline_access
        self._bound_issuer = client.issuer if client is not None else None

    @property
    def redirect_handler(self) -> RedirectHandler:
        if self._redirect is None:
            self._redirect = BrowserRedirectHandler()
        return self._redirect

    def _preferred_issuer(self) -> str | None:
        return self._bound_issuer

    def _wants_offline_access(self) -> bool:
        return self.offline_access

    async def _grant(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> TokenSet:
        meta = ctx.metadata
        self._check_server(meta)
        client = await self._client_for(http, ctx, scopes)
        redirect_uri = self.redirect_handler.redirect_uri
        verifier, code_challenge = pkce_pair()
        state = new_state()
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            "resource": ctx.resource,
        }
        if scopes:
            params["scope"] = " ".join(scopes)
        assert meta.authorization_endpoint is not None
        response = await self.redirect_handler.authorize(_with_query(meta.authorization_endpoint, params))
        code = validate_authorization_response(response, state=state, metadata=meta)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": ctx.resource,
        }
        return await self._request_tokens(http, ctx, form, self._auth_for(client, meta), scopes)

    @staticmethod
    def _check_server(meta: AuthorizationServerMetadata) -> None:
        if not meta.authorization_endpoint:
            raise UnsupportedServerError(f"{meta.issuer} has no authorization endpoint")
        if "S256" not in (meta.code_challenge_methods_supported or ()):
            raise UnsupportedServerError(f"{meta.issuer} does not advertise PKCE with S256; refusing to proceed")
        if meta.grant_types_supported is not None and "authorization_code" not in meta.grant_types_supported:
            raise UnsupportedServerError(f"{meta.issuer} does not support the authorization_code grant")

    def _auth_for(self, client: ClientInfo, meta: AuthorizationServerMetadata) -> ClientAuth:
        method = choose_auth_method(client, meta)
        return ClientAuth(method, client.client_id, client.client_secret, self.client_signing_key, meta.issuer)

    async def _client_for(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> ClientInfo:
        issuer = ctx.issuer
        if self.client is not None:
            if self._bound_issuer is None:
                self._bound_issuer = issuer
            if self._bound_issuer != issuer:
                raise RegistrationError(
                    f"the pre-registered client belongs to {self._bound_issuer}, but the server now uses "
                    f"{issuer}; register this client there"
                )
            return self.client
        if self.client_metadata_url is not None and ctx.metadata.client_id_metadata_document_supported:
            return ClientInfo(client_id=self.client_metadata_url, token_endpoint_auth_method="none")
        stored = await self.storage.get_client(issuer)
        if stored is not None and stored.issuer in (None, issuer) and not stored.secret_expired:
            handler, uris = self.redirect_handler, stored.redirect_uris
            adopts = isinstance(handler, BrowserRedirectHandler) and handler.adopt(uris)
            if not uris or handler.redirect_uri in uris or adopts:
                return stored
        redirect_uri = self.redirect_handler.redirect_uri
        endpoint = ctx.metadata.registration_endpoint
        if endpoint is None:
            raise RegistrationError(
                f"{issuer} offers neither client ID metadata documents nor dynamic registration, and no "
                "pre-registered client is configured"
            )
        metadata: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": registration_auth_method(ctx.metadata),
            "application_type": self.application_type,
        }
        if scopes:
            metadata["scope"] = " ".join(scopes)
        metadata.update(self.client_metadata)
        client = await register_client(http, endpoint, metadata, issuer=issuer)
        await self.storage.set_client(issuer, client)
        return client

    async def _client_auth(self, meta: AuthorizationServerMetadata, client_id: str | None) -> ClientAuth | None:
        if self.client is not None and self.client.client_id == client_id:
            return self._auth_for(self.client, meta)
        if client_id is not None and client_id == self.client_metadata_url:
            return ClientAuth("none", client_id)
        stored = await self.storage.get_client(meta.issuer) if meta.issuer else None
        if stored is not None and stored.client_id == client_id:
            return self._auth_for(stored, meta)
        return None
