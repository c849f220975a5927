"""A task store in Redis (the `redis` extra: `pip install 'mcpgen[redis]'`), shared by every process
of a deployment.

    server = Server("jobs", tasks=TaskOptions(store=RedisTaskStore("redis://localhost:6379/0")))

Each task is one key holding its record as JSON, expiring with the task's TTL (so Redis itself
forgets expired tasks, and a server restart loses nothing Redis kept); a sorted set per creator
lists the tasks of the handshake era's `tasks/list`. Changes are atomic (`WATCH`/`MULTI`: an
update that raced another is done again on the new record) and published on one channel, so the
process running a task hears the answers and the cancellation another process received, and
listen streams anywhere hear status changes. What Redis keeps across restarts is up to its own
persistence settings (RDB or AOF); mcpgen writes every change before it answers.

It uses redis-py's asyncio client, so the server must run on asyncio (uvicorn does).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ..redis_bus import redis_url
from .records import TaskRecord
from .store import Change

log = logging.getLogger("mcpgen.runtime.server.tasks")
DEFAULT_PREFIX = "mcpgen:tasks"


class RedisTaskStore:
    """Tasks in Redis (see the module docstring). `prefix` namespaces the keys and the channel."""

    def __init__(self, url: str | None = None, prefix: str = DEFAULT_PREFIX, *, client: Any = None) -> None:
        self.url = redis_url(url, "RedisTaskStore")
        self.prefix = prefix
        self.channel = f"{prefix}:changes"
        self.origin = secrets.token_hex(8)
        self._client = client
        self._owned = client is None
        self.retry_seconds = 1.0

    def _redis(self) -> Any:
        if self._client is None:
            import redis.asyncio as redis

            self._client = redis.Redis.from_url(self.url)
        return self._client

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def _index(self, owner: str | None, scope: str | None) -> str | None:
        if owner is not None:
            return f"{self.prefix}:of:principal:{owner}"
        return f"{self.prefix}:of:session:{scope}" if scope is not None else None

    async def _publish(self, record: TaskRecord) -> None:
        message = json.dumps({"o": self.origin, "r": record.to_json()}, separators=(",", ":"))
        try:
            await self._redis().publish(self.channel, message)
        except Exception as exc:  # the change is stored; only its announcement is lost
            log.warning("could not announce a change of task %s: %s", record.task_id, exc)

    # -- the store -------------------------------------------------------------------------------

    async def create(self, record: TaskRecord) -> None:
        client = self._redis()
        index = self._index(record.owner, record.scope)
        async with client.pipeline(transaction=True) as pipe:
            if record.ttl_ms is not None:
                pipe.set(self._key(record.task_id), record.to_json(), nx=True, px=max(1, record.ttl_ms))
            else:
                pipe.set(self._key(record.task_id), record.to_json(), nx=True)
            if index is not None:
                pipe.zadd(index, {record.task_id: record.created_at})
                if record.ttl_ms is None:
                    pipe.persist(index)
                else:
                    pipe.pexpire(index, record.ttl_ms, nx=True)
                    pipe.pexpire(index, record.ttl_ms, gt=True)
            created, *_ = await pipe.execute()
        if not created:
            raise ValueError(f"task {record.task_id!r} exists already")
        await self._publish(record)

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._redis().get(self._key(task_id))
        return TaskRecord.from_json(raw) if raw is not None else None

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        from redis.exceptions import WatchError

        key = self._key(task_id)
        async with self._redis().pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        return None, False
                    record = TaskRecord.from_json(raw)
                    if not change(record):
                        return record, False
                    pipe.multi()
                    pipe.set(key, record.to_json(), keepttl=True)
                    await pipe.execute()
                    break
                except WatchError:
                    continue  # another process changed it meanwhile: apply the change to the new record
        await self._publish(record)
        return record, True

    async def scan(self, *, owner: str | None, scope: str | None) -> list[TaskRecord]:
        index = self._index(owner, scope)
        if index is None:
            return []
        client = self._redis()
        ids = [i.decode() if isinstance(i, bytes) else str(i) for i in await client.zrange(index, 0, -1)]
        if not ids:
            return []
        found: list[TaskRecord] = []
        gone: list[str] = []
        for task_id, raw in zip(ids, await client.mget([self._key(i) for i in ids]), strict=True):
            if raw is None:
                gone.append(task_id)
            else:
                found.append(TaskRecord.from_json(raw))
        if gone:
            await client.zrem(index, *gone)
        now = time.time()
        return [r for r in found if not r.expired(now)]

    async def run(
        self, changed: Callable[[TaskRecord], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hear the other processes' changes until cancelled (reconnecting when Redis goes away);
        `task_status.started()` once subscribed, or once a first attempt failed (the server
        starts anyway and the store keeps trying)."""
        import redis.asyncio as redis

        client = self._redis()
        started = False
        try:
            while True:
                try:
                    pubsub = client.pubsub()
                    try:
                        await pubsub.subscribe(self.channel)
                        while True:  # the subscription is confirmed before anything published after it
                            message = await pubsub.get_message(timeout=None)
                            if message is not None and message.get("type") == "subscribe":
                                break
                        if not started:
                            started = True
                            task_status.started()
                        async for message in pubsub.listen():
                            if message.get("type") == "message":
                                self._deliver(message.get("data", b""), changed)
                    finally:
                        with anyio.CancelScope(shield=True):
                            await pubsub.aclose()
                except (OSError, TimeoutError, redis.RedisError) as exc:
                    log.warning("the Redis task store is unavailable (%s); retrying", exc)
                    if not started:
                        started = True
                        task_status.started()
                    await anyio.sleep(self.retry_seconds)
        finally:
            if self._owned:
                with anyio.CancelScope(shield=True):
                    await client.aclose()
                self._client = None

    def _deliver(self, data: bytes | str, changed: Callable[[TaskRecord], None]) -> None:
        try:
            body = json.loads(data)
            if not isinstance(body, dict) or body.get("o") == self.origin:
                return
            record = TaskRecord.from_json(body["r"])
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("ignored a malformed task change on %s: %s", self.channel, exc)
            return
        changed(record)
