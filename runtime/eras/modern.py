"""The modern era (2026-07-28 on): no handshake; every request names its version and carries the
client's capabilities in `_meta`; input is asked for with `InputRequiredResult` and sealed
`requestState`; results are stamped (`resultType`, cache hints, server info); change
notifications arrive on `subscriptions/listen` streams; a log level travels with each request."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ..client.subscriptions import ListenRequest, Subscription, listen_stream
from ..errors import INVALID_PARAMS, HeaderMismatch, InvalidParams, McpError, UnsupportedProtocolVersion
from ..inbound import Rejection
from ..registry import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    HANDSHAKE,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    MODERN,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
)
from ..server.input import input_required_result, read_input
from ..transport import headers as http_headers
from . import ClientView, Era, register

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..client import Client
    from ..inbound import Call, Router
    from ..mrtr import InputRequired
    from ..server import Server
    from ..server.context import RequestContext
    from ..server.session import ServerSession
    from ..server.subscriptions import Change
    from ..session import IncomingRequest

REQUIRED_META = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY)


class ModernEra(Era):
    name = MODERN
    logs_without_level = False
    answers_server_requests = False
    client_capabilities_at = ("server/discover", ("_meta", CLIENT_CAPABILITIES_KEY))
    server_capabilities_at = ("server/discover", ("capabilities",))

    # -- server side ------------------------------------------------------------------------------

    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        header = call.headers.get(http_headers.PROTOCOL_VERSION) if call.headers is not None else None
        if PROTOCOL_VERSION_KEY not in call.meta:
            registry = router.registry
            if header is None or (header in registry.supported and registry.era(header) == HANDSHAKE):
                return None
        missing = [key for key in REQUIRED_META if key not in call.meta]
        if missing:
            return Rejection(INVALID_PARAMS, f"a modern request needs _meta {', '.join(repr(k) for k in missing)}")
        if call.headers is not None:
            problem = http_headers.mismatch(call.method, call.params, call.headers, router.header_params(call.params))
            if problem is not None:
                return Rejection(HeaderMismatch.code, f"Header mismatch: {problem}")
        requested = call.requested_version
        if (
            not isinstance(requested, str)
            or requested not in router.versions
            or not router.registry.is_modern(requested)
        ):
            supported = router.supported_newest_first()
            return Rejection(
                UnsupportedProtocolVersion.code,
                f"Unsupported protocol version {requested!r}; this server supports {', '.join(supported)}",
                {"supported": supported, "requested": requested},
            )
        return requested

    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        meta = request.meta
        caps = meta.get(CLIENT_CAPABILITIES_KEY)
        info = meta.get(CLIENT_INFO_KEY)
        level = meta.get(LOG_LEVEL_KEY)
        return ClientView(
            caps if isinstance(caps, dict) else {},
            info if isinstance(info, dict) else None,
            level if level in LOG_LEVELS else None,
        )

    def resource_not_found(self, uri: str) -> McpError:
        return InvalidParams(f"resource not found: {uri}", data={"uri": uri})

    def stamp(self, spec: MethodSpec, result: dict[str, Any], server: Server) -> dict[str, Any]:
        fields = server.registry.result_fields(spec)
        result = dict(result)
        if "resultType" in fields:
            result.setdefault("resultType", "complete")
        if "cacheScope" in fields and result.get("resultType", "complete") == "complete":
            result.setdefault("ttlMs", server.cache_ttl_ms)
            result.setdefault("cacheScope", server.cache_scope)
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_KEY: server.info}
        return result

    def open_input(self, ctx: RequestContext, spec: MethodSpec) -> None:
        if spec.may_require_input:
            read_input(ctx, spec)

    async def ask_for_input(self, ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any] | None:
        return input_required_result(ctx, spec, asked)

    def deliver_change(self, server: Server, change: Change) -> None:
        for stream in list(server.listening):
            if stream.wants(change):
                stream.push(change)

    # -- client side ------------------------------------------------------------------------------

    def decorate(self, client: Client, version: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        body = dict(params or {})
        extra = body.get("_meta")
        body["_meta"] = {**client.request_meta(version), **(extra if isinstance(extra, dict) else {})}
        return body

    async def adopted(self, client: Client) -> None:
        """Nothing more to send: there is no handshake to complete."""

    async def set_log_level(self, client: Client, level: str) -> None:
        """Nothing to send: every later request carries the level."""

    async def roots_changed(self, client: Client) -> None:
        """Nothing to send: the server asks for roots when it needs them."""

    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        return listen_stream(client, request)


register(ModernEra())
