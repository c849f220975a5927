"""Two server processes behind one deployment: sealed state opens anywhere, changes cross processes
through the Redis bus (and only through it). The rounds of a call are sent to alternating
processes on fresh connections: a deterministic round robin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcpgen.runtime.protocol.changes import Change
from mcpgen.runtime.server.bus import decode_change, encode_change
from support.asgi_driver import meta, modern_headers, request
from support.buses import stop_and_restart
from support.leaks import no_unclosed_streams
from support.processes import redis_server, worker

pytestmark = pytest.mark.anyio
TARGET = str(Path(__file__).resolve().parents[1] / "support" / "scaleout_server.py") + ":server"
KEYS = {"MCPGEN_STATE_KEYS": "a" * 64 + ",scale-out-old-key-still-accepted-for-rotation"}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def with_bus(redis_url: str) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        env = {**KEYS, "MCPGEN_REDIS_URL": redis_url}
        yield stack.enter_context(worker(TARGET, env)), stack.enter_context(worker(TARGET, env))


@pytest.fixture(scope="module")
def without_bus() -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        yield stack.enter_context(worker(TARGET, KEYS)), stack.enter_context(worker(TARGET, KEYS))


async def post(url: str, id: Any, method: str, params: dict[str, Any], name: str | None = None) -> httpx.Response:
    """One request on a fresh connection (nothing pins it to a process)."""
    body = request(id, method, {**params, "_meta": meta(caps={"elicitation": {}})})
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers={**HEADERS, **modern_headers(method, name)})


async def test_the_rounds_of_one_call_land_on_alternating_processes(with_bus: tuple[str, str]) -> None:
    a, b = with_bus
    answer = {"action": "accept", "content": {"ok": True}}
    params: dict[str, Any] = {"name": "rounds", "arguments": {}}
    first = (await post(a, 1, "tools/call", params, "rounds")).json()["result"]
    second = await post(
        b,
        2,
        "tools/call",
        {**params, "requestState": first["requestState"], "inputResponses": {"step1": answer}},
        "rounds",
    )
    state = second.json()["result"]["requestState"]
    third = await post(
        a, 3, "tools/call", {**params, "requestState": state, "inputResponses": {"step2": answer}}, "rounds"
    )
    pids = third.json()["result"]["content"][0]["text"].split(",")
    assert len(pids) == 3 and pids[0] == pids[2] != pids[1], "A, then B, then A"


async def test_a_tampered_state_is_refused_by_the_other_process(with_bus: tuple[str, str]) -> None:
    a, b = with_bus
    state = (await post(a, 1, "tools/call", {"name": "rounds", "arguments": {}}, "rounds")).json()["result"][
        "requestState"
    ]
    payload = state.split(".")
    payload[1] = payload[1][:-2] + ("AA" if payload[1][-2:] != "AA" else "BB")
    for forged in (state + "-TAMPERED", ".".join(payload)):
        params = {"name": "rounds", "arguments": {}, "requestState": forged, "inputResponses": {}}
        reply = await post(b, 2, "tools/call", params, "rounds")
        assert reply.status_code == 400 and reply.json()["error"]["code"] == -32602


async def listen_and_touch(listen_at: str, touches: list[tuple[str, str]]) -> str:
    """Open a listen stream at `listen_at` for the touched URIs, touch each (URL, URI) in turn once
    the stream is acknowledged, and return the URI of the first change the stream delivers."""
    uris = [uri for _, uri in touches]
    params = {"notifications": {"resourceSubscriptions": uris}, "_meta": meta()}
    async with httpx.AsyncClient(timeout=30) as http:
        headers = {**HEADERS, **modern_headers("subscriptions/listen")}
        async with http.stream(
            "POST", listen_at, json=request("L", "subscriptions/listen", params), headers=headers
        ) as stream:
            events = (
                json.loads(line[6:]) async for line in stream.aiter_lines() if line.startswith("data: ") and line[6:]
            )
            ack = await anext(events)
            assert ack["params"]["notifications"]["resourceSubscriptions"] == sorted(uris)
            for url, uri in touches:
                assert (
                    await post(url, 2, "tools/call", {"name": "touch", "arguments": {"uri": uri}}, "touch")
                ).status_code == 200
            with anyio.fail_after(30):
                change = await anext(events)
            assert change["method"] == "notifications/resources/updated"
            assert change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
            uri: str = change["params"]["uri"]
            return uri


async def test_a_listen_stream_hears_a_change_made_in_the_other_process_through_redis(
    with_bus: tuple[str, str],
) -> None:
    a, b = with_bus
    assert await listen_and_touch(a, [(b, "mem://from-b")]) == "mem://from-b"


async def test_without_a_bus_a_change_stays_in_its_process(without_bus: tuple[str, str]) -> None:
    a, b = without_bus
    # B's change is made first; A's own change after it is what A's stream delivers first.
    assert await listen_and_touch(a, [(b, "mem://from-b"), (a, "mem://from-a")]) == "mem://from-a"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # redis-py's client is asyncio-only
async def test_redis_buses_carry_changes_between_each_other_only(redis_url: str, anyio_backend: str) -> None:
    from mcpgen.runtime.server.redis_bus import RedisBus

    here, there = RedisBus(redis_url, "test-channel"), RedisBus(redis_url, "test-channel")
    got_here: list[Change] = []
    got_there: list[Change] = []
    arrived = anyio.Event()

    def deliver_there(change: Change) -> None:
        got_there.append(change)
        arrived.set()

    async with anyio.create_task_group() as tg:
        await tg.start(here.run, got_here.append)
        await tg.start(there.run, deliver_there)
        here.publish(Change("resources", "mem://x"))
        with anyio.fail_after(10):
            await arrived.wait()
        tg.cancel_scope.cancel()
    assert got_there == [Change("resources", "mem://x")] and got_here == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # redis-py's client is asyncio-only
async def test_a_redis_bus_closes_its_streams_when_it_stops_and_keeps_changes_made_while_stopped(
    redis_url: str, anyio_backend: str
) -> None:
    """Defect: a `RedisBus` never closed its memory object streams (anyio's ResourceWarning once
    it was collected). They are closed when it stops; a change published while it is not running
    (before its start, between a stop and a restart) is still published once it runs."""
    from mcpgen.runtime.server.redis_bus import RedisBus

    with no_unclosed_streams():
        await stop_and_restart(RedisBus(redis_url, "restart-channel"), RedisBus(redis_url, "restart-channel"))


def test_bus_messages_are_checked() -> None:
    data = encode_change(Change("tools"), "p1")
    assert decode_change(data, "p2") == Change("tools")
    assert decode_change(data, "p1") is None  # our own
    assert decode_change(encode_change(Change("resources", "u"), "p1"), "p2") == Change("resources", "u")
    for garbage in (b"{", b"[]", b'{"k": "nonsense"}', b"\xff"):
        assert decode_change(garbage, "p2") is None
