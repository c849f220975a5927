"""The Redis change bus's own bookkeeping, on both backends, with an in-process stand-in for
redis-py's client (the bus against a real redis-server: tests/scenarios/test_scaleout.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcpgen.runtime.server.redis_bus import RedisBus
from support.buses import stop_and_restart
from support.leaks import no_unclosed_streams

pytestmark = pytest.mark.anyio


class Subscription:
    """One `pubsub()` of the stand-in: the messages of its channel, in order."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.messages: deque[dict[str, Any]] = deque()
        self.arrived = anyio.Event()

    def push(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def subscribe(self, channel: str) -> None:
        self.hub.subscribers.append(self)
        self.push({"type": "subscribe", "channel": channel})

    async def get_message(self, timeout: float | None = None) -> dict[str, Any]:
        while not self.messages:
            self.arrived = anyio.Event()
            await self.arrived.wait()
        return self.messages.popleft()

    async def listen(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            yield await self.get_message()

    async def aclose(self) -> None:
        self.hub.subscribers.remove(self)


class Hub:
    """A stand-in for redis-py's asyncio client: pub/sub on one channel, in process."""

    def __init__(self) -> None:
        self.subscribers: list[Subscription] = []

    def pubsub(self) -> Subscription:
        return Subscription(self)

    async def publish(self, channel: str, data: bytes) -> None:
        for subscriber in list(self.subscribers):
            subscriber.push({"type": "message", "data": data})


async def test_the_bus_closes_its_streams_when_it_stops_and_keeps_changes_made_while_stopped() -> None:
    """Defect: the bus never closed its memory object streams (anyio's ResourceWarning once it
    was collected). They are closed when it stops; a change published while it is not running
    (before its start, between a stop and a restart) is published once it runs."""
    with no_unclosed_streams():
        hub = Hub()
        await stop_and_restart(RedisBus("redis://unused", client=hub), RedisBus("redis://unused", client=hub))
