"""An in-process object pipe: the streams the transports and sessions pass messages through.

`pipe(buffer)` returns a connected (send, receive) pair with the semantics of anyio's memory
object streams (`send` waits while `buffer` items are queued; `EndOfStream` once the sending
side closed and the queue is drained, `ClosedResourceError` on a closed end, `BrokenResourceError`
for a sender whose receiver closed), with a cheaper path per message: a list read from its front,
and one waiter at a time per side.

- Sending does not pass through the event loop when there is room: the item is queued and the
  waiting receiver (if any) woken.
- An idle pipe holds no storage: the queue gives its storage back when it drains, and the list
  of senders waiting for room is made when the first one waits.
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
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.lowlevel import checkpoint

T = TypeVar("T")
FAIR_TURNS = 64  # items a receiver takes without waiting before it lets other tasks run
COMPACT_AT = 1024  # taken items a queue drops from its front at once (when they are half of it)


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
    """What the two ends share. Light while idle: the queue is a list read from `head` (emptied,
    with its storage, whenever it drains), and the senders' waiters a list made when one waits."""

    __slots__ = ("buffer", "head", "items", "receiver", "receiver_closed", "sender_closed", "senders")

    def __init__(self, buffer: float) -> None:
        self.buffer = buffer
        self.items: list[Any] = []  # queued items (T) from `head` on; taken ones are None
        self.head = 0
        self.receiver: Any = None  # the waiter of the receiving task, while it waits
        self.senders: list[Any] | None = None  # waiters of senders waiting for room (None: none yet)
        self.sender_closed = False
        self.receiver_closed = False

    def queued(self) -> int:
        return len(self.items) - self.head

    def clear(self) -> None:
        self.items.clear()
        self.head = 0

    def wake_sender(self) -> None:
        """Wake the first sender waiting for room, if any."""
        senders = self.senders
        if senders:
            wake(senders[0])


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
        if len(state.items) - state.head >= state.buffer and state.receiver is None:
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
            if state.senders is None:
                state.senders = []
            senders = state.senders
            senders.append(waiter)
            try:
                await wait(waiter)
            finally:
                senders.remove(waiter)
                if senders and (state.queued() < state.buffer or state.receiver_closed or self._closed):
                    wake(senders[0])  # a wake this sender took but did not use goes to the next one

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
        for waiter in state.senders or ():  # sends waiting for room on this end fail as closed
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
        items = state.items
        if items:
            head = state.head
            item: T = items[head]
            head += 1
            if head == len(items):
                items.clear()  # drained: the list gives its storage back
                head = 0
            elif head >= COMPACT_AT and head * 2 >= len(items):
                del items[:head]  # a long queue read from its front: drop what was taken
                head = 0
            else:
                items[head - 1] = None  # the taken item is not held
            state.head = head
            if state.senders:
                state.wake_sender()
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
        state.clear()
        for waiter in state.senders or ():
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
