"""Resumable SSE streams and POST reply routes of handshake-era (2025-11-25) HTTP sessions.

`SseStream` is one logical stream of a session: a POST's response stream, or the standalone GET
stream. Each event is stored (when there is an event store) and written to the HTTP response
attached to the stream, if any. A response can be detached (the client dropped, or the server
closed the connection to make the client poll) while the stream goes on; `GET` with
`Last-Event-ID` replays the stored events after that id and attaches the new response; when
those events are no longer all held, nothing is attached and the resumption is refused.

`PostRoute` is the reply route of one POSTed request: a JSON response when the answer comes
first, else an SSE stream (a priming event first: an id, `retry`, empty data) that carries the
request's notifications and the server's related requests (sampling, elicitation, roots), then
the response.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from ...core.transport import Outgoing, ReplyRoute
from .asgi import JSON, HttpResponse, sse_frame
from .events import EventStore


class SseStream:
    """One resumable stream: events in order, to the attached response (if any) and the store."""

    def __init__(self, stream_id: str, store: EventStore | None, retry_ms: int | None, *, ended: bool = False) -> None:
        self.id = stream_id
        self.store = store
        self.retry_ms = retry_ms
        self.ended = ended  # the last event was sent (a POST stream's response)
        self.lock = anyio.Lock()
        self.writer: HttpResponse | None = None
        self._released: anyio.Event | None = None  # set when the attached response is done with
        self.on_end: Callable[[SseStream], None] | None = None  # told once, when the stream ends

    @property
    def attached(self) -> bool:
        return self.writer is not None and self.writer.open

    async def attach(self, exchange: HttpResponse, released: anyio.Event, after: str | None = None) -> bool:
        """Attach a response: priming event first (or, resuming, the events after `after`). False,
        with nothing sent, when the events after `after` are no longer all held: the caller refuses
        the resumption rather than go on with a gap the client would never see."""
        async with self.lock:
            replayed: list[tuple[str, bytes]] = []
            if after is not None:
                found = await self.store.replay(after) if self.store is not None else None
                if found is None:
                    return False
                replayed = found[1]
            self._release()
            if not exchange.started:
                await exchange.start_sse()
            if after is None:
                event_id = await self.store.store(self.id, None) if self.store is not None else None
                if event_id is not None or self.retry_ms is not None:
                    await exchange.chunk(sse_frame(None, event_id, self.retry_ms))
            for event_id, data in replayed:
                await exchange.chunk(sse_frame(data, event_id))
            self.writer, self._released = exchange, released
            if self.ended:
                await exchange.end()
                self._release()
            return True

    async def emit(self, data: bytes, *, last: bool = False) -> None:
        async with self.lock:
            if self.ended:
                return
            event_id = await self.store.store(self.id, data) if self.store is not None else None
            if self.writer is not None:
                await self.writer.chunk(sse_frame(data, event_id))
            if last:
                self._ended()
                if self.writer is not None:
                    await self.writer.end()
                self._release()

    async def keepalive(self) -> None:
        async with self.lock:
            if self.writer is not None:
                await self.writer.comment()

    async def close_connection(self) -> None:
        """End the attached response without ending the stream (the client resumes with GET)."""
        async with self.lock:
            if self.writer is not None:
                await self.writer.end()
            self._release()

    def detach(self, exchange: HttpResponse) -> None:
        """The client of `exchange` went away: later events are only stored."""
        if self.writer is exchange:
            self._release()

    def end_now(self) -> None:
        """The stream ends without more events (its request was cancelled, the session closed)."""
        self._ended()
        self._release()

    def _ended(self) -> None:
        if not self.ended:
            self.ended = True
            if self.on_end is not None:
                self.on_end(self)

    def _release(self) -> None:
        if self._released is not None:
            self._released.set()
        self.writer, self._released = None, None


class PostRoute(ReplyRoute):
    """The reply route of one POSTed request of a handshake-era session."""

    def __init__(
        self,
        exchange: HttpResponse,
        new_stream: Callable[[], SseStream],
        on_final: Callable[[Outgoing], None] | None = None,
    ) -> None:
        self.exchange = exchange
        self.stream: SseStream | None = None
        self.final_sent = False
        self._new_stream = new_stream
        self._on_final = on_final
        self._done = False  # the POST's response is complete (or was detached)
        self._released: anyio.Event | None = None  # made when someone waits for that (most never do)
        self._locked: anyio.Lock | None = None  # made when first needed

    @property
    def released(self) -> anyio.Event:
        """Set when the POST's response is complete (or was detached)."""
        if self._released is None:
            self._released = anyio.Event()
            if self._done:
                self._released.set()
        return self._released

    def is_released(self) -> bool:
        return self._done or (self._released is not None and self._released.is_set())

    def _release(self) -> None:
        self._done = True
        if self._released is not None:
            self._released.set()

    @property
    def _lock(self) -> anyio.Lock:
        if self._locked is None:
            self._locked = anyio.Lock(fast_acquire=True)  # uncontended: no trip through the event loop
        return self._locked

    async def send(self, item: Outgoing, *, final: bool) -> None:
        free = self._locked is None or not self._locked.locked()
        if final and free and self.stream is None and not self.final_sent:
            # The common answer: one JSON response. Marked sent before anything is awaited, so a
            # keep-alive or a close coming meanwhile finds the request answered.
            self.final_sent = True
            if self._on_final is not None:
                self._on_final(item)
            await self.exchange.respond(200, item.data, JSON)
            self._release()
            return
        async with self._lock:
            if self.final_sent:
                return
            if final:
                self.final_sent = True
                if self._on_final is not None:
                    self._on_final(item)
            if self.stream is None:
                if final:
                    await self.exchange.respond(200, item.data, JSON)
                    self._release()
                    return
                await self._open_stream()
            assert self.stream is not None
            await self.stream.emit(item.data, last=final)

    async def _open_stream(self) -> None:
        self.stream = self._new_stream()
        await self.stream.attach(self.exchange, self.released)

    async def keepalive(self) -> None:
        """The request is quiet: commit to SSE (so the response can be kept alive) and ping."""
        async with self._lock:
            if self.final_sent or self.is_released():
                return
            if self.stream is None:
                await self._open_stream()
                return
            stream = self.stream
        await stream.keepalive()

    async def close_connection(self) -> bool:
        """Close the POST's connection before the response (SSE polling); the client resumes the
        stream with GET + `Last-Event-ID` after the `retry` interval of the priming event."""
        async with self._lock:
            if self.final_sent:
                return False
            if self.stream is None:
                await self._open_stream()
            stream = self.stream
        assert stream is not None
        await stream.close_connection()
        return True

    async def finish(self, completed: bool) -> None:
        """The POST's task is done waiting: `completed` (the response is over) or the client left
        (the stream goes on, resumable)."""
        if completed and self.exchange.finished:
            return  # answered in full: nothing to end
        async with self._lock:
            if not completed:
                if self.stream is not None:
                    self.stream.detach(self.exchange)
                return
            if not self.exchange.started:  # cancelled before anything was sent: an empty stream
                await self.exchange.start_sse()
            await self.exchange.end()

    async def refuse_ended(self, error: Outgoing) -> None:
        """The session ended before serving the request (a DELETE while it waited for room): the
        404 of a POST coming after the end."""
        async with self._lock:
            if self.final_sent:
                return
            self.final_sent = True
            await self.exchange.respond(404, error.data, JSON)
            self._release()

    def request_ended(self) -> None:
        """Called by the session when the request's handler is done: a request that ended with
        no response (cancelled) ends its stream, and the POST's response with it."""
        if self.final_sent:
            return
        self.final_sent = True
        if self.stream is not None:
            self.stream.end_now()
        self._release()
