"""`ServerSession`: one connection (or, on request-scoped transports, one endpoint) of a `Server`.

Each request is routed by the pure router (`protocol.routing`), served by its handler in a
`RequestContext`, and its result finished the same way for every method: multi-round-trip
input obtained the way the request's era does it (`server.eras`), the era's stamps added, the
result validated against the table. A handshake-era session also holds what `initialize`
negotiated.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from ..core.session import IncomingRequest, Session
from ..core.transport import Transport, TransportContext
from ..core.worker import OrderedWorker
from ..protocol import wire
from ..protocol.errors import InternalError, validation_detail
from ..protocol.input_requests import InputRequired
from ..protocol.keys import HANDSHAKE_METHOD
from ..protocol.routing import Call, Rejection, Route
from .context import RequestContext
from .input import check_input_capabilities

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from . import Server

log = logging.getLogger("mcpgen.runtime.server")


@dataclass
class HandshakeState:
    """What `initialize` negotiated on a handshake-era session."""

    version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    advertised: dict[str, Any]  # the capabilities sent in the initialize result
    log_level: str | None = None
    initialized: bool = False  # `notifications/initialized` arrived
    extra: dict[str, Any] = field(default_factory=dict)


class ServerSession(Session):
    """One client connection of a `Server` (either era, or both on one stdio process)."""

    side = "server"

    def __init__(self, server: Server, transport: Transport | None, **options: Any) -> None:
        super().__init__(transport, **options)
        self.server = server
        self.handshake: HandshakeState | None = None
        self.subscriptions: set[str] = set()  # handshake-era `resources/subscribe`
        self.outbox = OrderedWorker("server notifications")
        self.background: anyio.abc.TaskGroup | None = None
        """Where work outliving a request runs (tasks): the session's own task group while it runs
        on a transport; the HTTP app's for the one that serves its self-contained requests."""
        self._host_scope: anyio.CancelScope | None = None

    @property
    def handshake_version(self) -> str | None:
        """The version `initialize` negotiated (None before it, or on a session without a handshake)."""
        return self.handshake.version if self.handshake is not None else None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self.outbox.attach(tg)
                self.background = await tg.start(self._host)
                await tg.start(super().run)
                task_status.started()
        finally:
            self.background = None

    async def _host(self, *, task_status: anyio.abc.TaskStatus[anyio.abc.TaskGroup]) -> None:
        """Hold the task group of work that outlives requests (tasks) until the connection closes,
        then cancel what still runs there: nobody is left to ask for it."""
        with anyio.CancelScope() as scope:
            self._host_scope = scope
            async with anyio.create_task_group() as host:
                task_status.started(host)
                await anyio.sleep_forever()

    def accepts_cancel(self, incoming: IncomingRequest) -> bool:
        return incoming.method != HANDSHAKE_METHOD

    def on_closed(self) -> None:
        self.outbox.close()  # ends the notification sender, so the session can finish
        if self._host_scope is not None:
            self._host_scope.cancel()

    def can_cancel(self, method: str) -> bool:
        if self.handshake is None:
            return False
        spec = self.server.registry.spec(self.handshake.version, "notifications/cancelled")
        return spec is not None and spec.direction.allows("server")

    def push(self, method: str, params: dict[str, Any] | None) -> None:
        """Queue a notification unrelated to any request; one task sends the queue in order."""
        if not self.closed:
            self.outbox.submit(self._send_quietly, method, params)

    async def _send_quietly(self, method: str, params: dict[str, Any] | None) -> None:
        try:
            await self.send_notification(method, params)
        except Exception as exc:  # the session may be closing; a lost notification is not fatal
            log.debug("could not send %s: %s", method, exc)

    # -- serving ---------------------------------------------------------------------------------

    def route(self, request: IncomingRequest) -> Route | Rejection:
        state = self.handshake
        if state is None:
            call = Call(request.method, request.params, request.context.headers)
        else:
            call = Call(
                request.method, request.params, request.context.headers, state.version, state.client_capabilities
            )
        return self.server.router.route(call)

    async def handle_request(self, request: IncomingRequest) -> Any:
        route = request.route if request.route is not None else self.route(request)
        if isinstance(route, Rejection):
            raise route.error()
        return await self.execute(request, route)

    def execute(self, request: IncomingRequest, route: Route) -> Awaitable[Any]:
        """Serve a routed request: run its handler (again, while it asks for input), finish the
        result; a call that may become a task goes to the server's tasks (`tasks`). (A plain
        function returning the coroutine to await: no frame of its own on every request.)"""
        era, spec = self.server.serving[route.era.name], route.spec
        ctx = RequestContext(self, request, route.version, era, era.client_view(request, self))
        era.open_input(ctx, spec)
        handler = self.server.handlers[spec.method]
        if spec.method in self.server.tasks.augmented:
            return self.server.tasks.execute(ctx, spec, route.params, handler)
        return self.run_handler(ctx, spec, route.params, handler)

    async def run_handler(self, ctx: RequestContext, spec: MethodSpec, params: Any, handler: Any) -> Any:
        """Run a handler (again, while it asks for input the way the request's era does) and finish its result."""
        era = ctx.serving
        rounds = 0
        while True:
            try:
                result = await handler(ctx, params)
                if not isinstance(result, InputRequired):
                    return self.finish(spec, ctx, result)
                raise result
            except InputRequired as asked:
                rounds += 1
                self.check_may_ask(spec, rounds)
                check_input_capabilities(ctx, asked)
                final = await era.ask_for_input(ctx, spec, asked)
                if final is not None:
                    return self.finish(spec, ctx, final)

    def check_may_ask(self, spec: MethodSpec, rounds: int) -> None:
        """May `spec`'s handler ask for input (again, for the `rounds`-th time)? InternalError if not."""
        if not self.server.registry.may_require_input(spec.method):
            log.error("the %s handler asked for input, which only multi-round-trip methods may do", spec.method)
            raise InternalError(
                f"server error: the {spec.method} handler asked for input, which {spec.method} cannot carry"
            )
        if rounds > self.server.limits.max_input_rounds:
            raise InternalError(
                f"the {spec.method} handler asked for input more than {self.server.limits.max_input_rounds} times"
            )

    def finish(self, spec: MethodSpec, ctx: RequestContext, value: object) -> dict[str, Any]:
        """Stamp and validate a handler's result (a dict or a model) as the wire object."""
        found = wire.to_wire(value)
        if not isinstance(found, dict):
            raise InternalError(f"the {spec.method} handler returned {type(value).__name__}, not a result object")
        result = ctx.serving.stamp(spec, found, self.server)
        if self.server.validate_results:
            try:
                spec.parse_result(result)
            except ValidationError as exc:
                log.error("%s produced an invalid result: %s", spec.method, exc)
                raise InternalError(
                    f"the server produced an invalid {spec.method} result: {validation_detail(exc)}"
                ) from None
        return result

    async def handle_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        if method == "notifications/initialized" and self.handshake is not None:
            self.handshake.initialized = True
        elif method == "notifications/roots/list_changed" and self.server.on_roots_changed is not None:
            self.defer(self.server.on_roots_changed, self)
