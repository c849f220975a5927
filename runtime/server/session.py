"""`ServerSession`: one connection (or, on request-scoped transports, one endpoint) of a `Server`.

Each request is routed by the pure router (`protocol.routing`), served by its handler in a
`RequestContext`, and its result finished the same way for every method: multi-round-trip
input obtained the way the request's era does it (`server.eras`), the era's stamps added, the
result validated against the table. A handshake-era session also holds what `initialize`
negotiated.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from ..core.session import IncomingRequest, Session
from ..core.transport import Transport, TransportContext
from ..core.worker import OrderedWorker
from ..protocol import wire
from ..protocol.errors import InternalError, McpError, validation_detail
from ..protocol.input_requests import InputRequired
from ..protocol.keys import HANDSHAKE_METHOD
from ..protocol.routing import Call, Rejection, Route
from .context import RequestContext
from .features.common import Built
from .hooks.middleware import RequestHook, RequestInfo, run_chain
from .input import check_input_capabilities

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..core.telemetry import Instrumentation
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
        self.telemetry: Instrumentation | None = server.telemetry
        """The instrumentation this session's requests are traced with (None: none). A session
        run on a transport decides once, when it starts: without an SDK configured then, its
        requests cost no telemetry check at all (the next connection sees an SDK set up later).
        A session fed request by request (the HTTP app's self-contained requests) keeps asking
        the instrumentation, which looks for an SDK once a second until one is set."""

    @property
    def handshake_version(self) -> str | None:
        """The version `initialize` negotiated (None before it, or on a session without a handshake)."""
        return self.handshake.version if self.handshake is not None else None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve the transport: the session's one task group holds the reader's work, the
        notification sender and the work that outlives requests (tasks); the reader runs in this
        task, inside it (no task of its own). Once the reader is done (the connection closed, the
        requests in flight cancelled and finished, the callbacks run), what still runs there is
        cancelled: nobody is left to ask for it."""
        telemetry = self.telemetry
        if telemetry is not None and not telemetry.ready():
            self.telemetry = None  # decided for this connection: nothing to trace
        try:
            await super().run(task_status=task_status)
        finally:
            self.background = None

    def attach(self, task_group: anyio.abc.TaskGroup) -> None:
        self.outbox.attach(task_group)
        self.background = task_group

    async def settle(self) -> None:
        await self.drain()
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()

    def accepts_cancel(self, incoming: IncomingRequest) -> bool:
        return incoming.method != HANDSHAKE_METHOD

    def on_closed(self) -> None:
        self.outbox.close()  # ends the notification sender, so the session can finish

    def can_cancel(self, method: str) -> bool:
        if self.handshake is None:
            return False
        spec = self.server.registry.spec(self.handshake.version, "notifications/cancelled")
        return spec is not None and spec.direction.allows("server")

    def push(self, method: str, params: dict[str, Any] | None) -> None:
        """Queue a notification unrelated to any request; one task sends the queue in order."""
        if not self.closed:
            self.outbox.submit(self._send_quietly, method, params)

    async def send_request(self, method: str, params: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """`Session.send_request` (a server's own request: input from a handshake-era client),
        inside a telemetry span when there is one, with the trace context in `_meta`."""
        telemetry = self.telemetry
        if telemetry is None or not telemetry.ready():
            return await super().send_request(method, params, **options)
        request_id = options.pop("request_id", None)
        if request_id is None:
            request_id = self.next_id()
        body = dict(params) if params is not None else None
        with telemetry.sending(method, body, request_id, self.handshake_version, self.context.kind) as (_, carrier):
            if carrier:
                body = dict(body or {})
                meta = body.get("_meta")
                body["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), **carrier}
            return await super().send_request(method, body, request_id=request_id, **options)

    async def _send_quietly(self, method: str, params: dict[str, Any] | None) -> None:
        try:
            await self.send_notification(method, params)
        except Exception as exc:  # the session may be closing; a lost notification is not fatal
            log.debug("could not send %s: %s", method, exc)

    # -- serving ---------------------------------------------------------------------------------

    def route(self, request: IncomingRequest) -> Route | Rejection:
        state = self.handshake
        version = state.version if state is not None else None
        quick = self.server.router.quick(request.method, request.params, request.context.headers, version)
        if quick is not None:  # (the common request, found without the ladder)
            return quick
        if state is None:
            call = Call(request.method, request.params, request.context.headers)
        else:
            call = Call(
                request.method, request.params, request.context.headers, state.version, state.client_capabilities
            )
        return self.server.router.route(call)

    def handle_request(self, request: IncomingRequest) -> Coroutine[Any, Any, Any]:
        """Route the request and return the coroutine that serves it (inside a telemetry span when
        there is one). A plain function: no frame of its own on every request."""
        route = request.route if request.route is not None else self.route(request)
        telemetry = self.telemetry
        if telemetry is not None and telemetry.ready():
            return self._traced(request, route, telemetry)
        return self._handle(request, route)

    async def _traced(self, request: IncomingRequest, route: Route | Rejection, telemetry: Instrumentation) -> Any:
        version = route.version if isinstance(route, Route) else None
        context = request.context
        with telemetry.handling(
            request.method, request.params, request.id, version, context.kind, context.headers
        ) as outcome:
            result = await self._handle(request, route)
            outcome.result(request.method, result)
            return result

    async def _handle(self, request: IncomingRequest, route: Route | Rejection) -> Any:
        """`execute`, with the common case (no request middleware, a method that cannot become a
        task) run here: the handler awaited in this frame, its result finished."""
        if isinstance(route, Rejection):
            raise route.error()
        try:
            server = self.server
            spec = route.spec
            method = spec.method
            if server.middleware.requests or method in server.tasks.augmented:
                return await self.execute(request, route)
            era = server.serving[route.era.name]
            ctx: RequestContext[Any] = RequestContext(self, request, route.version, era)
            era.open_input(ctx, spec)
            handler = server.handlers[method]
            params = route.params
            try:
                result = await handler(ctx, params)
            except InputRequired as asked:
                result = await self._input_rounds(ctx, spec, params, handler, asked)
            else:
                if isinstance(result, InputRequired):
                    result = await self._input_rounds(ctx, spec, params, handler, result)
            return self.finish(spec, ctx, result)
        except McpError:
            raise
        except Exception as exc:  # unexpected: a generic error with an id, the details in the log
            raise self.server.errors.internal(exc, f"the {request.method} handler") from None

    def execute(self, request: IncomingRequest, route: Route) -> Awaitable[Any]:
        """Serve a routed request: run its handler (again, while it asks for input) inside the
        server's request middleware, finish the result; a call that may become a task goes to the
        server's tasks (`tasks`). (A plain function returning the coroutine to await: no frame of
        its own on every request.)"""
        era, spec = self.server.serving[route.era.name], route.spec
        ctx: RequestContext[Any] = RequestContext(self, request, route.version, era)
        handler = self.server.handlers[spec.method]
        augmented = spec.method in self.server.tasks.augmented
        hooks = self.server.middleware.requests
        if not hooks:
            era.open_input(ctx, spec)
            if augmented:
                return self.server.tasks.execute(ctx, spec, route.params, handler)
            return self.run_handler(ctx, spec, route.params, handler)
        return self._chained(hooks, ctx, spec, route, handler, augmented)

    async def _chained(  # noqa: PLR0913 - the request, its handler, and whether it may become a task
        self,
        hooks: Sequence[RequestHook],
        ctx: RequestContext[Any],
        spec: MethodSpec,
        route: Route,
        handler: Any,
        augmented: bool,
    ) -> dict[str, Any]:
        """`execute` inside the request middleware: what the chain returns is finished, unless it
        is the answer the tasks side finished already."""
        info = RequestInfo(spec.method, route.params, route.era.name, route.version, ctx)
        finished: list[Any] = []

        async def inner() -> Any:
            ctx.serving.open_input(ctx, spec)
            if not augmented:
                return await self._run(ctx, spec, info.params, handler)
            answer = await self.server.tasks.execute(ctx, spec, info.params, handler)
            finished.append(answer)
            return answer

        result = await run_chain(hooks, info, inner)
        if finished and result is finished[0]:
            answer: dict[str, Any] = result
            return answer
        if type(result) is Built:  # the middleware may have changed what the runtime built: checked again
            result = dict(result)
        return self.finish(spec, ctx, result)

    async def run_handler(self, ctx: RequestContext[Any], spec: MethodSpec, params: Any, handler: Any) -> Any:
        """Run a handler (again, while it asks for input the way the request's era does) and finish its result."""
        return self.finish(spec, ctx, await self._run(ctx, spec, params, handler))

    async def _run(self, ctx: RequestContext[Any], spec: MethodSpec, params: Any, handler: Any) -> Any:
        """The handler's result, asking for input (and running it again) while it asks."""
        try:
            result = await handler(ctx, params)
        except InputRequired as asked:
            return await self._input_rounds(ctx, spec, params, handler, asked)
        if isinstance(result, InputRequired):
            return await self._input_rounds(ctx, spec, params, handler, result)
        return result

    async def _input_rounds(
        self, ctx: RequestContext[Any], spec: MethodSpec, params: Any, handler: Any, asked: InputRequired
    ) -> Any:
        """Obtain what the handler asked for and run it again, while it asks; its final result."""
        era = ctx.serving
        rounds = 0
        while True:
            rounds += 1
            self.check_may_ask(spec, rounds)
            check_input_capabilities(ctx, asked)
            final = await era.ask_for_input(ctx, spec, asked)
            if final is not None:
                return final
            try:
                result = await handler(ctx, params)
            except InputRequired as again:
                asked = again
                continue
            if not isinstance(result, InputRequired):
                return result
            asked = result

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
        """Stamp and validate a handler's result (a dict or a model) as the wire object. A result
        the runtime built itself (`Built`: a tool's text or checked structured output) is
        validated the first time its method is answered with one in a version (with the era's
        stamps), and trusted from then on. It is returned as a plain dict: pydantic-core encodes a
        dict subclass (`Built`) about three times as slowly as a dict."""
        found = value if type(value) is Built else wire.to_wire(value)
        if not isinstance(found, dict):
            raise InternalError(f"the {spec.method} handler returned {type(value).__name__}, not a result object")
        server = self.server
        result = ctx.serving.stamp(spec, found, server)
        if not server.validate_results:
            return result
        built = type(found) is Built
        if built and (ctx.protocol_version, spec.method) in server.vouched_results:
            return result if type(result) is dict else dict(result)  # (a plain dict is encoded faster)
        try:
            spec.parse_result(result)
        except ValidationError as exc:
            log.error("%s produced an invalid result: %s", spec.method, exc)
            raise InternalError(
                f"the server produced an invalid {spec.method} result: {validation_detail(exc)}"
            ) from None
        if built:
            server.vouched_results.add((ctx.protocol_version, spec.method))
            return result if type(result) is dict else dict(result)
        return result

    async def handle_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        if method == "notifications/initialized" and self.handshake is not None:
            self.handshake.initialized = True
        elif method == "notifications/roots/list_changed" and self.server.on_roots_changed is not None:
            self.defer(self.server.on_roots_changed, self)
