"""Signing out: token revocation (RFC 7009) at the authorization server that issued the tokens,
then forgetting them. `OAuthFlow.sign_out()` is the entry point; `mcpgen logout --url URL` uses it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import httpx

from ..shared.errors import AuthError
from ..shared.metadata import AuthorizationServerMetadata
from .discovery import discover_authorization_server, require_secure
from .tokens import ClientAuth, _post_form

if TYPE_CHECKING:
    from .flow import OAuthFlow
    from .storage import TokenSet

log = logging.getLogger("mcpgen.runtime.auth")


async def revoke_token(http: httpx.AsyncClient, endpoint: str, token: str, hint: str, auth: ClientAuth) -> bool:
    """POST one RFC 7009 revocation request; True when the server answered 200 (which it does for
    a token it no longer knows, too)."""
    form = {"token": token, "token_type_hint": hint}
    headers: dict[str, str] = {}
    auth.apply(form, headers)
    try:
        response, _ = await _post_form(http, endpoint, form, headers)
    except AuthError as exc:
        log.warning("could not revoke a token: %s", exc)
        return False
    if response.status_code != 200:
        log.warning("%s refused to revoke a token: HTTP %d", endpoint, response.status_code)
    return response.status_code == 200


async def sign_out(flow: OAuthFlow) -> bool:
    """Revoke the tokens `flow` holds for its server (refresh token, then access token) where their
    authorization server has a revocation endpoint, and forget them in any case. True when every
    revocation was accepted; False when there was nothing to revoke or it could not be done."""
    if flow.server_url is None:
        raise ValueError("sign_out() needs the flow's server_url (or one request made through it)")
    async with flow._lock.get():
        tokens = flow._tokens if flow._loaded else await flow.storage.get_tokens(flow._storage_key)
        revoked = False
        if tokens is not None and tokens.issuer:
            async with flow._client() as http:
                revoked = await _revoke_all(flow, http, tokens)
        flow._loaded = True
        await flow._save(None)
    return revoked


async def _revoke_all(flow: OAuthFlow, http: httpx.AsyncClient, tokens: TokenSet) -> bool:
    assert tokens.issuer is not None
    context = flow._context
    meta: AuthorizationServerMetadata | None = context.metadata if context and context.issuer == tokens.issuer else None
    if meta is None or meta.revocation_endpoint is None:
        try:
            require_secure("the authorization server", tokens.issuer, allow_insecure_http=flow.allow_insecure_http)
            meta = await discover_authorization_server(http, tokens.issuer, {})
        except AuthError as exc:
            log.warning("signing out without revoking: %s", exc)
            return False
    endpoint = meta.revocation_endpoint
    if endpoint is None:
        return False
    require_secure("the revocation endpoint", endpoint, allow_insecure_http=flow.allow_insecure_http)
    auth = await flow._client_auth(meta, tokens.client_id) or ClientAuth("none", tokens.client_id)
    results = [
        await revoke_token(http, endpoint, token, hint, auth)
        for token, hint in ((tokens.refresh_token, "refresh_token"), (tokens.access_token, "access_token"))
        if token
    ]
    return all(results)
