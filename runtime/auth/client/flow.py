"""The `httpx.Auth` flow every grant shares: attach the token to requests for the MCP server, and on
401 (or 403 `insufficient_scope`) discover the authorization server, obtain new tokens and retry.

Grants (authorization code, client credentials, JWT bearer...) subclass `OAuthFlow` and implement
`_grant`. Everything else lives here: protected resource and authorization server discovery (with
the 2025-03-26 fallbacks when the protocol revision allows them), scope selection and step-up,
refresh, the per-request authorization limit, DPoP, storage, and one lock so that concurrent
requests that all hit a 401 trigger a single authorization.

Side requests (metadata, registration, token endpoint) go through `http_client` when one is given,
else through a short-lived `httpx.AsyncClient` of their own; they never carry the MCP token.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass

import httpx

from ...core.transport import AUTHORIZING_EXTENSION
from ..shared._util import LoopLock, canonical_resource, origin, split_scopes, union_scopes
from ..shared.challenge import first_with, parse_www_authenticate
from ..shared.errors import AuthorizationLimitExceeded, TokenRequestError
from ..shared.metadata import AuthorizationServerMetadata, ProtectedResourceMetadata
from ..shared.signing import DPoPProofs, SigningKey, jwt_available
from .discovery import discover_servers, require_secure
from .storage import InMemoryTokenStorage, TokenSet, TokenStorage
from .tokens import ClientAuth, TokenTarget, parse_token_response, token_endpoint_call

LAST_LEGACY_REVISION = "2025-03-26"
# Token errors after which a refresh token is useless; anything else (network, 5xx) is raised.
_DEAD_REFRESH = frozenset({"invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope"})


@dataclass(frozen=True)
class AuthChallenge:
    """What a 401, or a 403 `insufficient_scope`, asked for."""

    status: int
    """The HTTP status (401 or 403)."""
    resource_metadata: str | None
    """The challenge's `resource_metadata` URL (the protected resource metadata), if it had one."""
    scopes: tuple[str, ...]
    """The scopes the challenge's `scope` parameter asked for."""
    error: str | None
    """The challenge's `error` (`invalid_token`, `insufficient_scope`, `use_dpop_nonce`, ...)."""
    scheme: str = "bearer"  # of the challenge read, lower-cased
    """The challenge's scheme, lower-cased (`bearer` or `dpop`)."""


@dataclass(frozen=True)
class AuthContext:
    """The result of discovery: which authorization server to use, for which resource."""

    server_url: str
    """The MCP endpoint."""
    resource: str
    """The resource tokens are asked for (RFC 8707 `resource`)."""
    metadata: AuthorizationServerMetadata
    """The chosen authorization server's metadata."""
    resource_metadata: ProtectedResourceMetadata | None
    """The MCP server's protected resource metadata (None: it had none, a legacy server)."""
    dpop: DPoPProofs | None
    """The DPoP proofs in use (None: bearer tokens)."""
    revision: str | None
    """The MCP protocol revision in use, when known."""

    @property
    def issuer(self) -> str:
        """The authorization server's issuer identifier."""
        return self.metadata.issuer


def read_challenge(response: httpx.Response) -> AuthChallenge | None:
    """The authorization challenge of a response, or None when it is not one."""
    if response.status_code not in (401, 403):
        return None
    challenges = parse_www_authenticate(response.headers.get_list("www-authenticate"))
    found = first_with(challenges, "Bearer", "DPoP") or (challenges[0] if challenges else None)
    params = found.params if found is not None else {}
    error = params.get("error")
    if response.status_code == 403 and error != "insufficient_scope":
        return None
    return AuthChallenge(
        status=response.status_code,
        resource_metadata=params.get("resource_metadata") or None,
        scopes=tuple(split_scopes(params.get("scope"))),
        error=error,
        scheme=found.scheme.lower() if found is not None else "bearer",
    )


class OAuthFlow(httpx.Auth):
    """Base of the OAuth flows. Use a subclass (`OAuth`, `ClientCredentials`, ...).

    `server_url` is the MCP endpoint; by default the URL of the first request (without its query).
    Tokens are only ever attached to requests for that URL's origin. `protocol_version` is the MCP
    revision in use when the caller knows it; a request's `MCP-Protocol-Version` header overrides it.
    With neither (a request before version negotiation) the 2025-03-26 fallbacks stay allowed.
    `dpop`: True sends DPoP proofs to the token endpoint, False never, None when the authorization
    server advertises ES256 proofs, the MCP server asks for DPoP and the `auth` extra is installed.
    A DPoP-bound token then goes out with the DPoP scheme and a fresh proof on every request.
    Every endpoint authorization uses (the MCP server, the issuer and its endpoints) must be
    `https://` or on a loopback host, else `InsecureEndpointError` before anything is sent there;
    `allow_insecure_http=True` lifts that, for a test deployment on a private network.

    The other options: `storage` keeps tokens and registered clients (default: in memory, see
    `FileTokenStorage`); `http_client` is the client for discovery and token requests (default:
    one per exchange, with `timeout` seconds); `dpop_key` the key of DPoP proofs (default: a new
    ES256 key); `max_authorizations` how many times one request may go through authorization
    before `AuthorizationLimitExceeded`; `legacy_fallbacks` allows the 2025-03-26 revision's
    fallbacks (default endpoints without metadata) for servers of that revision or older; and
    `refresh_margin` how many seconds before expiry a token is refreshed.

    Raises:
        ValueError: `max_authorizations` is less than 1.
    """

    requires_request_body = True

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        *,
        server_url: str | None = None,
        storage: TokenStorage | None = None,
        protocol_version: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        dpop: bool | None = None,
        dpop_key: SigningKey | None = None,
        max_authorizations: int = 3,
        legacy_fallbacks: bool = True,
        refresh_margin: float = 30.0,
        allow_insecure_http: bool = False,
    ) -> None:
        if max_authorizations < 1:
            raise ValueError("max_authorizations must be at least 1")
        self.server_url = server_url
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.protocol_version = protocol_version
        self.timeout = timeout
        self.dpop = dpop
        self.max_authorizations = max_authorizations
        self.legacy_fallbacks = legacy_fallbacks
        self.refresh_margin = refresh_margin
        self.allow_insecure_http = allow_insecure_http
        self._http = http_client
        self._proofs = DPoPProofs(dpop_key)
        self._lock = LoopLock()
        self._tokens: TokenSet | None = None
        self._loaded = False
        self._context: AuthContext | None = None
        self._requested: tuple[str, list[str]] | None = None  # (issuer, scopes last requested there)

    # ----------------------------------------------------------------- httpx.Auth

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Refused: the flows need an `httpx.AsyncClient` (raises `TypeError`); `request` is not sent."""
        raise TypeError(f"{type(self).__name__} needs an httpx.AsyncClient")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """httpx's hook: send `request` with a token (discovering, registering, authorizing and
        refreshing as needed), and again after a 401 or 403 challenge the flow can answer.

        Raises:
            AuthorizationRequired: authorization failed (its subclasses say why).
            AuthorizationLimitExceeded: the server still refuses after `max_authorizations` rounds.
            InsecureEndpointError: an endpoint is neither `https://` nor on a loopback host.
        """
        if self.server_url is None:
            self.server_url = str(request.url.copy_with(query=None, fragment=None))
        if origin(str(request.url)) != origin(self.server_url):
            yield request  # never send this server's tokens anywhere else
            return
        await request.aread()
        revision = request.headers.get("mcp-protocol-version") or self.protocol_version
        tokens = await self._tokens_for_request()
        authorizations = nonce_retries = 0
        while True:
            self._authenticate(request, tokens)
            response = yield request
            fresh_nonce = (
                tokens is not None
                and tokens.is_dpop
                and self._proofs.note_nonce(str(request.url), response.headers.get("DPoP-Nonce"))
            )
            challenge = read_challenge(response)
            if challenge is None:
                return
            # Read the (small) refusal now: its connection goes back to the pool instead of being held
            # through the authorization, and the pool can see a close by the server meanwhile.
            await response.aread()
            if challenge.error == "use_dpop_nonce" and fresh_nonce and nonce_retries < 2:
                nonce_retries += 1
                continue
            if authorizations >= self.max_authorizations:
                raise AuthorizationLimitExceeded(
                    f"{self.server_url} still answers HTTP {response.status_code} after "
                    f"{authorizations} authorization attempt(s)",
                    status=response.status_code,
                    scopes=challenge.scopes,
                )
            authorizations += 1
            tokens = await self._authorize_held(request, challenge, tokens, revision, first=authorizations == 1)

    async def _authorize_held(
        self,
        request: httpx.Request,
        challenge: AuthChallenge,
        failed: TokenSet | None,
        revision: str | None,
        *,
        first: bool,
    ) -> TokenSet:
        """`_reauthorize`, telling the MCP transport (when it asked, through the request's
        `mcpgen.authorizing` extension) that the request is held up meanwhile: the user's time at
        the authorization server does not count against the call's timeout."""
        notify = request.extensions.get(AUTHORIZING_EXTENSION)
        if notify is None:
            return await self._reauthorize(challenge, failed, revision, first=first)
        await notify(True)
        try:
            return await self._reauthorize(challenge, failed, revision, first=first)
        finally:
            await notify(False)  # (cancelled: the call is over, nothing to restart)

    def _authenticate(self, request: httpx.Request, tokens: TokenSet | None) -> None:
        request.headers.pop("Authorization", None)
        request.headers.pop("DPoP", None)
        if tokens is None:
            return
        if tokens.is_dpop:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = self._proofs.proof(
                request.method, str(request.url), access_token=tokens.access_token
            )
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    # ----------------------------------------------------------------- tokens

    @property
    def _storage_key(self) -> str:
        assert self.server_url is not None
        return canonical_resource(self.server_url)

    async def _tokens_for_request(self) -> TokenSet | None:
        async with self._lock.get():
            if not self._loaded:
                self._loaded = True
                stored = await self.storage.get_tokens(self._storage_key)
                if stored is not None and stored.is_dpop and stored.dpop_jkt != self._current_jkt():
                    stored = None  # bound to a key this process does not hold
                self._tokens = stored
            tokens = self._tokens
            if tokens is not None and tokens.refresh_token and tokens.expires_within(self.refresh_margin):
                async with self._client() as http:
                    refreshed = await self._refresh(http, self._metadata_for(tokens), tokens)
                if refreshed is not None:
                    await self._save(refreshed)
                    tokens = refreshed
            return None if tokens is None or tokens.expired else tokens

    def _current_jkt(self) -> str | None:
        try:
            return self._proofs.jkt
        except Exception:  # no key and no extra to make one: nothing can be bound to us
            return None

    def _metadata_for(self, tokens: TokenSet) -> AuthorizationServerMetadata:
        if self._context is not None and self._context.issuer == tokens.issuer:
            return self._context.metadata
        return AuthorizationServerMetadata(issuer=tokens.issuer or "", token_endpoint=tokens.token_endpoint or "")

    async def _save(self, tokens: TokenSet | None) -> None:
        self._tokens = tokens
        await self.storage.set_tokens(self._storage_key, tokens)

    async def _refresh(
        self, http: httpx.AsyncClient, meta: AuthorizationServerMetadata, tokens: TokenSet
    ) -> TokenSet | None:
        """A refresh-token grant; None (and the tokens forgotten) when the authorization server says
        the refresh token or client is no longer good."""
        auth = await self._client_auth(meta, tokens.client_id)
        if auth is None or not meta.token_endpoint or tokens.refresh_token is None:
            return None
        require_secure("the token endpoint", meta.token_endpoint, allow_insecure_http=self.allow_insecure_http)
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        if tokens.resource:
            form["resource"] = tokens.resource
        dpop = self._proofs if tokens.is_dpop else None
        try:
            doc = await token_endpoint_call(http, meta.token_endpoint, form, auth, dpop)
        except TokenRequestError as exc:
            if exc.error in _DEAD_REFRESH or exc.status in (400, 401):
                await self._save(None)
                return None
            raise
        target = TokenTarget(meta, tokens.resource or self._storage_key, dpop, tokens.client_id)
        return parse_token_response(doc, tokens.scopes, target, tokens.refresh_token)

    # ----------------------------------------------------------------- authorization

    async def _reauthorize(
        self, challenge: AuthChallenge, failed: TokenSet | None, revision: str | None, *, first: bool
    ) -> TokenSet:
        async with self._lock.get():
            current = self._tokens
            if (
                current is not None
                and current is not failed
                and not current.expired
                and set(challenge.scopes) <= set(current.scopes)
            ):
                return current  # another request re-authorized meanwhile
            async with self._client() as http:
                ctx = await self._discover(http, challenge, revision)
                tokens: TokenSet | None = None
                if first and challenge.status == 401 and failed is not None and failed.issuer == ctx.issuer:
                    tokens = await self._refresh(http, ctx.metadata, failed)
                if tokens is None:
                    scopes = self._select_scopes(challenge, ctx)
                    tokens = await self._grant(http, ctx, scopes)
                    self._requested = (ctx.issuer, scopes)
            await self._save(tokens)
            return tokens

    async def _discover(self, http: httpx.AsyncClient, challenge: AuthChallenge, revision: str | None) -> AuthContext:
        assert self.server_url is not None
        if challenge.status == 403 and self._context is not None:
            return self._context  # step-up: same server, same authorization server
        server_url = self.server_url
        meta, prm, resource = await discover_servers(
            http,
            server_url,
            challenge.resource_metadata,
            revision,
            legacy=self._fallbacks_allowed(revision),
            pick_issuer=self._pick_issuer,
            allow_insecure_http=self.allow_insecure_http,
        )
        dpop = self._proofs if self._wants_dpop(meta, prm, challenge) else None
        ctx = AuthContext(server_url, resource, meta, prm, dpop, revision)
        self._context = ctx
        return ctx

    def _fallbacks_allowed(self, revision: str | None) -> bool:
        return self.legacy_fallbacks and (revision is None or revision <= LAST_LEGACY_REVISION)

    def _pick_issuer(self, servers: tuple[str, ...]) -> str:
        preferred = [self._tokens.issuer if self._tokens else None, self._preferred_issuer()]
        for issuer in preferred:
            if issuer is not None and issuer in servers:
                return issuer
        return servers[0]

    def _wants_dpop(
        self, meta: AuthorizationServerMetadata, prm: ProtectedResourceMetadata | None, challenge: AuthChallenge
    ) -> bool:
        """With `dpop=None`: when both sides take ES256 proofs. The authorization server says so in its
        metadata; the MCP server by challenging with the DPoP scheme or in its resource metadata
        (RFC 9449 §7.1, RFC 9728 §2). A DPoP-bound token is useless to a server that only knows Bearer."""
        if self.dpop is not None:
            return self.dpop
        if "ES256" not in (meta.dpop_signing_alg_values_supported or ()) or not jwt_available():
            return False
        raw = prm.raw if prm is not None else {}
        algs = raw.get("dpop_signing_alg_values_supported")
        resource_says = raw.get("dpop_bound_access_tokens_required") is True or (
            isinstance(algs, list) and "ES256" in algs
        )
        return challenge.scheme == "dpop" or resource_says

    def _select_scopes(self, challenge: AuthChallenge, ctx: AuthContext) -> list[str]:
        """The challenge's scopes, else the resource's `scopes_supported`, else none; joined with what
        was requested (and granted) earlier at the same authorization server, so re-authorizing never
        loses permissions; plus `offline_access` when wanted and the authorization server offers it."""
        same_issuer = self._requested is not None and self._requested[0] == ctx.issuer
        prior = self._requested[1] if self._requested is not None and same_issuer else []
        granted = list(self._tokens.scopes) if self._tokens is not None and self._tokens.issuer == ctx.issuer else []
        if challenge.scopes:
            wanted = list(challenge.scopes)
        elif ctx.resource_metadata is not None and ctx.resource_metadata.scopes_supported:
            wanted = list(ctx.resource_metadata.scopes_supported)
        else:
            wanted = []
        scopes = union_scopes(prior, granted, wanted) if (prior or challenge.status == 403) else wanted
        if scopes and self._wants_offline_access() and ctx.metadata.supports_scope("offline_access"):
            scopes = union_scopes(scopes, ["offline_access"])
        return scopes

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http is not None:
            yield self._http
            return
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            yield http

    async def _request_tokens(
        self, http: httpx.AsyncClient, ctx: AuthContext, form: dict[str, str], auth: ClientAuth, scopes: list[str]
    ) -> TokenSet:
        """POST a grant to `ctx`'s token endpoint (with `resource`, and DPoP proofs when discovery
        chose them) and parse the answer; `scopes` are what was asked for."""
        form.setdefault("resource", ctx.resource)
        doc = await token_endpoint_call(http, ctx.metadata.token_endpoint, form, auth, ctx.dpop)
        return parse_token_response(doc, scopes, TokenTarget(ctx.metadata, ctx.resource, ctx.dpop, auth.client_id))

    # ----------------------------------------------------------------- grant hooks

    async def _grant(self, http: httpx.AsyncClient, ctx: AuthContext, scopes: list[str]) -> TokenSet:
        """Obtain tokens for `ctx.resource` from `ctx.metadata` with `scopes` (empty: omit `scope`)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement a grant; use OAuth, ClientCredentials, ..."
        )

    async def _client_auth(self, meta: AuthorizationServerMetadata, client_id: str | None) -> ClientAuth | None:
        """How this client authenticates at `meta`'s token endpoint (for refreshes), or None."""
        return None

    def _preferred_issuer(self) -> str | None:
        return None

    def _wants_offline_access(self) -> bool:
        return False

    async def sign_out(self) -> bool:
        """Revoke this server's tokens where their authorization server allows it (RFC 7009), and
        forget them; True when every revocation was accepted. See `signout.sign_out`."""
        from .signout import sign_out

        return await sign_out(self)

    async def clear(self) -> None:
        """Forget the tokens for this server (memory and storage); the next 401 authorizes anew."""
        async with self._lock.get():
            self._loaded = True
            if self.server_url is not None:
                await self._save(None)
            self._tokens = None
