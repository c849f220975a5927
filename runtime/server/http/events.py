"""Event stores: what makes a handshake-era SSE stream resumable after a dropped connection.

Every event the server sends on a stream of a handshake-era session (a POST's response stream or
the standalone GET stream) is stored under that stream and given an id. A client that lost the
connection sends `GET` with `Last-Event-ID`; the server replays that stream's later events and
goes on with it. Ids are `<stream>#<n>`, so an id names its stream (and a stream names its
session: the server refuses ids of another session's streams). The modern era has no
resumption: a broken stream loses its request, which the client sends again.

`EventStore` is the interface (plug in a shared store for several processes); `MemoryEventStore`
keeps the last `max_events` events of the process.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Protocol


class EventStore(Protocol):
    """Where the events of resumable streams are kept."""

    async def store(self, stream: str, data: bytes | None) -> str:
        """Keep one event (`None`: a priming event, which has no message) and return its id."""
        ...

    async def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream `last_event_id` belongs to and its events after it (id, message; priming
        events left out), or None when the id is unknown."""
        ...

    async def forget(self, prefix: str) -> None:
        """Drop every stream whose id starts with `prefix` (a session ended)."""
        ...


def stream_of(event_id: str) -> str:
    """The stream an event id names (the text before its last `#`)."""
    return event_id.rpartition("#")[0]


class MemoryEventStore:
    """Events in this process's memory: the most recent `max_events` of all streams."""

    def __init__(self, max_events: int = 10_000) -> None:
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.max_events = max_events
        self._counter = itertools.count(1)
        self._streams: dict[str, dict[int, bytes | None]] = {}
        self._order: deque[tuple[str, int]] = deque()  # may hold entries of forgotten streams
        self._size = 0

    def __len__(self) -> int:
        return self._size

    async def store(self, stream: str, data: bytes | None) -> str:
        number = next(self._counter)
        self._streams.setdefault(stream, {})[number] = data
        self._order.append((stream, number))
        self._size += 1
        while self._size > self.max_events:
            old_stream, old_number = self._order.popleft()
            events = self._streams.get(old_stream)
            if events is not None and events.pop(old_number, False) is not False:
                self._size -= 1
                if not events:
                    del self._streams[old_stream]
        if len(self._order) > 2 * self.max_events:  # drop the entries of forgotten streams
            self._order = deque(item for item in self._order if item[1] in self._streams.get(item[0], ()))
        return f"{stream}#{number}"

    async def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream, _, number_text = last_event_id.rpartition("#")
        events = self._streams.get(stream)
        if events is None or not number_text.isdigit() or int(number_text) not in events:
            return None
        after = int(number_text)
        return stream, [(f"{stream}#{n}", data) for n, data in events.items() if n > after and data is not None]

    async def forget(self, prefix: str) -> None:
        for stream in [s for s in self._streams if s.startswith(prefix)]:
            self._size -= len(self._streams.pop(stream))
        if not self._streams:
            self._order.clear()
