"""Task records and their wire shapes, and the task stores: the in-memory one and the Redis one
(against a real redis-server) keep the same contract: strongly consistent creation, atomic
updates that never lose a concurrent write, expiry with the TTL, the creator's tasks, and (Redis)
every change announced to the other processes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcpgen.runtime.server.tasks import MemoryTaskStore, TaskRecord, TaskStore
from mcpgen.runtime.server.tasks.records import legacy_view, modern_created, modern_view
from support.processes import redis_server

pytestmark = pytest.mark.anyio


def record(task_id: str = "t1", **fields: Any) -> TaskRecord:
    now = time.time()
    base: dict[str, Any] = {
        "task_id": task_id,
        "status": "working",
        "created_at": now,
        "updated_at": now,
        "ttl_ms": 60_000,
        "poll_interval_ms": 100,
        "version": "2026-07-28",
        "method": "tools/call",
    }
    return TaskRecord(**{**base, **fields})


# -- records ---------------------------------------------------------------------------------------


def test_the_extension_view_inlines_what_each_status_carries() -> None:
    working = record()
    assert modern_view(working).keys() == {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    asking = record(status="input_required", requests={"a": {"method": "elicitation/create"}, "b": {"method": "x"}})
    asking.answers["a"] = {"action": "accept"}
    assert modern_view(asking)["inputRequests"] == {"b": {"method": "x"}}  # only what is still unanswered
    asking.answers["b"] = {"action": "decline"}
    assert modern_view(asking)["status"] == "working" and "inputRequests" not in modern_view(asking)
    done = record(status="completed", result={"content": [], "isError": True})
    assert (
        modern_view(done)["result"] == {"content": [], "isError": True} and modern_view(done)["status"] == "completed"
    )
    failed = record(status="failed", error={"code": -32603, "message": "x"}, status_message="x")
    assert modern_view(failed)["error"]["code"] == -32603 and "result" not in modern_view(failed)
    created = modern_created(record(ttl_ms=None))
    assert created["resultType"] == "task" and created["ttlMs"] is None and created["createdAt"].endswith("Z")


def test_the_2025_view_renames_fields_and_fails_a_tool_error() -> None:
    view = legacy_view(record(status="completed", result={"content": [], "isError": True}))
    assert view["status"] == "failed" and view["ttl"] == 60_000 and view["pollInterval"] == 100
    assert "ttlMs" not in view and "result" not in view


def test_input_keys_are_unique_over_a_task_and_records_round_trip() -> None:
    task = record(issued=["k", "k~2"])
    assert (task.unique_key("k"), task.unique_key("j")) == ("k~3", "j")
    assert TaskRecord.from_json(task.to_json()) == task
    assert task.expired(task.created_at + 60) and not task.expired(task.created_at + 59.999)
    assert not record(ttl_ms=None).expired(1e12)


# -- the stores ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@asynccontextmanager
async def redis_stores(url: str, count: int) -> AsyncIterator[list[TaskStore]]:
    """`count` Redis stores of one deployment (one prefix), as separate processes would have."""
    from mcpgen.runtime.server.tasks.redis_store import RedisTaskStore

    prefix = f"test:{time.time_ns()}"
    made = [RedisTaskStore(url, prefix) for _ in range(count)]
    try:
        yield list(made)
    finally:
        for store in made:
            await store._redis().aclose()


async def create_get_and_conditional_updates(one: TaskStore, other: TaskStore) -> None:
    await one.create(record("a", owner="alice"))
    found = await other.get("a")  # created: readable through any store of the deployment
    assert found is not None and found.owner == "alice"
    with pytest.raises(ValueError, match="exists"):
        await other.create(record("a"))
    assert await one.get("missing") is None
    assert await one.update("missing", lambda r: True) == (None, False)
    unchanged, changed = await other.update("a", lambda r: False)
    assert unchanged is not None and not changed

    def finish(r: TaskRecord) -> bool:
        if r.terminal:
            return False
        r.status, r.result = "completed", {"content": []}
        return True

    done, changed = await other.update("a", finish)
    assert changed and done is not None and done.status == "completed"
    assert (await one.get("a")) == done
    assert (await one.update("a", finish))[1] is False  # terminal: never changed again


async def concurrent_updates_lose_nothing(one: TaskStore, other: TaskStore) -> None:
    await one.create(record("c"))

    async def add(store: TaskStore, key: str) -> None:
        def append(r: TaskRecord) -> bool:
            r.issued.append(key)
            return True

        await store.update("c", append)

    async with anyio.create_task_group() as tg:
        for n in range(20):
            tg.start_soon(add, one, f"one-{n}")
            tg.start_soon(add, other, f"other-{n}")
    final = await one.get("c")
    assert final is not None and len(final.issued) == 40 and len(set(final.issued)) == 40


async def a_creator_lists_its_own_tasks(store: TaskStore) -> None:
    await store.create(record("p1", owner="alice"))
    await store.create(record("p2", owner="alice", scope="s1"))
    await store.create(record("s1", scope="s1"))
    await store.create(record("s2", scope="s2"))
    assert {r.task_id for r in await store.scan(owner="alice", scope=None)} == {"p1", "p2"}
    assert [r.task_id for r in await store.scan(owner=None, scope="s1")] == ["s1"]
    assert await store.scan(owner="bob", scope=None) == []


async def test_the_memory_store_keeps_the_contract() -> None:
    store = MemoryTaskStore()
    await create_get_and_conditional_updates(store, store)
    await concurrent_updates_lose_nothing(store, store)
    await a_creator_lists_its_own_tasks(MemoryTaskStore())


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # redis-py's client is asyncio-only
async def test_the_redis_store_keeps_the_contract_across_clients(redis_url: str, anyio_backend: str) -> None:
    async with redis_stores(redis_url, 2) as (one, other):
        await create_get_and_conditional_updates(one, other)
        await concurrent_updates_lose_nothing(one, other)
    async with redis_stores(redis_url, 1) as (fresh,):
        await a_creator_lists_its_own_tasks(fresh)


async def test_the_memory_store_forgets_expired_tasks() -> None:
    now = [time.time()]
    store = MemoryTaskStore(clock=lambda: now[0])
    task = record("e", ttl_ms=1000)
    await store.create(task)
    now[0] = task.created_at + 0.999
    assert await store.get("e") is not None
    now[0] = task.created_at + 1.0
    assert await store.get("e") is None and await store.update("e", lambda r: True) == (None, False)
    assert await store.scan(owner=None, scope=None) == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # redis-py's client is asyncio-only
async def test_redis_expires_a_task_with_its_ttl_and_keeps_the_ttl_on_update(
    redis_url: str, anyio_backend: str
) -> None:
    from mcpgen.runtime.server.tasks.redis_store import RedisTaskStore

    store = RedisTaskStore(redis_url, f"test:ttl:{time.time_ns()}")
    try:
        await store.create(record("x", ttl_ms=600_000))
        await store.update("x", lambda r: bool(r.issued.append("k")) or True)
        client = store._redis()
        remaining = await client.pttl(store._key("x"))
        assert 0 < remaining <= 600_000  # Redis forgets the task when its TTL has passed
        await store.create(record("forever", ttl_ms=None))
        assert await client.pttl(store._key("forever")) == -1
    finally:
        await store._redis().aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_redis_announces_changes_to_the_other_processes_only(redis_url: str, anyio_backend: str) -> None:
    from mcpgen.runtime.server.tasks.redis_store import RedisTaskStore

    prefix = f"test:announce:{time.time_ns()}"
    here, there = RedisTaskStore(redis_url, prefix), RedisTaskStore(redis_url, prefix)
    heard_here: list[TaskRecord] = []
    heard_there: list[TaskRecord] = []
    arrived = anyio.Event()

    def there_heard(changed: TaskRecord) -> None:
        heard_there.append(changed)
        if changed.status == "cancelled":
            arrived.set()

    async with anyio.create_task_group() as tg:
        await tg.start(here.run, heard_here.append)
        await tg.start(there.run, there_heard)
        await here.create(record("n"))

        def cancel(r: TaskRecord) -> bool:
            r.status = "cancelled"
            return True

        await here.update("n", cancel)
        with anyio.fail_after(10):
            await arrived.wait()
        tg.cancel_scope.cancel()
    assert [r.status for r in heard_there] == ["working", "cancelled"] and heard_here == []
