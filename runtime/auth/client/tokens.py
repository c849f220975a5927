"""Requests to an authorization server's token and registration endpoints: client authentication
(`none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`), DPoP proofs with the
`use_dpop_nonce` retry, token response parsing, dynamic client registration (RFC 7591)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ..shared._util import basic_auth_header, decode_json, now, read_capped, split_scopes
from ..shared.errors import AuthError, RegistrationError, TokenRequestError, UnsupportedServerError
from ..shared.metadata import AuthorizationServerMetadata
from ..shared.signing import DPoPProofs, SigningKey, client_assertion
from .storage import ClientInfo, TokenSet

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SUPPORTED_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")


@dataclass
class ClientAuth:
    """How to authenticate one client at a token endpoint. `audience` is the `aud` of a
    `private_key_jwt` assertion: the authorization server's issuer."""

    method: str
    client_id: str | None
    client_secret: str | None = None
    key: SigningKey | None = None
    audience: str = ""

    def apply(self, form: dict[str, str], headers: dict[str, str]) -> None:
        if self.method == "client_secret_basic" and self.client_id and self.client_secret is not None:
            headers["Authorization"] = basic_auth_header(self.client_id, self.client_secret)
            return
        if self.client_id:
            form.setdefault("client_id", self.client_id)
        if self.method == "client_secret_post" and self.client_secret is not None:
            form["client_secret"] = self.client_secret
        elif self.method == "private_key_jwt" and self.key is not None and self.client_id:
            form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
            form["client_assertion"] = client_assertion(self.key, self.client_id, self.audience)


def choose_auth_method(client: ClientInfo, meta: AuthorizationServerMetadata) -> str:
    """The registered method when there is one; else, for a client holding a secret, the first of
    `client_secret_basic` / `client_secret_post` the server lists (basic when it lists nothing,
    the RFC 8414 default); else `none`."""
    if client.token_endpoint_auth_method in SUPPORTED_AUTH_METHODS:
        return client.token_endpoint_auth_method
    if client.client_secret is None:
        return "none"
    offered = meta.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in offered:
            return method
    raise UnsupportedServerError(f"token endpoint offers no authentication method this client can use: {offered}")


def registration_auth_method(meta: AuthorizationServerMetadata) -> str:
    """What a new (native, public) client asks for at registration: `none` unless the server lists
    methods without it."""
    offered = meta.token_endpoint_auth_methods_supported
    if offered is None or "none" in offered:
        return "none"
    for method in ("client_secret_basic", "client_secret_post"):
        if method in offered:
            return method
    raise UnsupportedServerError(f"token endpoint offers no authentication method this client can use: {offered}")


def _error_fields(doc: Any) -> tuple[str | None, str | None]:
    if not isinstance(doc, dict):
        return None, None
    error, description = doc.get("error"), doc.get("error_description")
    return (error if isinstance(error, str) else None, description if isinstance(description, str) else None)


async def _post_form(
    http: httpx.AsyncClient, url: str, form: Mapping[str, str], headers: Mapping[str, str]
) -> tuple[httpx.Response, Any]:
    try:
        async with http.stream("POST", url, data=dict(form), headers={"Accept": "application/json", **headers}) as r:
            return r, decode_json(await read_capped(r))
    except httpx.HTTPError as exc:
        raise AuthError(f"request to {url} failed: {exc!r}") from exc


async def token_endpoint_call(
    http: httpx.AsyncClient,
    endpoint: str,
    form: Mapping[str, str],
    auth: ClientAuth,
    dpop: DPoPProofs | None = None,
) -> dict[str, Any]:
    """POST one token request and return the JSON success response. With `dpop`, a proof goes with
    it and a `use_dpop_nonce` challenge is answered once with the nonce the server supplied."""
    for attempt in range(2):
        body: dict[str, str] = dict(form)
        headers: dict[str, str] = {}
        auth.apply(body, headers)
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint)
        response, doc = await _post_form(http, endpoint, body, headers)
        fresh_nonce = dpop.note_nonce(endpoint, response.headers.get("DPoP-Nonce")) if dpop is not None else False
        if response.status_code == 200 and isinstance(doc, dict):
            return doc
        error, description = _error_fields(doc)
        if error == "use_dpop_nonce" and fresh_nonce and attempt == 0:
            continue
        raise TokenRequestError(
            f"{endpoint} refused the {form.get('grant_type', 'token')} request: HTTP {response.status_code}"
            + (f" {error}" if error else "")
            + (f" ({description})" if description else ""),
            status=response.status_code,
            error=error,
            error_description=description,
        )
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class TokenTarget:
    """What a token response is about: the authorization server that answered, the resource the
    tokens are for, the DPoP proofs sent with the request (if any), the client they were issued to."""

    meta: AuthorizationServerMetadata
    resource: str
    dpop: DPoPProofs | None = None
    client_id: str | None = None


def parse_token_response(
    doc: Mapping[str, Any],
    requested_scopes: Sequence[str],
    target: TokenTarget,
    previous_refresh_token: str | None = None,
) -> TokenSet:
    """A TokenSet from a successful token response (RFC 6749 §5.1). The granted scopes are the
    response's `scope`, else the requested ones; a refresh that returns no new refresh token keeps
    the old one."""
    access_token = doc.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise TokenRequestError("token response has no access_token", status=200)
    token_type = doc.get("token_type")
    token_type = token_type if isinstance(token_type, str) and token_type else "Bearer"
    if token_type.lower() not in ("bearer", "dpop"):
        raise UnsupportedServerError(f"unsupported token_type {token_type!r}")
    expires_in = doc.get("expires_in")
    lifetime = expires_in if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) else None
    refresh_token = doc.get("refresh_token")
    granted = split_scopes(doc.get("scope")) if "scope" in doc else list(requested_scopes)
    is_dpop = token_type.lower() == "dpop"
    return TokenSet(
        access_token=access_token,
        token_type="DPoP" if is_dpop else "Bearer",
        expires_at=now() + lifetime if lifetime is not None else None,
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else previous_refresh_token,
        scopes=tuple(granted),
        issuer=target.meta.issuer,
        token_endpoint=target.meta.token_endpoint,
        resource=target.resource,
        dpop_jkt=target.dpop.jkt if is_dpop and target.dpop is not None else None,
        client_id=target.client_id,
    )


async def register_client(
    http: httpx.AsyncClient, endpoint: str, metadata: Mapping[str, Any], *, issuer: str
) -> ClientInfo:
    """Dynamic client registration (RFC 7591); the result is bound to `issuer`."""
    try:
        async with http.stream(
            "POST", endpoint, json=dict(metadata), headers={"Accept": "application/json"}
        ) as response:
            doc = decode_json(await read_capped(response))
    except httpx.HTTPError as exc:
        raise RegistrationError(f"registration at {endpoint} failed: {exc!r}") from exc
    if response.status_code not in (200, 201) or not isinstance(doc, dict):
        error, description = _error_fields(doc)
        detail = f" {error}" + (f" ({description})" if description else "") if error else ""
        raise RegistrationError(f"registration at {endpoint} refused: HTTP {response.status_code}{detail}")
    client_id = doc.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise RegistrationError(f"registration at {endpoint} returned no client_id")
    secret = doc.get("client_secret")
    method = doc.get("token_endpoint_auth_method")
    expires = doc.get("client_secret_expires_at")
    uris = doc.get("redirect_uris")
    return ClientInfo(
        client_id=client_id,
        client_secret=secret if isinstance(secret, str) else None,
        token_endpoint_auth_method=method if isinstance(method, str) else metadata.get("token_endpoint_auth_method"),
        issuer=issuer,
        client_secret_expires_at=float(expires) if isinstance(expires, (int, float)) else None,
        redirect_uris=tuple(u for u in uris if isinstance(u, str))
        if isinstance(uris, list)
        else tuple(metadata.get("redirect_uris", ())),
    )
