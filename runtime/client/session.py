"""`ClientSession`: the client end of one connection, mechanics only.

It answers what a server may send a client (requests, on a handshake-era session; change,
log and subscription notifications) by handing them to the `Client`'s handlers and
subscriptions; the client's callbacks run on the session's ordered worker, never on the reader.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ..core.session import IncomingRequest, Session
from ..core.transport import Transport, TransportContext
from ..protocol.capabilities import has_capability, missing_paths
from ..protocol.errors import InvalidParams, MethodNotFound
from ..protocol.keys import HANDSHAKE_METHOD, REQUEST, SUBSCRIPTION_ID_KEY
from ..protocol.wire import is_request_id
from .options import OutgoingRequest
from .subscriptions import Subscription, event_for
from .tasks import NOTIFICATIONS

if TYPE_CHECKING:
    from ..core.telemetry import Instrumentation
    from . import Client
    from .eras import EraSpeaking


class ClientSession(Session):
    """The client end of one connection."""

    side = "client"

    def __init__(self, client: Client, transport: Transport, **options: Any) -> None:
        super().__init__(transport, **options)
        self.client = client
        self.version: str | None = None
        self.era: EraSpeaking | None = None
        self.listens: dict[str | int, Subscription] = {}
        self.telemetry: Instrumentation | None = client.telemetry
        """The instrumentation this session's requests are traced with (None: none). A session run
        on a transport decides once, when it starts: without an SDK configured then, its requests
        cost no telemetry check at all (the next connection sees an SDK set up later). A session
        driven request by request keeps asking the instrumentation, which looks for an SDK once a
        second until one is set."""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """`Session.run`, with the telemetry decided for the connection first."""
        telemetry = self.telemetry
        if telemetry is not None and not telemetry.ready():
            self.telemetry = None  # decided for this connection: nothing to trace
        await super().run(task_status=task_status)

    @property
    def protocol_version(self) -> str | None:
        return self.version

    def on_closed(self) -> None:
        for sub in list(self.listens.values()):
            sub.end()

    def can_cancel(self, method: str) -> bool:
        if self.version is None or method == HANDSHAKE_METHOD:
            return False
        spec = self.client.registry.spec(self.version, "notifications/cancelled")
        return spec is not None and spec.direction.allows("client")

    # -- hooks and telemetry around what is sent and received --------------------------------

    def send_request(
        self, method: str, params: Mapping[str, Any] | None = None, **options: Any
    ) -> Coroutine[Any, Any, Any]:
        """`Session.send_request`, inside the `on_request` hook and the telemetry span when there
        are. (A plain function returning the coroutine to await: no frame of its own otherwise.)"""
        telemetry = self.telemetry
        traced = telemetry is not None and telemetry.ready()
        if self.client.hooks.on_request is None and not traced:
            return super().send_request(method, params, **options)
        return self._observed(method, params, telemetry if traced else None, options)

    async def _observed(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        telemetry: Instrumentation | None,
        options: dict[str, Any],
    ) -> Any:
        request_id = options.pop("request_id", None)
        if request_id is None:
            request_id = self.next_id()
        body = dict(params) if params is not None else None
        if telemetry is None:
            return await self._hooked(method, body, request_id, options)
        with telemetry.sending(method, body, request_id, self.version, self.context.kind) as (outcome, carrier):
            if carrier:  # the trace context travels in `_meta`
                body = dict(body or {})
                meta = body.get("_meta")
                body["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), **carrier}
            result = await self._hooked(method, body, request_id, options)
            outcome.result(method, result)
            return result

    async def _hooked(
        self, method: str, body: dict[str, Any] | None, request_id: str | int, options: dict[str, Any]
    ) -> Any:
        hook = self.client.hooks.on_request
        if hook is None:
            return await Session.send_request(self, method, body, request_id=request_id, **options)
        request = OutgoingRequest(method, body, request_id, self.version)

        async def call_next() -> Any:
            return await Session.send_request(self, request.method, request.params, request_id=request_id, **options)

        return await hook(request, call_next)

    async def _on_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        observer = self.client.hooks.on_notification
        if observer is not None:
            await self.callbacks.put(observer, method, params or {})
        await super()._on_notification(method, params, context)

    async def handle_request(self, request: IncomingRequest) -> Any:
        telemetry = self.telemetry
        if telemetry is None or not telemetry.ready():
            return await self._answer(request)
        with telemetry.handling(request.method, request.params, request.id, self.version, self.context.kind):
            return await self._answer(request)

    async def _answer(self, request: IncomingRequest) -> Any:
        if self.version is None or self.era is None or not self.era.rules.server_sends_requests:
            raise MethodNotFound(f"method not found: {request.method} (servers send no requests in this era)")
        spec = self.client.registry.spec(self.version, request.method)
        if spec is None or spec.kind != REQUEST or not spec.direction.allows("server"):
            raise MethodNotFound(f"method not found: {request.method}")
        gate = spec.capability
        if gate is not None and gate.side in ("client", "receiver"):
            declared = self.client.capabilities()
            missing = missing_paths(declared, gate, request.params)
            if missing:
                if gate.param is not None and has_capability(declared, gate.path):
                    raise InvalidParams(f"{request.method}: this client did not declare {', '.join(missing)}")
                raise MethodNotFound(
                    f"method not found: {request.method} (this client does not declare {', '.join(missing)})"
                )
        if request.method not in self.client.inputs.handlers:
            raise MethodNotFound(f"method not found: {request.method}")
        return await self.client.inputs.answer(spec, request.params)

    async def handle_notification(self, method: str, params: dict[str, Any] | None, context: TransportContext) -> None:
        params = params or {}
        if method in NOTIFICATIONS:  # a task's status (either design): its handle hears of it
            self.client.tasks.notified(method, params)
            return
        meta = params.get("_meta")
        tag = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        stream = self.listens.get(tag) if is_request_id(tag) else None
        if method == "notifications/subscriptions/acknowledged":
            if stream is not None:
                honoured = params.get("notifications")
                stream.acknowledge(honoured if isinstance(honoured, dict) else {})
            return
        if method == "notifications/cancelled":
            target = params.get("requestId")
            ended = self.listens.get(target) if is_request_id(target) else None
            if ended is not None:
                ended.end()
            return
        event = event_for(method, params)
        if event is not None:
            if stream is not None:
                stream.push(event)
            else:
                for sub in self.listens.values():
                    if sub.wants(event):
                        sub.push(event)
            await self.callbacks.put(self.client.on_event, event)
        elif method == "notifications/message" and self.client.hooks.on_log is not None:
            await self.callbacks.put(
                self.client.hooks.on_log, params.get("level"), params.get("data"), params.get("logger")
            )
