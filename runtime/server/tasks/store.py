"""Where tasks live: the `TaskStore` interface and the in-memory default.

A store keeps `TaskRecord`s until their TTL passes (an expired task is gone: reading it gives
None) and changes them atomically: `update` applies a function to the current record and stores
what it made of it, with no other change in between, so two processes answering and cancelling
the same task never lose each other's writes. Every change is announced: the process that made it
hears it at once (the manager calls `changed` itself), the other processes of a deployment through
`run` (a shared store publishes them; the in-memory store has no other process to tell).

Guarantees a store gives (the in-memory one within its process, `RedisTaskStore` across every
process that shares the Redis database, and across their restarts):

- `create` returns once a `get` anywhere finds the task (creation is strongly consistent);
- a task is readable until its TTL passes, finished or not; then it is gone;
- `update` is atomic per task; a terminal task is never changed again by the runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from .records import TaskRecord

Change = Callable[[TaskRecord], bool]
"""Edits a record in place; returns whether it changed anything (False: nothing is written)."""


class TaskStore(Protocol):
    """Keeps the tasks of a server (of every process of a deployment, for a shared store)."""

    async def create(self, record: TaskRecord) -> None:
        """Store a new task; once this returns, `get` finds it from any process."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task (a copy), or None when there is no such task or its TTL has passed."""
        ...

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        """Apply `change` to the task atomically; the record as stored after it (None: no such
        task), and whether anything changed (then the change is published to other processes)."""
        ...

    async def scan(self, *, owner: str | None, scope: str | None) -> list[TaskRecord]:
        """The live tasks created by `owner` (a principal) or, without one, in `scope` (a session),
        oldest first (for the handshake era's `tasks/list`)."""
        ...

    async def run(
        self, changed: Callable[[TaskRecord], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hear the changes other processes make and call `changed` with each changed record, until
        cancelled; `task_status.started()` once changes published from now on will arrive."""
        ...


class MemoryTaskStore:
    """Tasks in this process's memory: the default. Nothing survives the process, and other
    processes see none of them (use `RedisTaskStore` for several workers)."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._clock = clock
        self._sweep_at = 0.0

    def _live(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is not None and record.expired(self._clock()):
            del self._records[task_id]
            return None
        return record

    def _sweep(self) -> None:
        """Forget expired tasks (at most once a second, when tasks are created)."""
        now = self._clock()
        if now < self._sweep_at:
            return
        self._sweep_at = now + 1.0
        for task_id in [k for k, r in self._records.items() if r.expired(now)]:
            del self._records[task_id]

    async def create(self, record: TaskRecord) -> None:
        self._sweep()
        if record.task_id in self._records:
            raise ValueError(f"task {record.task_id!r} exists already")
        self._records[record.task_id] = record.copy()

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._live(task_id)
        return record.copy() if record is not None else None

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        record = self._live(task_id)
        if record is None:
            return None, False
        draft = record.copy()
        if not change(draft):
            return draft, False
        self._records[task_id] = draft
        return draft.copy(), True

    async def scan(self, *, owner: str | None, scope: str | None) -> list[TaskRecord]:
        now = self._clock()
        found = [
            r.copy()
            for r in self._records.values()
            if not r.expired(now) and r.owner == owner and (owner is not None or r.scope == scope)
        ]
        return sorted(found, key=lambda r: (r.created_at, r.task_id))

    async def run(
        self, changed: Callable[[TaskRecord], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()  # one process: every change is heard where it is made
