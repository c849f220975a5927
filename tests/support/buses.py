"""A change bus stopped and run again: shared by the Redis bus tests (a real server, a stand-in)."""

from __future__ import annotations

import anyio
from mcpgen.runtime.protocol.changes import Change
from mcpgen.runtime.server.redis_bus import RedisBus


async def stop_and_restart(here: RedisBus, there: RedisBus) -> None:
    """`here` publishes a change before it runs and one between a stop and a restart; `there`
    (running throughout) hears each once `here` runs, and nothing else."""
    heard: list[Change] = []
    arrived = [anyio.Event()]

    def deliver_there(change: Change) -> None:
        heard.append(change)
        arrived[0].set()

    async def heard_next() -> Change:
        with anyio.fail_after(10):  # a hang guard: each change arrives at once
            await arrived[0].wait()
        arrived[0] = anyio.Event()
        return heard[-1]

    here.publish(Change("tools"))  # before it runs
    async with anyio.create_task_group() as tg:
        await tg.start(there.run, deliver_there)
        for changed in (Change("tools"), Change("prompts")):
            async with anyio.create_task_group() as running:
                await running.start(here.run, heard.append)
                assert await heard_next() == changed
                running.cancel_scope.cancel()  # it stops
            here.publish(Change("prompts"))  # while it is stopped: published when it runs again
        tg.cancel_scope.cancel()
    assert heard == [Change("tools"), Change("prompts")]
