"""Change notifications on the server: what changed, who listens, and modern listen streams.

A `Change` is a list change (`tools`, `prompts`, `resources`) or an update of one resource.
Each era delivers it its own way (see the era strategies, `eras`): pushed on a handshake-era session to a
client that was told `listChanged` or subscribed to the URI; sent on every modern
`subscriptions/listen` stream that asked for it. A listen stream has its own bounded queue and is
drained by the task serving the listen request, on that request's reply route.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..protocol import wire
from ..protocol.capabilities import has_capability
from ..protocol.changes import LIST_KINDS, Change
from ..protocol.keys import SUBSCRIPTION_ID_KEY
from ..protocol.wire import RequestId

if TYPE_CHECKING:
    from .context import RequestContext

log = logging.getLogger("mcpgen.runtime.server")
LISTEN_QUEUE = 1000  # notifications a slow listen stream may fall behind before they are dropped


_keys = itertools.count(1)


class Notice(Protocol):
    """What a listen stream sends: a notification method and its params, tagged with the stream's id
    (a `Change`, or a task's status: `tasks.TaskNotice`)."""

    @property
    def method(self) -> str: ...

    def params(self, subscription_id: RequestId | None = None) -> dict[str, Any] | None: ...


@dataclass(eq=False)
class ListenStream:
    """One `subscriptions/listen` request being served."""

    subscription_id: RequestId
    kinds: frozenset[str] = frozenset()
    uris: frozenset[str] = frozenset()
    key: int = field(default_factory=lambda: next(_keys))  # listen ids of different clients may collide
    task_ids: frozenset[str] = frozenset()  # tasks whose status changes it hears (the tasks extension)
    _send: MemoryObjectSendStream[Notice] | None = None
    _receive: MemoryObjectReceiveStream[Notice] | None = None

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Notice](LISTEN_QUEUE)

    def wants(self, change: Change) -> bool:
        return change.uri in self.uris if change.uri is not None else change.kind in self.kinds

    def push(self, change: Notice) -> None:
        assert self._send is not None
        try:
            self._send.send_nowait(change)
        except anyio.WouldBlock:
            log.warning("listen stream %r is not keeping up; dropped %s", self.subscription_id, change.method)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def stop(self) -> None:
        """End the stream gracefully: queued changes are still sent, then the listen result."""
        assert self._send is not None
        self._send.close()

    def close(self) -> None:
        """The listen request is over (answered or cancelled): both ends of its queue are closed."""
        for end in (self._send, self._receive):
            if end is not None:
                end.close()


async def serve_listen(ctx: RequestContext, params: Any) -> dict[str, Any]:
    """The `subscriptions/listen` handler: acknowledge what is honoured, then send changes as they
    come until the stream is stopped (the result) or the request is cancelled (nothing more)."""
    wanted = wire.to_wire(params.notifications) or {}  # the filter, as a model or a TypedDict, as on the wire
    caps = ctx.server.capabilities()
    honoured: dict[str, Any] = {}
    kinds = set()
    for kind in LIST_KINDS:
        if wanted.get(f"{kind}ListChanged") and has_capability(caps, f"{kind}.listChanged"):
            honoured[f"{kind}ListChanged"] = True
            kinds.add(kind)
    uris: frozenset[str] = frozenset()
    if wanted.get("resourceSubscriptions") and has_capability(caps, "resources.subscribe"):
        uris = frozenset(wanted["resourceSubscriptions"])
        honoured["resourceSubscriptions"] = sorted(uris)
    task_ids = await ctx.server.tasks.listen_for(ctx, wanted, honoured)
    stream = ListenStream(ctx.request_id, frozenset(kinds), uris, task_ids=task_ids)
    route = ctx.request.context.reply
    session = ctx.session
    try:
        # Listening before the acknowledgement goes out: a change made while it is being written
        # waits in the stream's queue (drained after it), rather than missing the stream.
        ctx.server.listening.add(stream)
        await session.send_notification(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": {SUBSCRIPTION_ID_KEY: ctx.request_id}},
            route=route,
        )
        if task_ids:
            await ctx.server.tasks.attach(stream)
        assert stream._receive is not None
        async for change in stream._receive:
            await session.send_notification(change.method, change.params(stream.subscription_id), route=route)
    finally:
        ctx.server.listening.discard(stream)
        ctx.server.tasks.detach(stream)
        stream.close()
    return {"_meta": {SUBSCRIPTION_ID_KEY: ctx.request_id}}
