"""Change signals per task: a waiter takes the current signal, reads the store, and waits for the
signal to fire (every change of the task fires it, in this process or, through the store, in
another). Taking the signal before reading means no change between the two is missed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio


class Signals:
    """One `anyio.Event` per watched task, replaced by a fresh one each time it fires."""

    def __init__(self) -> None:
        self._events: dict[str, anyio.Event] = {}
        self._watchers: dict[str, int] = {}

    def fire(self, key: str) -> None:
        event = self._events.pop(key, None)
        if event is not None:
            event.set()

    @contextmanager
    def watching(self, key: str) -> Iterator[Callable[[], anyio.Event]]:
        """While the block runs, `current()` is the signal of the next change of `key`."""
        self._watchers[key] = self._watchers.get(key, 0) + 1

        def current() -> anyio.Event:
            event = self._events.get(key)
            if event is None:
                event = self._events[key] = anyio.Event()
            return event

        try:
            yield current
        finally:
            left = self._watchers[key] - 1
            if left:
                self._watchers[key] = left
            else:
                del self._watchers[key]
                self._events.pop(key, None)
