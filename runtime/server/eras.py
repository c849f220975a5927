"""How the server serves each era: who the client is, how input is asked for, what results carry,
how changes reach the clients that asked for them. One strategy per era.

The protocol's rules for an era (which requests it claims, where capabilities travel, how a
missing resource is reported) are `protocol.eras.EraRules`; what the server does with them is
here, one `EraServing` per rules class. A third era is one rules class and one strategy here
(and one on the client side), with nothing else to change.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.capabilities import has_capability
from ..protocol.changes import Change, uri_covered
from ..protocol.eras import EraRules, Eras, HandshakeRules, ModernRules, strategies
from ..protocol.keys import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, LOG_LEVELS, SERVER_INFO_KEY
from .input import ask_client, input_required_result, read_input

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..core.session import IncomingRequest
    from ..protocol.input_requests import InputRequired
    from . import Server
    from .context import RequestContext
    from .session import ServerSession


@dataclass(slots=True)
class ClientView:
    """What the server knows of the client for one request."""

    capabilities: dict[str, Any]
    info: dict[str, Any] | None = None
    log_level: str | None = None


class EraServing(abc.ABC):
    """The server's behaviour for one era."""

    def __init__(self, rules: EraRules) -> None:
        self.rules = rules

    @abc.abstractmethod
    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        """The client's capabilities, info and log level, as this era conveys them."""

    def stamp(self, spec: MethodSpec, result: dict[str, Any], server: Server) -> dict[str, Any]:
        """Fields this era adds to every result of `spec` (none by default)."""
        return result

    @abc.abstractmethod
    def open_input(self, ctx: RequestContext, spec: MethodSpec) -> None:
        """Read the answers a request carries to an earlier round's input requests."""

    @abc.abstractmethod
    async def ask_for_input(self, ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any] | None:
        """Obtain the input a handler asked for: either the result to answer with now (the client
        retries later), or None once the answers are in `ctx` (the handler runs again)."""

    @abc.abstractmethod
    def deliver_change(self, server: Server, change: Change) -> None:
        """Send a change notification to the clients of this era that asked for it."""


class HandshakeServing(EraServing):
    """A session fixes the client's capabilities; input is asked for with the server's own
    requests; changes are pushed to sessions that were told or subscribed."""

    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        state = session.handshake
        if state is None:
            return ClientView({})
        return ClientView(state.client_capabilities, state.client_info, state.log_level)

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


class ModernServing(EraServing):
    """Each request carries the client's capabilities in `_meta`; input is asked for with an
    `InputRequiredResult` and sealed `requestState`; results are stamped (`resultType`, cache
    hints, server info); changes go to `subscriptions/listen` streams."""

    def __init__(self, rules: EraRules) -> None:
        super().__init__(rules)
        self._stamps: dict[MethodSpec, tuple[bool, bool]] = {}  # per table row: (resultType, cache hints)

    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        params = request.params  # (`request.meta`, read here without its frame)
        meta = params.get("_meta") if params else None
        if not isinstance(meta, dict):
            meta = {}
        caps = meta.get(CLIENT_CAPABILITIES_KEY)
        info = meta.get(CLIENT_INFO_KEY)
        level = meta.get(LOG_LEVEL_KEY)
        return ClientView(
            caps if isinstance(caps, dict) else {},
            info if isinstance(info, dict) else None,
            level if level in LOG_LEVELS else None,
        )

    def stamp(self, spec: MethodSpec, result: dict[str, Any], server: Server) -> dict[str, Any]:
        stamps = self._stamps.get(spec)
        if stamps is None:  # which of the stamps the method's results have fields for, read once per row
            fields = server.registry.result_fields(spec)
            stamps = self._stamps[spec] = ("resultType" in fields, "cacheScope" in fields)
        typed, cached = stamps
        result = dict(result)
        if typed:
            result.setdefault("resultType", "complete")
        if cached and result.get("resultType", "complete") == "complete":
            result.setdefault("ttlMs", server.caching.ttl_ms)
            result.setdefault("cacheScope", server.caching.scope)
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_KEY: server.info}
        return result

    def open_input(self, ctx: RequestContext, spec: MethodSpec) -> None:
        params = ctx.request.params
        if spec.may_require_input and params and ("requestState" in params or "inputResponses" in params):
            read_input(ctx, spec)  # (a first call carries neither: nothing to read)

    async def ask_for_input(self, ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any] | None:
        return input_required_result(ctx, spec, asked)

    def deliver_change(self, server: Server, change: Change) -> None:
        for stream in list(server.listening):
            if stream.wants(change):
                stream.push(change)


STRATEGIES: dict[type[EraRules], type[EraServing]] = {HandshakeRules: HandshakeServing, ModernRules: ModernServing}
"""The server's strategy for each era's rules."""


def serving(eras: Eras) -> dict[str, EraServing]:
    """The server's strategy for each era of a tree, by the era's name."""
    return strategies(eras, STRATEGIES, "server")
