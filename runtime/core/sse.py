"""Server-Sent Events: an incremental parser of the `text/event-stream` format. Pure.

Bytes go in as they arrive, in chunks of any size; complete events come out. It follows the
event-stream interpretation rules of the HTML standard: lines end in CRLF, LF or CR (a CR at the
end of one chunk and an LF at the start of the next are one line end); a leading byte order mark
is dropped; lines starting with `:` are comments; `data` lines of one event are joined with LF;
`event` names the event type (`message` by default); `id` sets the stream's last event ID (unless
it contains NUL) and it stays set for later events; `retry` sets the reconnection time when it is
all ASCII digits; unknown fields are ignored; a blank line dispatches the event, and an event with
no `data` line is not dispatched. What is left without a closing blank line at the end of the
stream is discarded.

One event never holds more than `limit` characters of data: a longer one comes out with only its
first `HEAD_CHARS` characters and `size_at_least` set, so a transport can report it and still read
the id of the message it carried.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

HEAD_CHARS = 1024
_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"
_FIELD_ROOM = 16  # room for a field name beyond the limit before a line counts as too long


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None  # the stream's last event ID when this event was dispatched
    size_at_least: int = 0  # nonzero: the event was over the limit and `data` is only its head


class SseParser:
    """Feed it bytes (`feed`), get events; `last_event_id` and `retry` (milliseconds) are the
    stream's state for reconnecting."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self.dispatched = 0  # events dispatched so far
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line = ""  # the incomplete last line
        self._line_size = 0  # nonzero: that line is over the limit (its size so far; only its head is kept)
        self._skip_lf = False  # the previous chunk ended in CR: an LF right after it ends nothing
        self._started = False
        self._data: list[str] = []
        self._size = 0
        self._over = False
        self._event = ""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by this chunk."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        if not text:
            return []
        self._skip_lf = text.endswith("\r")
        *complete, rest = _LINE_END.split(text)
        events: list[SseEvent] = []
        for i, line in enumerate(complete):
            if i == 0:
                pending, self._line = self._line, ""
                if self._line_size:
                    self._long_line(pending, self._line_size + len(line))
                    self._line_size = 0
                    continue
                line = pending + line
            event = self._line_done(line)
            if event is not None:
                events.append(event)
        self._pending(rest)
        return events

    def _pending(self, rest: str) -> None:
        """Keep the start of the line still being read (only its head once it is over the limit)."""
        if self._line_size:
            self._line_size += len(rest)
            return
        self._line += rest
        if self.limit is not None and len(self._line) > self.limit + _FIELD_ROOM:
            self._line_size = len(self._line)
            self._line = self._line[: HEAD_CHARS + _FIELD_ROOM]

    def _long_line(self, head: str, size: int) -> None:
        """A line over the limit ended: only a `data` line matters (the event becomes oversized)."""
        name, _, value = head.partition(":")
        if name == "data":
            self._over = True
            self._data = [("".join(self._data) + value.removeprefix(" "))[:HEAD_CHARS]]
            self._size += size

    def _line_done(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._add_data(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)
        return None

    def _add_data(self, value: str) -> None:
        """Append one `data` line."""
        self._size += len(value) + 1
        if self._over:
            return
        self._data.append(value)
        self._data.append("\n")
        if self.limit is not None and self._size > self.limit:
            self._over = True
            head = "".join(self._data)[:HEAD_CHARS]
            self._data = [head]

    def _dispatch(self) -> SseEvent | None:
        data, size, over, kind = self._data, self._size, self._over, self._event or "message"
        self._data, self._size, self._over, self._event = [], 0, False, ""
        if not data:
            return None
        self.dispatched += 1
        text = "".join(data)
        if over:
            return SseEvent(text, kind, self.last_event_id, size_at_least=size)
        return SseEvent(text[:-1] if text.endswith("\n") else text, kind, self.last_event_id)
