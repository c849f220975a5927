"""A change bus over Redis pub/sub (the optional `redis` extra: `pip install mcpgen[redis]`).

    server.bus = RedisBus("redis://localhost:6379/0")

Every process of a deployment publishes its changes on one channel and subscribes to it; each
change carries the id of the process that made it, so a process does not deliver its own change
twice. Redis pub/sub is fire-and-forget: a process that is down or reconnecting misses changes
(a listen stream it held ended anyway; its client reconnects and lists again).

It uses redis-py's asyncio client, so the server must run on asyncio (uvicorn does).

Changes published while the bus is not running (before it starts, between a stop and a restart)
wait, up to `OUTBOX` of them, and are published once it runs. The stream the publisher reads is
opened when the bus starts and closed when it stops, what it still holds kept for the next run.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
from collections import deque
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..protocol.changes import Change
from .bus import Deliver, decode_change, encode_change

log = logging.getLogger("mcpgen.runtime.server")
DEFAULT_CHANNEL = "mcpgen:changes"
URL_ENV = "MCPGEN_REDIS_URL"
DEFAULT_URL = "redis://localhost:6379/0"
OUTBOX = 10_000  # changes waiting to be published before new ones are dropped


def redis_url(url: str | None, who: str) -> str:
    """The Redis URL `who` connects to (`url`, else `MCPGEN_REDIS_URL`, else the local default),
    once the redis client is known to be installed (an ImportError naming the extra otherwise)."""
    try:
        import redis.asyncio  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(f"{who} needs the redis client: pip install 'mcpgen[redis]'") from exc
    return url or os.environ.get(URL_ENV) or DEFAULT_URL


class RedisBus:
    """Changes published to, and received from, a Redis channel. A change published while the
    bus is not running waits for its next run (up to `OUTBOX` of them)."""

    def __init__(self, url: str | None = None, channel: str = DEFAULT_CHANNEL, *, client: Any = None) -> None:
        self.url = redis_url(url, "RedisBus")
        self.channel = channel
        self.origin = secrets.token_hex(8)
        self._client = client
        self._waiting: deque[bytes] = deque()  # published while the bus is not running
        # The publisher's stream, open while the bus runs (shared by runs at the same time).
        self._outbox: MemoryObjectSendStream[bytes] | None = None
        self._pending: MemoryObjectReceiveStream[bytes] | None = None
        self._runs = 0
        self.subscribed = anyio.Event()  # set once this process receives the channel's messages
        self.connect_timeout = 10.0
        self.retry_seconds = 1.0

    def publish(self, change: Change) -> None:
        data = encode_change(change, self.origin)
        if self._outbox is None:  # not running: kept for the next run, as many as the outbox holds
            if len(self._waiting) < OUTBOX:
                self._waiting.append(data)
                return
        else:
            try:
                self._outbox.send_nowait(data)
                return
            except anyio.WouldBlock:
                pass
        log.warning("the Redis bus is not keeping up; dropped %s", change.method)

    def _open(self) -> MemoryObjectReceiveStream[bytes]:
        """A run starts: the publisher's stream, with what was published while none ran."""
        self._runs += 1
        if self._pending is None:
            self._outbox, self._pending = anyio.create_memory_object_stream[bytes](OUTBOX)
            while self._waiting:
                self._outbox.send_nowait(self._waiting.popleft())
        return self._pending

    def _close(self) -> None:
        """A run stops: the last one closes the stream, keeping what it held for the next run."""
        self._runs -= 1
        if self._runs or self._outbox is None or self._pending is None:
            return
        outbox, pending = self._outbox, self._pending
        self._outbox = self._pending = None
        outbox.close()
        while True:
            try:
                self._waiting.append(pending.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
        pending.close()

    async def run(self, deliver: Deliver, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Publish and receive until cancelled; `task_status.started()` once subscribed (or once
        Redis could not be reached within `connect_timeout`: the server starts anyway and the bus
        keeps trying)."""
        import redis.asyncio as redis

        client = self._client or redis.Redis.from_url(self.url)
        pending = self._open()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._publisher, client, pending)
                started = False
                while True:
                    try:
                        with anyio.fail_after(self.connect_timeout if not started else math.inf):
                            pubsub = client.pubsub()
                            await pubsub.subscribe(self.channel)
                            await self._confirmed(pubsub)
                        self.subscribed.set()
                        if not started:
                            started = True
                            task_status.started()
                        await self._receive(pubsub, deliver)
                    except (OSError, TimeoutError, redis.RedisError) as exc:
                        log.warning("the Redis change bus is unavailable (%s); retrying", exc)
                        if not started:
                            started = True
                            task_status.started()
                        await anyio.sleep(self.retry_seconds)
        finally:
            self._close()
            with anyio.CancelScope(shield=True):
                if self._client is None:
                    await client.aclose()

    async def _publisher(self, client: Any, pending: MemoryObjectReceiveStream[bytes]) -> None:
        async for data in pending:
            try:
                await client.publish(self.channel, data)
            except Exception as exc:  # Redis down: the change is lost, the server goes on
                log.warning("could not publish a change to Redis: %s", exc)

    @staticmethod
    async def _confirmed(pubsub: Any) -> None:
        """Wait for Redis to confirm the subscription (from then on, every publication arrives)."""
        while True:
            message = await pubsub.get_message(timeout=None)
            if message is not None and message.get("type") == "subscribe":
                return

    async def _receive(self, pubsub: Any, deliver: Deliver) -> None:
        try:
            async for message in pubsub.listen():
                if message.get("type") != "message":
                    continue
                change = decode_change(message.get("data", b""), self.origin)
                if change is not None:
                    deliver(change)
        finally:
            with anyio.CancelScope(shield=True):
                await pubsub.aclose()
