"""Plain `def` handlers run in worker threads: a blocking one never holds up another request.

Each test blocks a handler on a `threading` primitive that only the test (or a second handler)
releases, and makes a second call meanwhile. Were the blocking handler on the event loop, the
second call could not be answered and the primitive would time out: the test would fail, not hang.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcpgen.runtime import Client, Server, ServerLimits
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]
WAIT = 30.0  # how long a blocked handler waits for its release before giving up (a failure path only)


class Gate:
    """A handler that blocks its worker thread until the test releases it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def block(self) -> str:
        self.entered.set()
        return "released" if self.released.wait(WAIT) else "never released"

    async def wait_entered(self) -> None:
        assert await anyio.to_thread.run_sync(self.entered.wait, WAIT), "the blocking handler never started"


def make_server(gate: Gate, **options: Any) -> Server:
    server = Server("threads", **options)

    @server.tool()
    def blocking() -> str:
        return gate.block()

    @server.tool()
    def quick() -> str:
        return "quick"

    @server.prompt()
    def slow_prompt() -> str:
        return gate.block()

    @server.resource("mem://slow")
    def slow_resource() -> str:
        return gate.block()

    @server.completion
    def complete(ref: object, argument: object, context: object) -> list[str]:
        return [gate.block()]

    return server


async def text_of(call: Awaitable[Any]) -> str:
    result = await call
    if hasattr(result, "content"):
        return str(result.content[0].text)
    if hasattr(result, "messages"):
        return str(result.messages[0].content.text)
    if hasattr(result, "contents"):
        return str(result.contents[0].text)
    return str(result.completion.values[0])


BLOCKING: dict[str, Callable[[Client], Awaitable[Any]]] = {
    "tool": lambda client: client.call_tool("blocking"),
    "prompt": lambda client: client.get_prompt("slow_prompt"),
    "resource": lambda client: client.read_resource("mem://slow"),
    "completion": lambda client: client.complete(
        {"type": "ref/prompt", "name": "slow_prompt"}, {"name": "x", "value": ""}
    ),
}


@pytest.mark.parametrize("kind", sorted(BLOCKING))
@pytest.mark.parametrize("mode", MODES)
async def test_a_blocking_handler_does_not_hold_up_another_call(mode: str, kind: str) -> None:
    gate = Gate()
    async with connected(make_server(gate), mode=mode) as client:
        found: dict[str, str] = {}

        async def slow() -> None:
            found["slow"] = await text_of(BLOCKING[kind](client))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await gate.wait_entered()
            found["quick"] = await text_of(client.call_tool("quick"))  # answered while the other blocks
            assert not gate.released.is_set()
            gate.released.set()
    assert found == {"quick": "quick", "slow": "released"}


@pytest.mark.parametrize("mode", MODES)
async def test_two_blocking_tools_run_at_the_same_time(mode: str) -> None:
    both = threading.Barrier(2, timeout=WAIT)  # passes only when both tools are in it at once
    server = Server("threads")

    @server.tool()
    def meet(who: str) -> str:
        both.wait()
        return who

    async with connected(server, mode=mode) as client:
        found: list[str] = []

        async def call(who: str) -> None:
            found.append((await client.call_tool("meet", {"who": who})).content[0].text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a")
            tg.start_soon(call, "b")
    assert sorted(found) == ["a", "b"]


async def test_async_handlers_stay_on_the_event_loop() -> None:
    server = Server("threads")
    seen: dict[str, int] = {}

    @server.tool()
    async def where() -> str:
        seen["async"] = threading.get_ident()
        return "ok"

    @server.tool()
    def where_sync() -> str:
        seen["sync"] = threading.get_ident()
        return "ok"

    async with connected(server, mode="auto") as client:
        await client.call_tool("where")
        await client.call_tool("where_sync")
    assert seen["async"] == threading.get_ident(), "an async def runs on the loop's thread"
    assert seen["sync"] != threading.get_ident(), "a plain def runs in a worker thread"


async def test_worker_threads_bounds_how_many_plain_handlers_run_at_once() -> None:
    gate = Gate()
    second = threading.Event()
    server = make_server(gate, limits=ServerLimits(worker_threads=1))

    @server.tool()
    def other() -> str:
        second.set()
        return "other"

    async with connected(server, mode="auto") as client:
        found: dict[str, str] = {}

        async def run(name: str) -> None:
            found[name] = (await client.call_tool(name)).content[0].text

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "blocking")
            await gate.wait_entered()
            tg.start_soon(run, "other")
            limiter = server.thread_limiter()
            assert limiter is not None and limiter.total_tokens == 1
            with anyio.fail_after(WAIT):
                while limiter.statistics().tasks_waiting == 0:  # "other" queues for the one thread
                    await anyio.sleep(0.01)
            assert not second.is_set(), "the second plain handler waits for the only worker thread"
            gate.released.set()
    assert found == {"blocking": "released", "other": "other"}
    assert second.is_set()


async def test_worker_threads_must_be_positive() -> None:
    with pytest.raises(ValueError, match="worker_threads"):
        ServerLimits(worker_threads=0)


@pytest.mark.parametrize("mode", MODES)
async def test_a_plain_handler_may_change_the_server(mode: str) -> None:
    """Registration from a worker thread reaches the clients through the event loop."""
    server = Server("threads")

    @server.tool()
    def register() -> str:
        server.add_tool(lambda: "new", name="fresh")
        return "registered"

    async with connected(server, mode=mode) as client, client.listen(tools=True) as changes:
        assert (await client.call_tool("register")).content[0].text == "registered"
        event = await changes.next(timeout=WAIT)
        assert event.kind == "tools"
        assert (await client.call_tool("fresh")).content[0].text == "new"
