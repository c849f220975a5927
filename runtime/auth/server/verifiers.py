"""Access token verification for a protected MCP server.

`TokenVerifier` is the interface the middleware calls. Two ship here:

- `JWTVerifier`: JWT access tokens (RFC 9068 style) checked locally: signature against the
  authorization server's JWKS (fetched over HTTP and cached, refetched when an unknown `kid` shows
  up), `iss`, `aud` (required: a token for another resource is refused), `exp`/`nbf` with leeway.
  Asymmetric algorithms only. Needs the `auth` extra (PyJWT with `cryptography`).
- `IntrospectionVerifier`: opaque tokens checked at the authorization server's RFC 7662
  introspection endpoint, with the same audience requirement.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from ..shared._util import LoopLock, basic_auth_header, decode_json, read_capped, split_scopes
from ..shared.errors import AuthError, InvalidToken, VerifierUnavailable
from ..shared.principal import AuthInfo, confirmation_jkt
from ..shared.signing import jwt_module

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


@runtime_checkable
class TokenVerifier(Protocol):
    """Checks an access token presented to this server. Raises `InvalidToken` for a token that must
    be refused (401) and `VerifierUnavailable` when it cannot tell right now (503)."""

    async def verify(self, token: str) -> AuthInfo:
        """Check `token`; the principal it speaks for.

        Raises:
            InvalidToken: the token must be refused (401).
            VerifierUnavailable: the token cannot be checked right now (503).
        """
        ...


def _audiences(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _auth_info(token: str, claims: Mapping[str, Any]) -> AuthInfo:
    scopes = split_scopes(claims.get("scope")) or split_scopes(claims.get("scp"))
    exp = claims.get("exp")
    return AuthInfo(
        token=token,
        subject=_opt_str(claims.get("sub")),
        client_id=_opt_str(claims.get("client_id")) or _opt_str(claims.get("azp")),
        scopes=frozenset(scopes),
        expires_at=float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None,
        issuer=_opt_str(claims.get("iss")),
        audience=_audiences(claims.get("aud")),
        claims=dict(claims),
        dpop_jkt=confirmation_jkt(claims),
    )


class _HttpUser:
    def __init__(self, http_client: httpx.AsyncClient | None, timeout: float) -> None:
        self._http = http_client
        self.timeout = timeout

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http is not None:
            yield self._http
            return
        async with httpx.AsyncClient(timeout=self.timeout) as http:
            yield http


class JWTVerifier(_HttpUser):
    """Verify JWT access tokens issued by `issuer` for `audience` (this server's resource URL, or
    several). Keys come from `jwks` (a static JWK set) or `jwks_uri` (fetched, cached `cache_ttl`
    seconds, refetched at most every `min_refetch_interval` seconds when a token names an unknown
    key). A token's DPoP confirmation (`cnf.jkt`) comes back as `AuthInfo.dpop_jkt`, which
    `BearerAuthMiddleware` accepts only with a matching proof. `algorithms` are the signature
    algorithms accepted (asymmetric only), `leeway` the clock skew allowed on `exp`/`nbf`/`iat`
    (seconds); `http_client` fetches the key set (default: one per fetch, with `timeout` seconds).

    Raises:
        ValueError: neither `jwks_uri` nor `jwks`, or a symmetric or `none` algorithm.
    """

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        *,
        issuer: str | None,
        audience: str | Sequence[str],
        jwks_uri: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        cache_ttl: float = 300.0,
        min_refetch_interval: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
    ) -> None:
        if jwks_uri is None and jwks is None:
            raise ValueError("JWTVerifier needs jwks_uri or jwks")
        unsafe = [a for a in algorithms if a == "none" or a.startswith("HS")]
        if unsafe:
            raise ValueError(f"JWTVerifier only accepts asymmetric algorithms, not {unsafe}")
        super().__init__(http_client, timeout)
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.jwks_uri = jwks_uri
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.cache_ttl = cache_ttl
        self.min_refetch_interval = min_refetch_interval
        self._keys: dict[str | None, Any] = self._parse_jwks(jwks) if jwks is not None else {}
        self._fetched_at: float | None = None
        self._lock = LoopLock()

    @staticmethod
    def _parse_jwks(doc: object) -> dict[str | None, Any]:
        jwt = jwt_module()
        keys: dict[str | None, Any] = {}
        entries = doc.get("keys") if isinstance(doc, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWKError:
                continue  # a key type or curve we do not handle: skip it, keep the others
            keys.setdefault(_opt_str(entry.get("kid")), key)
        return keys

    async def _refresh_keys(self, *, force: bool) -> None:
        if self.jwks_uri is None:
            return
        async with self._lock.get():
            age = None if self._fetched_at is None else time.monotonic() - self._fetched_at
            if age is not None and (age < self.min_refetch_interval or (not force and age < self.cache_ttl)):
                return
            try:
                async with self._client() as http, http.stream("GET", self.jwks_uri) as response:
                    body = await read_capped(response)
            except (httpx.HTTPError, AuthError) as exc:
                raise VerifierUnavailable(f"could not fetch JWKS from {self.jwks_uri}: {exc!r}") from exc
            if response.status_code != 200:
                raise VerifierUnavailable(f"JWKS at {self.jwks_uri} answered HTTP {response.status_code}")
            self._keys = self._parse_jwks(decode_json(body))
            self._fetched_at = time.monotonic()

    def _find_key(self, kid: str | None, alg: str) -> Any | None:
        if kid is not None:
            return self._keys.get(kid)
        usable = [k for k in self._keys.values() if getattr(k, "algorithm_name", alg) == alg]
        return usable[0] if len(usable) == 1 else None

    async def verify(self, token: str) -> AuthInfo:
        """Check `token`; the principal it speaks for.

        Raises:
            InvalidToken: the token must be refused (401).
            VerifierUnavailable: the token cannot be checked right now (503).
        """
        jwt = jwt_module()
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken("malformed token") from exc
        alg = header.get("alg")
        kid = _opt_str(header.get("kid"))
        if alg not in self.algorithms:
            raise InvalidToken(f"token algorithm {alg!r} is not accepted")
        await self._refresh_keys(force=False)
        key = self._find_key(kid, alg)
        if key is None:
            await self._refresh_keys(force=True)
            key = self._find_key(kid, alg)
        if key is None:
            raise InvalidToken("token signed with an unknown key")
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "aud"] + (["iss"] if self.issuer else [])},
            )
        except jwt.ExpiredSignatureError as exc:
            raise InvalidToken("token expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise InvalidToken("token is not for this resource") from exc
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"token rejected: {exc}") from exc
        return _auth_info(token, claims)


class IntrospectionVerifier(_HttpUser):
    """Verify tokens at an RFC 7662 introspection endpoint, authenticating as `client_id` with
    `client_secret` (`client_secret_basic`, or `client_secret_post` via `auth_method`). The token
    must be active, unexpired, for `audience` (refused when the response names no audience, unless
    `require_audience=False`) and, when `issuer` is given, from that issuer.
    `introspection_endpoint` is the endpoint's URL; `leeway` the clock skew allowed on `exp`
    (seconds); `http_client` makes the requests (default: one per request, with `timeout` seconds).

    Raises:
        ValueError: `auth_method` is neither `client_secret_basic` nor `client_secret_post`.
    """

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        introspection_endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        audience: str | Sequence[str],
        issuer: str | None = None,
        auth_method: str = "client_secret_basic",
        require_audience: bool = True,
        leeway: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
    ) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("auth_method must be client_secret_basic or client_secret_post")
        super().__init__(http_client, timeout)
        self.endpoint = introspection_endpoint
        self.client_id = client_id
        self.client_secret = client_secret
        self.audience = {audience} if isinstance(audience, str) else set(audience)
        self.issuer = issuer
        self.auth_method = auth_method
        self.require_audience = require_audience
        self.leeway = leeway

    async def _introspect(self, token: str) -> object:
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"Accept": "application/json"}
        if self.auth_method == "client_secret_basic":
            headers["Authorization"] = basic_auth_header(self.client_id, self.client_secret)
        else:
            form.update(client_id=self.client_id, client_secret=self.client_secret)
        try:
            async with self._client() as http, http.stream("POST", self.endpoint, data=form, headers=headers) as r:
                body = await read_capped(r)
        except (httpx.HTTPError, AuthError) as exc:
            raise VerifierUnavailable(f"introspection at {self.endpoint} failed: {exc!r}") from exc
        if r.status_code != 200:
            raise VerifierUnavailable(f"introspection at {self.endpoint} answered HTTP {r.status_code}")
        return decode_json(body)

    async def verify(self, token: str) -> AuthInfo:
        """Check `token`; the principal it speaks for.

        Raises:
            InvalidToken: the token must be refused (401).
            VerifierUnavailable: the token cannot be checked right now (503).
        """
        doc = await self._introspect(token)
        if not isinstance(doc, dict):
            raise VerifierUnavailable(f"introspection at {self.endpoint} returned no JSON object")
        if doc.get("active") is not True:
            raise InvalidToken("token is not active")
        info = _auth_info(token, doc)
        if info.expires_at is not None and time.time() > info.expires_at + self.leeway:
            raise InvalidToken("token expired")
        if (info.audience or self.require_audience) and not self.audience.intersection(info.audience):
            raise InvalidToken("token is not for this resource")
        if self.issuer is not None and info.issuer != self.issuer:
            raise InvalidToken("token is from another issuer")
        return info
