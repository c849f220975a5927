"""`run_in_thread` on asyncio and trio: the function runs in a worker thread with the caller's
context variables, its result or exception comes back, the limiter bounds how many run at once
(its token held until the thread is done, also when the caller was cancelled), and
`anyio.from_thread` works inside it. Blocking is on `threading` primitives released by the test,
so a wrong implementation fails (or times out on the primitive), never hangs. On trio the
hand-off is anyio's: the asyncio-only tests are about the lighter one."""

from __future__ import annotations

import contextvars
import threading

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from mcpgen.runtime.core import worker
from mcpgen.runtime.core.worker import run_in_thread

pytestmark = pytest.mark.anyio
WAIT = 30.0  # how long a blocked function waits for its release before giving up (a failure path only)
_who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def _released(event: threading.Event) -> str:
    return "released" if event.wait(WAIT) else "never released"


async def _until(condition: object) -> None:
    with anyio.fail_after(WAIT):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.001)


async def test_runs_in_another_thread_and_returns_its_result() -> None:
    def where(a: int, b: int) -> tuple[int, int]:
        return threading.get_ident(), a + b

    ident, total = await run_in_thread(where, 1, 2)
    assert total == 3
    assert ident != threading.get_ident()


async def test_the_exception_comes_back() -> None:
    def fail() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await run_in_thread(fail)


async def test_context_variables_are_the_callers() -> None:
    _who.set("caller")

    def read() -> str:
        found = _who.get()
        _who.set("thread")  # in a copy: the caller's value stays
        return found

    assert await run_in_thread(read) == "caller"
    assert _who.get() == "caller"


async def test_anyio_from_thread_reaches_the_loop() -> None:
    loop_thread = threading.get_ident()

    async def on_loop() -> int:
        return threading.get_ident()

    def hop_back() -> tuple[int, int]:
        return anyio.from_thread.run(on_loop), anyio.from_thread.run_sync(threading.get_ident)

    assert await run_in_thread(hop_back) == (loop_thread, loop_thread)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # trio: anyio's own hand-off
async def test_the_limiter_bounds_the_threads_and_its_token_outlives_a_cancelled_caller() -> None:
    limiter = anyio.CapacityLimiter(1)
    release = threading.Event()
    entered = threading.Event()
    second_ran = threading.Event()

    def block() -> str:
        entered.set()
        return _released(release)

    async def first() -> None:
        await run_in_thread(block, limiter=limiter)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            assert await anyio.to_thread.run_sync(entered.wait, WAIT)
            tg.cancel_scope.cancel()  # the caller gives up at once; the thread still runs `block`
        assert limiter.borrowed_tokens == 1, "the token is held while the thread runs"

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_in_thread(second_ran.set, limiter=limiter))
            await _until(lambda: limiter.statistics().tasks_waiting == 1)
            assert not second_ran.is_set(), "the second call waits for the only token"
            release.set()
    finally:
        release.set()
    assert second_ran.is_set()
    assert limiter.borrowed_tokens == 0


async def test_two_calls_run_at_the_same_time() -> None:
    both = threading.Barrier(2, timeout=WAIT)  # passes only when both are in it at once

    def meet(who: str) -> str:
        both.wait()
        return who

    found: list[str] = []

    async def call(who: str) -> None:
        found.append(await run_in_thread(meet, who))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "a")
        tg.start_soon(call, "b")
    assert sorted(found) == ["a", "b"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_idle_thread_retires_and_a_new_one_serves_the_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "IDLE_SECONDS", 0.01)
    first = await run_in_thread(threading.current_thread)
    await _until(lambda: not first.is_alive())
    second = await run_in_thread(threading.current_thread)
    assert second is not first and second.is_alive()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stop_iteration_is_a_runtime_error() -> None:
    def stop() -> None:
        raise StopIteration

    with pytest.raises(RuntimeError, match="StopIteration"):
        await run_in_thread(stop)
