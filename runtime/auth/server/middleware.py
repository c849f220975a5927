"""`BearerAuthMiddleware`: make an ASGI MCP app an OAuth 2.1 protected resource.

- Serves the protected resource metadata (RFC 9728) at the well-known URL derived from `resource`.
- Refuses requests without a valid bearer token: 401 with
  `WWW-Authenticate: Bearer resource_metadata="…"[, scope="…"][, error="invalid_token"]`.
- Refuses requests whose token lacks a required scope: 403 with `error="insufficient_scope"` and
  every scope the operation needs. Besides the fixed `required_scopes`, a `scopes_for_request`
  hook sees the parsed JSON-RPC message of each POST (the body is buffered up to `max_body_size`
  bytes and replayed to the app) and returns the scopes that message needs. The body is decoded
  by the runtime's one JSON-RPC reader (`protocol.wire.decode`), and the body with its decoded
  message goes to the app under `MESSAGE_SCOPE_KEY`: the endpoint never parses it again, and bad
  JSON of any kind (too deep, `NaN`, not UTF-8, ...) has one outcome, the app's 400 (-32700).
- Passes the validated principal on as `scope["mcpgen.auth"]` (`AUTH_SCOPE_KEY`), an `AuthInfo`.
- DPoP (RFC 9449), on by default when the `auth` extra is installed: a DPoP-bound token (one whose
  `AuthInfo.dpop_jkt` is set) is accepted only as `Authorization: DPoP <token>` with one `DPoP`
  proof header that `DPoPProofChecker` accepts for this request, never as a bearer token; an
  unbound token is refused with the DPoP scheme. `dpop_required` refuses bearer tokens altogether.

`OPTIONS` requests (CORS preflights carry no credentials) and non-HTTP scopes pass through untouched.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, TypeAlias

from ...protocol import wire
from ..shared._util import canonical_resource, origin, union_scopes
from ..shared.challenge import format_challenge
from ..shared.errors import InvalidToken, VerifierUnavailable
from ..shared.metadata import PRM_WELL_KNOWN
from ..shared.principal import AUTH_SCOPE_KEY, MESSAGE_SCOPE_KEY, AuthInfo, confirmation_jkt
from ..shared.signing import jwt_available
from .dpop import DPoPProofChecker, InvalidDPoPProof
from .verifiers import TokenVerifier

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]
ScopeHook: TypeAlias = Callable[[Mapping[str, Any]], Iterable[str] | Awaitable[Iterable[str]]]
ScopeCheck: TypeAlias = Callable[[AbstractSet[str], str], bool]

DEFAULT_MAX_BODY = 4 * 1024 * 1024


def _exact(granted: AbstractSet[str], required: str) -> bool:
    return required in granted


def _header_safe(text: str) -> str:
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)[:200]


class _BodyTooLarge(Exception):
    pass


class BearerAuthMiddleware:
    """Wrap `app` (the MCP HTTP app) so every request must carry a bearer token accepted by
    `verifier`. `resource` is this server's canonical URL as clients reach it (e.g.
    `https://mcp.example.com/mcp`); `authorization_servers` are the issuers clients should use.
    `scope_satisfied(granted, required)` decides whether a granted set covers a required scope
    (default: exact membership; supply one for scope hierarchies). The other options are
    `ProtectedResource`'s, which builds this middleware: `scopes_supported` (advertised in the
    metadata), `required_scopes` (needed by every request), `scopes_for_request(message)` (scopes a
    JSON-RPC message needs besides those), `max_body_size` (the most body read to find them),
    `resource_name` and `extra_metadata` (in the metadata document), `serve_root_metadata` (serve it
    at the root well-known URL too), `dpop` (accept DPoP-bound tokens; None: when the `auth` extra
    is installed) and `dpop_required` (accept nothing else).

    Raises:
        ValueError: no authorization server, or `dpop_required` without DPoP.
    """

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        app: ASGIApp,
        *,
        verifier: TokenVerifier,
        resource: str,
        authorization_servers: Sequence[str],
        scopes_supported: Sequence[str] | None = None,
        required_scopes: Sequence[str] = (),
        scopes_for_request: ScopeHook | None = None,
        scope_satisfied: ScopeCheck | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        resource_name: str | None = None,
        extra_metadata: Mapping[str, Any] | None = None,
        serve_root_metadata: bool = False,
        dpop: bool | None = None,
        dpop_required: bool = False,
    ) -> None:
        if not authorization_servers:
            raise ValueError("authorization_servers must name at least one authorization server")
        if dpop is None:
            dpop = jwt_available()
        if dpop_required and not dpop:
            raise ValueError("dpop_required needs DPoP on (and the `auth` extra: pip install 'mcpgen[auth]')")
        self.dpop = DPoPProofChecker() if dpop else None
        self.dpop_required = dpop_required
        self.app = app
        self.verifier = verifier
        self.resource = canonical_resource(resource)
        self.required_scopes = list(required_scopes)
        self.scopes_for_request = scopes_for_request
        self.scope_satisfied = scope_satisfied or _exact
        self.max_body_size = max_body_size
        path = self.resource[len(origin(self.resource)) :].rstrip("/")
        self.metadata_path = PRM_WELL_KNOWN + path
        self.resource_metadata_url = origin(self.resource) + self.metadata_path
        self.metadata_paths = frozenset({self.metadata_path} | ({PRM_WELL_KNOWN} if serve_root_metadata else set()))
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if scopes_supported is not None:
            document["scopes_supported"] = list(scopes_supported)
        if resource_name is not None:
            document["resource_name"] = resource_name
        if self.dpop is not None:
            document["dpop_signing_alg_values_supported"] = list(self.dpop.algorithms)
        if dpop_required:
            document["dpop_bound_access_tokens_required"] = True
        document.update(extra_metadata or {})
        self.metadata = document
        self._metadata_body = json.dumps(document).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope.get("path") in self.metadata_paths:
            await self._serve_metadata(scope.get("method", "GET"), send)
        elif scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
        else:
            info = await self._verify(scope, send)
            checked = await self._check_scopes(info, scope, receive, send) if info is not None else None
            if info is not None and checked is not None:
                replay, extra = checked
                await self.app({**scope, **extra, AUTH_SCOPE_KEY: info}, replay, send)

    async def _verify(self, scope: Scope, send: Send) -> AuthInfo | None:
        """The principal of the request, or None after answering 401 (or 503)."""
        found = self._credentials(scope)
        if found is None:
            params = {"scope": self._scope_param(self.required_scopes)}
            await self._challenge(send, 401, params, "authentication required", dpop=self.dpop_required)
            return None
        scheme, token = found
        try:
            return self._check_binding(scheme, await self.verifier.verify(token), scope)
        except InvalidDPoPProof as exc:
            params = {"error": "invalid_dpop_proof", "error_description": _header_safe(str(exc))}
            await self._challenge(send, 401, params, str(exc), dpop=True)
        except InvalidToken as exc:
            params = {"error": "invalid_token", "error_description": _header_safe(str(exc))}
            await self._challenge(send, 401, params, str(exc), dpop=scheme == "dpop" or self.dpop_required)
        except VerifierUnavailable:
            await _send_json(send, 503, {"error": "temporarily_unavailable"}, [(b"retry-after", b"5")])
        return None

    def _check_binding(self, scheme: str, info: AuthInfo, scope: Scope) -> AuthInfo:
        """`info` (with its `dpop_jkt`) when the token is presented as its binding demands (RFC 9449
        §7.1), else raise. A verifier that leaves `dpop_jkt` unset still binds a token whose claims
        carry `cnf.jkt`."""
        if info.dpop_jkt is None:
            info = replace(info, dpop_jkt=confirmation_jkt(info.claims))
        if scheme == "bearer":
            if info.dpop_jkt is not None:
                raise InvalidToken("DPoP-bound token presented as a bearer token")
            if self.dpop_required:
                raise InvalidToken("this resource takes DPoP-bound tokens only")
            return info
        assert self.dpop is not None  # the DPoP scheme is only read with DPoP on
        if info.dpop_jkt is None:
            raise InvalidToken("the token is not DPoP-bound; present it as a bearer token")
        proofs = [value for name, value in scope.get("headers", []) if name.lower() == b"dpop"]
        if len(proofs) != 1:
            raise InvalidDPoPProof("exactly one DPoP proof header is required")
        self.dpop.check(  # `path` holds any mount prefix (ASGI; as HttpApp routes)
            proofs[0].decode("latin-1"),
            method=scope.get("method", "GET"),
            url=origin(self.resource) + scope.get("path", ""),
            token=info.token,
            jkt=info.dpop_jkt,
        )
        return info

    async def _check_scopes(
        self, info: AuthInfo, scope: Scope, receive: Receive, send: Send
    ) -> tuple[Receive, dict[str, Any]] | None:
        """The `receive` to hand the app (replaying a buffered body) and what to add to its scope
        (the body and its decoded message), or None after answering 403/413."""
        needed = list(self.required_scopes)
        extra: dict[str, Any] = {}
        if self.scopes_for_request is not None and scope.get("method") == "POST":
            try:
                body, receive = await self._buffer(receive)
            except _BodyTooLarge:
                await _send_json(send, 413, {"error": "request_too_large"})
                return None
            message = wire.decode(body)
            extra[MESSAGE_SCOPE_KEY] = (body, message)
            needed = union_scopes(needed, await self._hook_scopes(message))
        missing = [s for s in needed if not self.scope_satisfied(info.scopes, s)]
        if missing:
            params = {
                "error": "insufficient_scope",
                "scope": self._scope_param(needed),
                "error_description": _header_safe(f"requires scope(s): {' '.join(missing)}"),
            }
            await self._challenge(send, 403, params, "insufficient scope")
            return None
        return receive, extra

    def _credentials(self, scope: Scope) -> tuple[str, str] | None:
        """(`bearer` or `dpop`, the token) of the `Authorization` header, or None."""
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        schemes = ("bearer", "dpop") if self.dpop is not None else ("bearer",)
        for name, value in headers:
            if name.lower() == b"authorization":
                scheme, _, credentials = value.decode("latin-1").strip().partition(" ")
                credentials = credentials.strip()
                if scheme.lower() in schemes and credentials and " " not in credentials:
                    return scheme.lower(), credentials
                return None
        return None

    @staticmethod
    def _scope_param(scopes: Sequence[str]) -> str | None:
        return " ".join(scopes) if scopes else None

    async def _hook_scopes(self, message: wire.Message) -> list[str]:
        """The scopes the hook asks for a request or notification; nothing for anything else (bad
        JSON, a batch, a response: the app refuses what it cannot serve)."""
        assert self.scopes_for_request is not None
        if isinstance(message, wire.Request):
            parsed = wire.request(message.id, message.method, message.params)
        elif isinstance(message, wire.Notification):
            parsed = wire.notification(message.method, message.params)
        else:
            return []
        result = self.scopes_for_request(parsed)
        found = await result if inspect.isawaitable(result) else result
        return union_scopes([], [s for s in found if isinstance(s, str) and s])

    async def _buffer(self, receive: Receive) -> tuple[bytes, Receive]:
        """Read the whole request body (at most `max_body_size` bytes) and a `receive` that replays it."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # disconnect: hand the app what there is
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_size:
                raise _BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return body, replay

    async def _challenge(
        self, send: Send, status: int, params: Mapping[str, str | None], description: str, *, dpop: bool = False
    ) -> None:
        """A JSON error with a `WWW-Authenticate` challenge: Bearer, or DPoP (with `algs`) when `dpop`."""
        if dpop and self.dpop is not None:
            algs = " ".join(self.dpop.algorithms)
            challenge = format_challenge(
                "DPoP", {**params, "algs": algs, "resource_metadata": self.resource_metadata_url}
            )
        else:
            challenge = format_challenge("Bearer", {"resource_metadata": self.resource_metadata_url, **params})
        error = params.get("error") or "invalid_request"
        await _send_json(
            send,
            status,
            {"error": error, "error_description": description},
            [(b"www-authenticate", challenge.encode("latin-1", "replace"))],
        )

    async def _serve_metadata(self, method: str, send: Send) -> None:
        cors = [(b"access-control-allow-origin", b"*"), (b"access-control-allow-methods", b"GET, OPTIONS")]
        if method == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": cors})
            await send({"type": "http.response.body", "body": b""})
            return
        if method not in ("GET", "HEAD"):
            await _send_json(send, 405, {"error": "method_not_allowed"}, [(b"allow", b"GET, HEAD, OPTIONS")])
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._metadata_body)).encode()),
            (b"cache-control", b"max-age=3600"),
            *cors,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else self._metadata_body})


async def _send_json(
    send: Send, status: int, doc: Mapping[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps(doc).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


def auth_info_from_scope(scope: Mapping[str, Any]) -> AuthInfo | None:
    """The principal the middleware stored in `scope`, an ASGI scope, if any."""
    info = scope.get(AUTH_SCOPE_KEY)
    return info if isinstance(info, AuthInfo) else None
