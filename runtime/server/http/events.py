"""Event stores: what makes a handshake-era SSE stream resumable after a dropped connection.

Every event the server sends on a stream of a handshake-era session (a POST's response stream or
the standalone GET stream) is stored under that stream and given an id. A client that lost the
connection sends `GET` with `Last-Event-ID`; the server replays that stream's later events and
goes on with it. Ids are `<stream>#<n>`, so an id names its stream (and a stream names its
session: the server refuses ids of another session's streams). The modern era has no
resumption: a broken stream loses its request, which the client sends again.

A resumption is never silently partial: a store replays only from an id it still holds (every
later event of that stream is then held too), and says None otherwise, which the server answers
with 410 (the spec lets a server refuse a resumption), so the client learns that events were lost.

`EventStore` is the interface (plug in a shared store for several processes); `MemoryEventStore`
keeps, in this process, the last `per_stream` events of each stream, for at most `max_streams`
streams (the streams written to least recently are dropped whole past that): at most
`per_stream * max_streams` events, and one busy stream never evicts another's.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from typing import Protocol


class EventStore(Protocol):
    """Where the events of resumable streams are kept."""

    async def store(self, stream: str, data: bytes | None) -> str:
        """Keep one event (`None`: a priming event, which has no message) and return its id."""
        ...

    async def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream `last_event_id` belongs to and its events after it (id, message; priming
        events left out); None when that id is not held (unknown, or dropped by a bound): the
        resumption is then refused, since the events after it can no longer all be replayed."""
        ...

    async def forget(self, prefix: str) -> None:
        """Drop every stream whose id starts with `prefix` (a session ended)."""
        ...


def stream_of(event_id: str) -> str:
    """The stream an event id names (the text before its last `#`)."""
    return event_id.rpartition("#")[0]


class MemoryEventStore:
    """Events in this process's memory: the last `per_stream` events of each stream, for at most
    `max_streams` streams (the least recently written are dropped whole past that)."""

    def __init__(self, per_stream: int = 1_000, max_streams: int = 10_000, *, max_events: int | None = None) -> None:
        if max_events is not None:
            warnings.warn(
                "MemoryEventStore(max_events=...) bounded every stream together, so one busy session evicted "
                "another's events; the bounds are now per_stream= (events of each stream) and max_streams=",
                DeprecationWarning,
                stacklevel=2,
            )
            per_stream = max_events
        if per_stream < 1 or max_streams < 1:
            raise ValueError("per_stream and max_streams must be at least 1")
        self.per_stream = per_stream
        self.max_streams = max_streams
        self._counter = itertools.count(1)
        self._streams: OrderedDict[str, dict[int, bytes | None]] = OrderedDict()  # least recently written first
        self._size = 0

    def __len__(self) -> int:
        return self._size

    async def store(self, stream: str, data: bytes | None) -> str:
        number = next(self._counter)
        events = self._streams.get(stream)
        if events is None:
            events = self._streams[stream] = {}
            while len(self._streams) > self.max_streams:
                _, dropped = self._streams.popitem(last=False)
                self._size -= len(dropped)
        else:
            self._streams.move_to_end(stream)
        events[number] = data
        self._size += 1
        if len(events) > self.per_stream:
            del events[next(iter(events))]  # the oldest of this stream (numbers only grow)
            self._size -= 1
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
