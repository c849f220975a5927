"""The server's lifespan: entered once per process while the server serves, however it is served."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcpgen.runtime import Client, RequestContext, Server, stdio
from mcpgen.runtime.server.hooks import LifespanNotRunning
from support.live import live
from support.peers import connected
from support.processes import REPO, free_port, process, worker

pytestmark = pytest.mark.anyio
LIFESPAN_SERVER = REPO / "tests" / "support" / "lifespan_server.py"
MCPGEN = str(Path(sys.executable).parent / "mcpgen")


@dataclass
class Resources:
    opened: int = 0
    closed: int = 0
    events: list[str] = field(default_factory=list)


def make_server(resources: Resources) -> Server[Resources]:
    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[Resources]:
        resources.opened += 1
        resources.events.append("open")
        try:
            yield resources
        finally:
            resources.closed += 1
            resources.events.append("close")

    server = Server("lifespan", lifespan=lifespan)

    @server.tool()
    async def opened(ctx: RequestContext[Resources]) -> int:
        return ctx.lifespan.opened

    @server.tool()
    def opened_sync(ctx: RequestContext[Resources]) -> int:  # a worker thread reads it as well
        return ctx.lifespan.opened

    return server


async def test_memory_clients_share_one_lifespan() -> None:
    resources = Resources()
    server = make_server(resources)
    async with connected(server, mode="auto") as first:
        assert (await first.call_tool("opened")).structured_content == {"result": 1}
        async with connected(server, mode="handshake") as second:
            assert (await second.call_tool("opened_sync")).structured_content == {"result": 1}
        assert resources.events == ["open"], "the second connection joined the running lifespan"
        assert (await first.call_tool("opened")).structured_content == {"result": 1}
    with anyio.fail_after(10):
        while resources.events != ["open", "close"]:  # the first connection's task leaves it last
            await anyio.sleep(0.01)


async def test_the_first_holder_waits_for_the_others_before_stopping() -> None:
    resources = Resources()
    server = make_server(resources)
    async with anyio.create_task_group() as tg:
        first_in = anyio.Event()
        release_first = anyio.Event()

        async def first() -> None:
            async with server.running():
                first_in.set()
                await release_first.wait()
            resources.events.append("first out")

        tg.start_soon(first)
        await first_in.wait()
        async with server.running() as state:
            assert state is resources
            release_first.set()
            await anyio.sleep(0)
            assert server.state is resources, "still running while someone holds it"
    assert resources.events == ["open", "close", "first out"]
    with pytest.raises(LifespanNotRunning):
        _ = server.state


async def test_a_lifespan_that_fails_to_start_fails_serving() -> None:
    @asynccontextmanager
    async def broken(server: Server[Any]) -> AsyncIterator[None]:
        raise ConnectionRefusedError("the database is down")
        yield

    server: Server[None] = Server("broken", lifespan=broken)
    with pytest.raises(ConnectionRefusedError):
        async with server.running():
            pass
    assert not server.lifespan.running


async def test_without_a_lifespan_the_state_is_none() -> None:
    server = Server("plain")

    @server.tool()
    def state(ctx: RequestContext) -> str:
        return repr(ctx.lifespan)

    async with connected(server, mode="auto") as client:
        assert (await client.call_tool("state")).content[0].text == "None"


async def test_the_http_app_runs_the_lifespan_once_for_all_its_clients() -> None:
    resources = Resources()
    server = make_server(resources)
    async with live(server) as (url, stop):
        for mode in ("auto", "handshake", "auto"):
            async with Client(url, mode=mode) as client:
                assert (await client.call_tool("opened")).structured_content == {"result": 1}
        stop.set()
    assert resources.events == ["open", "close"]


def info_of(result: Any) -> dict[str, Any]:
    found: dict[str, Any] = result.structured_content
    return found


async def test_stdio_runs_the_lifespan_once_per_process() -> None:
    async with Client(stdio([sys.executable, str(LIFESPAN_SERVER)]), mode="auto") as client:
        for _ in range(3):
            info = info_of(await client.call_tool("lifespan_info"))
            assert info["starts"] == 1 and info["generation"] == 1 and info["open"] is True


async def check_http(url: str, calls: int = 4) -> set[int]:
    pids = set()
    for i in range(calls):
        async with Client(url, mode="auto" if i % 2 else "handshake") as client:
            info = info_of(await client.call_tool("lifespan_info"))
            assert info["starts"] == 1 and info["open"] is True, info
            pids.add(info["pid"])
    return pids


async def test_mcpgen_serve_runs_the_lifespan_once() -> None:
    port = free_port()
    with process([MCPGEN, "serve", f"{LIFESPAN_SERVER}:server", "--port", str(port)], "lifespan started 1"):
        assert len(await check_http(f"http://127.0.0.1:{port}/mcp")) == 1


async def test_run_http_runs_the_lifespan_once() -> None:
    port = free_port()
    with process([sys.executable, str(LIFESPAN_SERVER), "--http", str(port)], "Uvicorn running on"):
        assert len(await check_http(f"http://127.0.0.1:{port}/mcp")) == 1


async def test_the_worker_app_factory_runs_the_lifespan_once_per_worker() -> None:
    with worker(f"{LIFESPAN_SERVER}:server") as url:
        assert len(await check_http(url)) == 1
