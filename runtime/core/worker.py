"""Where work runs besides the caller's task: one ordered worker, and worker threads.

`OrderedWorker`: queued callables run one after another, in order, on one task. Sessions use it
for user callbacks of notifications (so the reader never waits on user code, and a callback may
itself make requests) and for notifications the server pushes from synchronous code. It starts on
first use (most sessions never need it), and it can tell how far it has got, so a call can return
only after the callbacks queued before its response ran.

`run_in_thread`: a plain function called in a worker thread, bounded by a `CapacityLimiter`
(anyio's default one when none is given). On trio it is `anyio.to_thread.run_sync`. On asyncio
it is a lighter hand-off with what users rely on kept: the loop's own worker threads (each
waiting on a queue of its own; one that has been idle for `IDLE_SECONDS` retires), the caller's
context variables copied into the call, the limiter's token held for as long as the thread runs
the function, and `anyio.from_thread` usable inside it (the thread knows its loop, as anyio's
own worker threads do). The caller waits on one loop future, which the thread completes through
`call_soon_threadsafe`: no extra turn of the loop, no cancel scope, no lock per call. Cancelling
the caller abandons the call, as cancelling the task does with anyio's: the caller returns at
once, the function runs to its end and what it returns is dropped (the token is given back then).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import math
import queue
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from anyio import CapacityLimiter

T = TypeVar("T")

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


# -- worker threads ------------------------------------------------------------------------------

IDLE_SECONDS = 10.0  # how long a worker thread waits for its next job before it retires

_anyio_thread: Any  # where `anyio.from_thread` looks for the loop of the thread it is called from
try:
    from anyio._core._eventloop import threadlocals as _anyio_thread
except ImportError:  # pragma: no cover - another anyio: every call goes through anyio's own threads
    _anyio_thread = None

_Job = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]", Any]


class _Thread:
    """One worker thread of a loop: runs the jobs put on its own queue, one at a time."""

    __slots__ = ("jobs", "pool")

    def __init__(self, pool: _Threads) -> None:
        self.pool = pool
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=self._work, name="mcpgen worker thread", daemon=True).start()

    def _work(self) -> None:
        pool = self.pool
        loop = pool.loop
        if _anyio_thread is not None:  # anyio.from_thread.run(...) finds this loop, as in anyio's threads
            _anyio_thread.current_token = pool.token
            _anyio_thread.current_cancel_scope = None
        get = self.jobs.get
        while True:
            try:
                job = get(timeout=IDLE_SECONDS)
            except queue.Empty:
                try:  # retire, unless the loop handed it a job meanwhile (then that job comes next)
                    loop.call_soon_threadsafe(pool.retire, self)
                except RuntimeError:  # the loop is closed
                    return
                continue
            if job is None:
                return
            context, fn, args, future, limiter = job
            result: Any = None
            error: BaseException | None = None
            if not future.cancelled():  # a caller cancelled before the call started: not called
                try:
                    result = context.run(fn, *args)
                except BaseException as exc:  # handed to the caller, as anyio's threads do
                    error = exc
            try:
                loop.call_soon_threadsafe(pool.report, self, future, limiter, result, error)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                return
            del job, context, fn, args, future, limiter, result, error


class _Threads:
    """The worker threads of one asyncio loop: idle ones, most recently used last."""

    __slots__ = ("default_limiter", "idle", "loop", "token")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.token = anyio.lowlevel.current_token()
        self.default_limiter = anyio.to_thread.current_default_thread_limiter()
        self.idle: deque[_Thread] = deque()

    def report(
        self,
        thread: _Thread,
        future: asyncio.Future[Any],
        limiter: CapacityLimiter,
        result: Any,
        error: BaseException | None,
    ) -> None:
        """On the loop: a job is done; its thread is idle again and its token given back."""
        self.idle.append(thread)
        limiter.release_on_behalf_of(future)
        if future.done():  # the caller was cancelled: what the function returned is dropped
            return
        if error is None:
            future.set_result(result)
        elif isinstance(error, StopIteration):  # a future cannot carry it
            failure = RuntimeError("the function raised StopIteration")
            failure.__cause__ = error
            future.set_exception(failure)
        else:
            future.set_exception(error)

    def retire(self, thread: _Thread) -> None:
        """On the loop: an idle thread asked to end; it may, unless a job was handed to it meanwhile."""
        try:
            self.idle.remove(thread)
        except ValueError:
            return
        thread.jobs.put(None)

    def close(self) -> None:
        """The loop is closed: its idle threads end now."""
        while self.idle:
            self.idle.pop().jobs.put(None)


_pools: dict[asyncio.AbstractEventLoop, _Threads] = {}
_last: _Threads | None = None


def _threads_of(loop: asyncio.AbstractEventLoop) -> _Threads:
    global _last  # noqa: PLW0603 - the one-entry cache in front of the loops' pools
    pool = _pools.get(loop)
    if pool is None:
        for old in [old for old in _pools if old.is_closed()]:
            _pools.pop(old).close()
        pool = _pools[loop] = _Threads(loop)
    _last = pool
    return pool


def run_in_thread(fn: Callable[..., T], *args: Any, limiter: CapacityLimiter | None = None) -> Awaitable[T]:
    """`fn(*args)` in a worker thread, bounded by `limiter` (None: anyio's default limiter), with
    the caller's context variables; what to await for its result (see the module's docstring)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio
        loop = None
    if loop is None or _anyio_thread is None:
        return anyio.to_thread.run_sync(fn, *args, limiter=limiter)
    pool = _last
    if pool is None or pool.loop is not loop:
        pool = _threads_of(loop)
    return _hand_off(pool, fn, args, limiter if limiter is not None else pool.default_limiter)


async def _hand_off(pool: _Threads, fn: Callable[..., T], args: tuple[Any, ...], limiter: CapacityLimiter) -> T:
    future: asyncio.Future[T] = pool.loop.create_future()
    try:
        limiter.acquire_on_behalf_of_nowait(future)
    except anyio.WouldBlock:
        await limiter.acquire_on_behalf_of(future)
    try:
        thread = pool.idle.pop() if pool.idle else _Thread(pool)
    except BaseException:
        limiter.release_on_behalf_of(future)
        raise
    thread.jobs.put((contextvars.copy_context(), fn, args, future, limiter))
    return await future
