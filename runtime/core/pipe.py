"""An in-process object pipe: the streams the transports and sessions pass messages through.

`pipe(buffer)` returns a connected (send, receive) pair with the semantics of anyio's memory
object streams (`send` waits while `buffer` items are queued; `EndOfStream` once the sending
side closed and the queue is drained, `ClosedResourceError` on a closed end, `BrokenResourceError`
for a sender whose receiver closed), with a cheaper path per message: a deque, and one waiter at
a time per side.

- Sending does not pass through the event loop when there is room: the item is queued and the
  waiting receiver (if any) woken.
- Receiving takes a queued item at once; only an empty queue waits. The end of the stream is
  reported after one turn of the loop (as anyio's streams do: what the last items started, such
  as the handlers of requests a client sent just before closing stdin, runs first).
- To stay fair to the other tasks of the loop, an end that sent or received `FAIR_TURNS` times in
  a row without waiting yields once (a peer flooding an unbounded pipe cannot starve the loop).
- On asyncio a wait is one loop future; on any other backend (trio) an `anyio.Event`. The
  backend is asked per wait, so a pipe made outside a running loop works on either.

Only one task receives at a time (the pipes here each have one reader); any number may send.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.lowlevel import checkpoint

T = TypeVar("T")
FAIR_TURNS = 64  # items a receiver takes without waiting before it lets other tasks run


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None on any other backend (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def new_waiter() -> Any:
    """A loop future on asyncio, else an `anyio.Event` (trio)."""
    loop = running_loop()
    return anyio.Event() if loop is None else loop.create_future()


def wake(waiter: Any) -> None:
    """Wake whoever waits on `waiter` (once; a waiter already woken or cancelled stays as it is)."""
    if isinstance(waiter, asyncio.Future):
        if not waiter.done():
            waiter.set_result(None)
    else:
        waiter.set()


async def wait(waiter: Any) -> None:
    """Wait until `waiter` is woken."""
    if isinstance(waiter, asyncio.Future):
        await waiter
    else:
        await waiter.wait()


class _State(Generic[T]):
    __slots__ = ("buffer", "items", "receiver", "receiver_closed", "sender_closed", "senders")

    def __init__(self, buffer: float) -> None:
        self.buffer = buffer
        self.items: deque[T] = deque()
        self.receiver: Any = None  # the waiter of the receiving task, while it waits
        self.senders: deque[Any] = deque()  # waiters of senders waiting for room
        self.sender_closed = False
        self.receiver_closed = False


class PipeSend(ObjectSendStream[T]):
    """The sending end of a `pipe`."""

    __slots__ = ("_closed", "_ready", "_state")

    def __init__(self, state: _State[T]) -> None:
        self._state = state
        self._closed = False
        self._ready = 0  # items sent in a row without waiting

    def send_nowait(self, item: T) -> None:
        """Queue `item` without waiting (`anyio.WouldBlock` when the buffer is full)."""
        state = self._state
        if self._closed:
            raise anyio.ClosedResourceError
        if state.receiver_closed:
            raise anyio.BrokenResourceError
        if len(state.items) >= state.buffer and state.receiver is None:
            raise anyio.WouldBlock
        state.items.append(item)
        waiter = state.receiver
        if waiter is not None:
            state.receiver = None
            wake(waiter)

    async def send(self, item: T) -> None:
        if self._ready >= FAIR_TURNS:  # before sending: a cancellation here sends nothing
            self._ready = 0
            await checkpoint()
        state = self._state
        while True:
            try:
                self.send_nowait(item)
            except anyio.WouldBlock:
                pass
            else:
                self._ready += 1
                return
            self._ready = 0
            waiter = new_waiter()
            state.senders.append(waiter)
            try:
                await wait(waiter)
            finally:
                state.senders.remove(waiter)
                if state.senders and (len(state.items) < state.buffer or state.receiver_closed or self._closed):
                    wake(state.senders[0])  # a wake this sender took but did not use goes to the next one

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        state = self._state
        state.sender_closed = True
        waiter = state.receiver
        if waiter is not None:
            state.receiver = None
            wake(waiter)
        for waiter in state.senders:  # sends waiting for room on this end fail as closed
            wake(waiter)

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> PipeSend[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PipeReceive(ObjectReceiveStream[T]):
    """The receiving end of a `pipe`."""

    __slots__ = ("_closed", "_ready", "_state")

    def __init__(self, state: _State[T]) -> None:
        self._state = state
        self._closed = False
        self._ready = 0  # items taken in a row without waiting

    def receive_nowait(self) -> T:
        """Take the next item without waiting (`anyio.WouldBlock` when none is queued)."""
        state = self._state
        if self._closed:
            raise anyio.ClosedResourceError
        if state.items:
            item = state.items.popleft()
            if state.senders:
                wake(state.senders[0])
            return item
        if state.sender_closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> T:
        state = self._state
        if state.items and not self._closed:
            self._ready += 1
            if self._ready >= FAIR_TURNS:
                self._ready = 0
                await checkpoint()
        elif state.sender_closed:
            await checkpoint()  # the end, as anyio reports it: after the other tasks had a turn
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                pass
            self._ready = 0
            waiter = new_waiter()
            state.receiver = waiter
            try:
                await wait(waiter)
            finally:
                if state.receiver is waiter:
                    state.receiver = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        state = self._state
        state.receiver_closed = True
        state.items.clear()
        for waiter in state.senders:
            wake(waiter)

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> PipeReceive[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pipe(buffer: float = math.inf) -> tuple[PipeSend[Any], PipeReceive[Any]]:
    """A connected (send, receive) pair; `send` waits while `buffer` items are queued."""
    state: _State[Any] = _State(buffer)
    return PipeSend(state), PipeReceive(state)
