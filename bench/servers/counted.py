"""Event loops that count what a server's loop does, for `bench_http.py --syscalls`: loop turns
(asyncio: `_run_once`; uvloop has no hook, its turns are its `epoll_wait` calls), callbacks
scheduled to run soon, timers armed (and how many of them were cancelled), tasks created, and on
asyncio the socket transports' writes and the selector's waits (blocking or not).

uvicorn takes a loop factory by import name (`--loop counted:asyncio_loop`, with `--app-dir
bench/servers`). The counts are written as JSON to the file named by `MCPGEN_COUNTS` whenever the
process gets SIGUSR1; the benchmark reads them before and after a run and divides the difference
by the calls.
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
from collections import Counter
from typing import Any

COUNTS: Counter[str] = Counter()


def _dump(*_: Any) -> None:
    path = os.environ.get("MCPGEN_COUNTS")
    if path:
        with open(path + ".part", "w") as out:
            json.dump(COUNTS, out)
        os.replace(path + ".part", path)


signal.signal(signal.SIGUSR1, _dump)


class _Counting:
    """The loop methods counted, mixed in front of a loop class."""

    def call_soon(self, callback: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS["call_soon"] += 1
        return super().call_soon(callback, *args, **kwargs)  # type: ignore[misc]

    _arming = False  # (asyncio's call_later calls call_at, uvloop's call_at calls call_later: counted once)

    def _timer(self, arm: Any, at: float, callback: Any, args: Any, kwargs: Any) -> Any:
        """`arm` (the loop's own call_later or call_at) counted as one timer, however the loop
        implements one through the other."""
        if not self._arming:
            COUNTS["timers"] += 1
        arming, self._arming = self._arming, True
        try:
            return arm(at, callback, *args, **kwargs)
        finally:
            self._arming = arming

    def call_later(self, delay: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        return self._timer(super().call_later, delay, callback, args, kwargs)  # type: ignore[misc]

    def call_at(self, when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        return self._timer(super().call_at, when, callback, args, kwargs)  # type: ignore[misc]

    def create_task(self, coro: Any, **kwargs: Any) -> Any:
        COUNTS["tasks"] += 1
        return super().create_task(coro, **kwargs)  # type: ignore[misc]


def _count_cancellations() -> None:
    """asyncio's timer handles count their cancellations (uvloop's are its own: not counted)."""
    cancel = asyncio.TimerHandle.cancel

    def counted(self: asyncio.TimerHandle) -> None:
        if not self.cancelled():
            COUNTS["timers cancelled"] += 1
        cancel(self)

    asyncio.TimerHandle.cancel = counted  # type: ignore[method-assign]


class _Selector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    def select(self, timeout: float | None = None) -> Any:
        COUNTS["waits, blocking" if timeout is None or timeout > 0 else "waits, non-blocking"] += 1
        return super().select(timeout)


class _AsyncioLoop(_Counting, asyncio.SelectorEventLoop):
    def _run_once(self) -> None:
        COUNTS["loop turns"] += 1
        super()._run_once()  # type: ignore[misc]


def _count_writes() -> None:
    from asyncio import selector_events

    transport = selector_events._SelectorSocketTransport
    write = transport.write

    def counted(self: Any, data: Any) -> None:
        COUNTS["transport writes"] += 1
        write(self, data)

    transport.write = counted  # type: ignore[method-assign]


def asyncio_loop() -> asyncio.AbstractEventLoop:
    _count_writes()
    _count_cancellations()
    return _AsyncioLoop(_Selector())


def uvloop_loop() -> asyncio.AbstractEventLoop:
    import uvloop

    class Loop(_Counting, uvloop.Loop):  # type: ignore[misc]
        pass

    return Loop()
