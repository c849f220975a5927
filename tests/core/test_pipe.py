"""The in-process object pipe behind the memory and stdio transports, on asyncio and trio: the
stream contract of anyio's memory streams (order, end of stream, closed and broken ends,
back-pressure, cancellation) and fairness to the other tasks of the loop."""

from __future__ import annotations

import anyio
import pytest
from mcpgen.runtime.core.pipe import COMPACT_AT, FAIR_TURNS, pipe

pytestmark = pytest.mark.anyio


async def test_items_arrive_in_order_then_end_of_stream() -> None:
    send, receive = pipe()
    for n in range(5):
        await send.send(n)
    await send.aclose()
    assert [item async for item in receive] == [0, 1, 2, 3, 4]
    with pytest.raises(anyio.EndOfStream):
        await receive.receive()


async def test_a_waiting_receiver_is_woken_by_a_send() -> None:
    send, receive = pipe()
    got: list[str] = []

    async def reader() -> None:
        got.append(await receive.receive())

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        await send.send("hello")
    assert got == ["hello"]


async def test_closing_the_sender_wakes_a_waiting_receiver_with_end_of_stream() -> None:
    send, receive = pipe()
    ended = anyio.Event()

    async def reader() -> None:
        with pytest.raises(anyio.EndOfStream):
            await receive.receive()
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        await send.aclose()
    assert ended.is_set()


async def test_closed_ends_refuse_and_a_closed_receiver_breaks_the_sender() -> None:
    send, receive = pipe()
    await send.send(1)
    await receive.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await receive.receive()
    with pytest.raises(anyio.BrokenResourceError):
        await send.send(2)
    await send.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await send.send(3)
    with pytest.raises(anyio.ClosedResourceError):
        send.send_nowait(3)


async def test_a_bounded_pipe_holds_the_sender_until_there_is_room() -> None:
    send, receive = pipe(2)
    sent: list[int] = []

    async def writer() -> None:
        for n in range(4):
            await send.send(n)
            sent.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.wait_all_tasks_blocked()
        assert sent == [0, 1]  # the third waits for room
        with pytest.raises(anyio.WouldBlock):
            send.send_nowait(9)
        assert await receive.receive() == 0
        await anyio.wait_all_tasks_blocked()
        assert sent == [0, 1, 2]
        assert [await receive.receive() for _ in range(3)] == [1, 2, 3]
    assert sent == [0, 1, 2, 3]


async def test_a_sender_waiting_for_room_fails_when_the_receiver_closes() -> None:
    send, receive = pipe(1)
    await send.send(0)
    failed = anyio.Event()

    async def writer() -> None:
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(1)
        failed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.wait_all_tasks_blocked()
        await receive.aclose()
    assert failed.is_set()


async def test_a_sender_waiting_for_room_fails_when_its_own_end_closes() -> None:
    send, receive = pipe(1)
    await send.send(0)
    failed = anyio.Event()

    async def writer() -> None:
        with pytest.raises(anyio.ClosedResourceError):
            await send.send(1)
        failed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.wait_all_tasks_blocked()
        await send.aclose()
    assert failed.is_set()
    assert await receive.receive() == 0  # what was queued before the close is still delivered


async def test_cancelled_waits_leave_the_pipe_usable() -> None:
    send, receive = pipe(1)
    with anyio.move_on_after(0.01) as scope:
        await receive.receive()
    assert scope.cancelled_caught
    await send.send("a")
    with anyio.move_on_after(0.01) as scope:
        await send.send("b")  # no room: cancelled while waiting
    assert scope.cancelled_caught
    assert await receive.receive() == "a"
    await send.send("c")
    assert await receive.receive() == "c"


async def test_a_receiver_with_items_ready_lets_other_tasks_run() -> None:
    send, receive = pipe()
    for n in range(FAIR_TURNS * 4):
        send.send_nowait(n)
    others = 0
    done = False
    started = anyio.Event()

    async def other() -> None:
        nonlocal others
        started.set()
        while not done:
            others += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        await started.wait()  # (the other task never blocks: wait_all_tasks_blocked would not return)
        before = others
        for _ in range(FAIR_TURNS * 4):
            await receive.receive()
        during = others - before
        done = True
    assert during >= 2  # the other task ran while the items were taken, not only afterwards


async def test_a_wake_a_cancelled_sender_did_not_use_passes_to_the_next_sender() -> None:
    send, receive = pipe(1)
    send.send_nowait("queued")
    a_scope = anyio.CancelScope()

    async def sender(item: str, scope: anyio.CancelScope) -> None:
        with scope:
            await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sender, "a", a_scope)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(sender, "b", anyio.CancelScope())
        await anyio.wait_all_tasks_blocked()
        a_scope.cancel()  # the first waiting sender is cancelled, and before it runs ...
        assert receive.receive_nowait() == "queued"  # ... room for one wakes it (the first in line)
        got: list[str] = []
        while "b" not in got:  # WouldBlock (a failure, not a hang) if the other sender was left waiting
            await anyio.wait_all_tasks_blocked()
            got.append(receive.receive_nowait())
    assert got == ["b"]


async def test_a_sender_with_room_lets_other_tasks_run() -> None:
    send, receive = pipe()
    others = 0
    done = False
    started = anyio.Event()

    async def other() -> None:
        nonlocal others
        started.set()
        while not done:
            others += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        await started.wait()  # (the other task never blocks: wait_all_tasks_blocked would not return)
        before = others
        for n in range(FAIR_TURNS * 4):
            await send.send(n)
        during = others - before
        done = True
    assert during >= 2
    assert [receive.receive_nowait() for _ in range(FAIR_TURNS * 4)] == list(range(FAIR_TURNS * 4))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # trio runs one turn's tasks in random order
async def test_the_end_is_reported_after_what_the_last_item_started_had_a_turn(anyio_backend: str) -> None:
    send, receive = pipe()
    send.send_nowait("last request")
    send.close()
    ran: list[str] = []

    async def handler() -> None:
        ran.append("handled")

    async with anyio.create_task_group() as tg:
        assert await receive.receive() == "last request"
        tg.start_soon(handler)
        with pytest.raises(anyio.EndOfStream):
            await receive.receive()
        assert ran == ["handled"]


async def test_a_long_queue_read_while_it_grows_keeps_its_order() -> None:
    """The queue drops what was taken from its front in steps (`COMPACT_AT`): the order holds
    across them, with items sent between the reads."""
    send, receive = pipe()
    total = 3 * COMPACT_AT + 7
    sent = 0
    got: list[int] = []
    while sent < total:
        for _ in range(min(COMPACT_AT // 2 + 3, total - sent)):
            send.send_nowait(sent)
            sent += 1
        for _ in range(COMPACT_AT // 3):
            got.append(receive.receive_nowait())
    send.close()
    got += [item async for item in receive]
    assert got == list(range(total))


async def test_a_drained_pipe_holds_no_queue() -> None:
    """What an idle connection costs: a pipe whose items were all taken keeps no storage for them,
    and no list of waiting senders until one waited."""
    send, receive = pipe(1)
    state = send._state
    assert state.senders is None
    await send.send("a")
    async with anyio.create_task_group() as tg:
        tg.start_soon(send.send, "b")  # waits for room
        await anyio.wait_all_tasks_blocked()
        assert state.senders is not None and len(state.senders) == 1
        assert await receive.receive() == "a"
    assert await receive.receive() == "b"
    assert state.items == [] and state.head == 0 and state.senders == []
