"""Change buses: how change notifications reach the clients of every process of a deployment.

A change (a list changed, a resource was updated) is delivered to this process's clients at once
(handshake-era sessions, modern `subscriptions/listen` streams) and published on the server's
bus. With several processes (`uvicorn --workers N`, several hosts behind a load balancer), a
listen stream held by one process must also hear of a change made in another: a shared bus (the
Redis one in `redis_bus`) carries each change to the other processes, which deliver it to their
own clients. The default, `LocalBus`, is this process alone.

The bus spreads notifications, not state: every process registers the same tools, prompts and
resources; a change one process makes to its own registry is not replicated, only announced.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import anyio
from anyio.abc import TaskStatus

from ..protocol.changes import LIST_KINDS, Change

log = logging.getLogger("mcpgen.runtime.server")

Deliver = Callable[[Change], None]


class ChangeBus(Protocol):
    """Carries changes between the processes of a deployment."""

    def publish(self, change: Change) -> None:
        """Announce a change made in this process (it was delivered here already); never blocks."""
        ...

    async def run(self, deliver: Deliver, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Receive the other processes' changes and `deliver` each here, until cancelled;
        `task_status.started()` once changes published from now on will arrive."""
        ...


class LocalBus:
    """One process: nothing to publish, nothing to receive."""

    def publish(self, change: Change) -> None:
        return None

    async def run(self, deliver: Deliver, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()


def encode_change(change: Change, origin: str) -> bytes:
    body: dict[str, Any] = {"o": origin, "k": change.kind}
    if change.uri is not None:
        body["u"] = change.uri
    return json.dumps(body, separators=(",", ":")).encode()


def decode_change(data: bytes | str, origin: str) -> Change | None:
    """A change published by another process (None: our own, or not a change at all)."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        log.warning("ignored a malformed change on the bus")
        return None
    if not isinstance(body, dict) or body.get("o") == origin:
        return None
    kind, uri = body.get("k"), body.get("u")
    if uri is not None and isinstance(uri, str) and isinstance(kind, str):
        return Change(kind, uri)
    if kind in LIST_KINDS:
        return Change(kind)
    log.warning("ignored an unknown change on the bus: %r", body)
    return None
