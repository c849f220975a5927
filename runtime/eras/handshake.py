"""The handshake era (2025-11-25 and before): `initialize` opens a session that fixes the version
and the client's capabilities; the server may send requests (sampling, elicitation, roots) and
pushes change notifications; logging has a session-wide level."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ..capabilities import has_capability
from ..client.subscriptions import ListenRequest, Subscription, pushed_subscription
from ..errors import McpError, UnsupportedProtocolVersion
from ..inbound import Rejection
from ..registry import HANDSHAKE, HANDSHAKE_METHOD
from ..server.input import ask_client
from ..server.subscriptions import uri_covered
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

LIVENESS_METHOD = "ping"  # the one request a client may send before the handshake
RESOURCE_NOT_FOUND = -32002  # the handshake era's convention (its schema fixes no code for it)


class HandshakeEra(Era):
    name = HANDSHAKE
    logs_without_level = True
    answers_server_requests = True
    client_capabilities_at = (HANDSHAKE_METHOD, ("capabilities",))
    server_capabilities_at = (HANDSHAKE_METHOD, ("capabilities",))

    # -- server side ------------------------------------------------------------------------------

    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        versions = router.versions_of(HANDSHAKE)
        if call.method == HANDSHAKE_METHOD:
            requested = (call.params or {}).get("protocolVersion")
            if not versions:
                supported = router.supported_newest_first()
                return Rejection(
                    UnsupportedProtocolVersion.code,
                    f"Unsupported protocol version {requested!r}: this server serves {', '.join(supported)}, "
                    "which use no initialize handshake",
                    {"supported": supported, "requested": requested},
                )
            return requested if requested in versions else versions[0]
        if call.session_version is not None:
            return call.session_version
        if call.method == LIVENESS_METHOD and versions:
            return versions[0]
        return None

    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        state = session.handshake
        if state is None:
            return ClientView({})
        return ClientView(state.client_capabilities, state.client_info, state.log_level)

    def resource_not_found(self, uri: str) -> McpError:
        return McpError(f"resource not found: {uri}", code=RESOURCE_NOT_FOUND, data={"uri": uri})

    def open_input(self, ctx: RequestContext, spec: MethodSpec) -> None:
        """Nothing to read: answers arrive as responses to the server's requests."""

    async def ask_for_input(self, ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any] | None:
        ctx.input_responses = await ask_client(ctx, asked)
        ctx.state = asked.state
        return None

    def deliver_change(self, server: Server, change: Change) -> None:
        for session in list(server.sessions):
            state = session.handshake
            if state is None:
                continue
            if change.uri is not None:
                wanted = uri_covered(session.subscriptions, change.uri)
            else:
                wanted = has_capability(state.advertised, f"{change.kind}.listChanged")
            if wanted:
                session.push(change.method, change.params())

    # -- client side ------------------------------------------------------------------------------

    async def adopted(self, client: Client) -> None:
        """The handshake completed: say so, then ask for log messages if the client wants them."""
        await client.session.send_notification("notifications/initialized")
        if client.log_level is not None and has_capability(client.server_capabilities, "logging"):
            await self.set_log_level(client, client.log_level)

    async def set_log_level(self, client: Client, level: str) -> None:
        await client.request("logging/setLevel", {"level": level})

    async def roots_changed(self, client: Client) -> None:
        if has_capability(client.capabilities(), "roots.listChanged"):
            await client.session.send_notification("notifications/roots/list_changed")

    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        return pushed_subscription(client, request)


register(HandshakeEra())
