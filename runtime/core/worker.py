"""One ordered worker: queued callables run one after another, in order, on one task.

Sessions use it for user callbacks of notifications (so the reader never waits on user code,
and a callback may itself make requests) and for notifications the server pushes from
synchronous code. It starts on first use (most sessions never need it), and it can tell how
far it has got, so a call can return only after the callbacks queued before its response ran.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import math
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

log = logging.getLogger("mcpgen.runtime.core")

_IN_WORKER: contextvars.ContextVar[bool] = contextvars.ContextVar("mcpgen_in_worker", default=False)
Job = tuple[Callable[..., Any], tuple[Any, ...]]


def in_worker() -> bool:
    """Is the current task a callback worker (whose own calls must not wait for callbacks)?"""
    return _IN_WORKER.get()


async def call(fn: Callable[..., Awaitable[Any] | Any], *args: Any, **kwargs: Any) -> Any:
    """Call `fn`, awaiting the result when it is awaitable (sync and async callbacks alike)."""
    outcome = fn(*args, **kwargs)
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


class OrderedWorker:
    """Runs submitted callables in order on one task of the task group it is attached to.

    `buffer` bounds the queue: `put` waits for room (back-pressure on whoever feeds it),
    `submit` drops the job with a warning when the queue is full.
    """

    def __init__(self, name: str, *, mark: bool = False, buffer: float = math.inf) -> None:
        self.name = name
        self._mark = mark
        self._buffer = buffer
        self._task_group: TaskGroup | None = None
        self._send: MemoryObjectSendStream[Job] | None = None
        self._closed = False
        self.queued = 0
        self.done = 0
        self._waiters: list[tuple[int, anyio.Event]] = []
        self._finished: anyio.Event | None = None  # set when the worker's task ends (made when it starts)

    def attach(self, task_group: TaskGroup) -> None:
        self._task_group = task_group

    def _stream(self) -> MemoryObjectSendStream[Job] | None:
        if self._send is None:
            if self._task_group is None or self._closed:
                return None
            self._send, receive = anyio.create_memory_object_stream[Job](self._buffer)
            self._finished = anyio.Event()
            self._task_group.start_soon(self._run, receive, self._finished)
        return self._send

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue a job without waiting; False if the worker is closed or its queue is full."""
        stream = self._stream()
        if stream is None:
            return False
        try:
            stream.send_nowait((fn, args))
        except anyio.WouldBlock:
            log.warning("%s: the queue is full; dropped a job", self.name)
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self.queued += 1
        return True

    async def put(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue a job, waiting for room; False if the worker is closed."""
        stream = self._stream()
        if stream is None:
            return False
        try:
            await stream.send((fn, args))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self.queued += 1
        return True

    async def _run(self, jobs: MemoryObjectReceiveStream[Job], finished: anyio.Event) -> None:
        if self._mark:
            _IN_WORKER.set(True)
        try:
            async with jobs:
                async for fn, args in jobs:
                    try:
                        await call(fn, *args)
                    except Exception:
                        log.exception("%s: a job failed", self.name)
                    finally:
                        self.done += 1
                        for target, event in list(self._waiters):
                            if target <= self.done:
                                event.set()
        finally:
            finished.set()

    async def join(self) -> None:
        """Wait until the worker's task has ended (after `close`: once the jobs queued before it
        ran); at once when it never started."""
        if self._finished is not None:
            await self._finished.wait()

    async def catch_up(self, barrier: int, *, timeout: float | None = None) -> None:
        """Wait until the first `barrier` jobs have run (not from the worker itself, nor once closed)."""
        if barrier <= self.done or _IN_WORKER.get() or self._closed:
            return
        entry = (barrier, anyio.Event())
        self._waiters.append(entry)
        try:
            with anyio.move_on_after(timeout if timeout is not None else 30.0):
                await entry[1].wait()
        finally:
            self._waiters.remove(entry)

    def close(self) -> None:
        """Stop taking jobs; queued ones still run; waiters are released."""
        self._closed = True
        for _, event in self._waiters:
            event.set()
        if self._send is not None:
            self._send.close()


async def gather(jobs: Sequence[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    """Run jobs concurrently; if one fails, cancel the rest and raise its error as it is
    (not wrapped in an exception group)."""
    try:
        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(job)
    except BaseExceptionGroup as group:
        first = _first_error(group)
        if first is None:
            raise
        raise first from None


def _first_error(group: BaseExceptionGroup[Any]) -> BaseException | None:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found = _first_error(exc)
            if found is not None:
                return found
        elif not isinstance(exc, anyio.get_cancelled_exc_class()):
            found_exc: BaseException = exc
            return found_exc
    return None
