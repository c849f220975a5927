"""2025-11-25's experimental tasks, served from the same tool definitions as the extension: the
`tasks` capability, `execution.taskSupport`, `params.task`, `tasks/get`, `tasks/result` (with the
task's input requests sent on its stream, tagged with the task), `tasks/list`, `tasks/cancel`,
`notifications/tasks/status`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from support.peers import RawPeer, raw_server
from support.tasks_server import Gates, make_server

pytestmark = pytest.mark.anyio
V25 = "2025-11-25"
RELATED = "io.modelcontextprotocol/related-task"


class Session:
    """A raw handshake-era client: answers the server's elicitations, keeps its notifications."""

    def __init__(self, raw: RawPeer) -> None:
        self.raw = raw
        self.ids = iter(range(1, 1_000_000))
        self.notes: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []

    async def open(self, caps: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {
            "protocolVersion": V25,
            "capabilities": caps or {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        }
        result = await self.result("initialize", params)
        await self.raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return dict(result)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            message["params"] = params
        await self.raw.send(message)
        while True:
            reply = await self.raw.receive(10)
            if "method" in reply and "id" in reply:  # the server asks
                self.asked.append(reply)
                answer = {"action": "accept", "content": {"ok": True, "name": "Zed"}}
                await self.raw.send({"jsonrpc": "2.0", "id": reply["id"], "result": answer})
            elif "method" in reply:
                self.notes.append(reply)
            elif reply.get("id") == message["id"]:
                return reply

    async def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = await self.call(method, params)
        assert "error" in reply, reply
        return reply["error"]

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        with anyio.fail_after(10):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if task["status"] in statuses:
                    return dict(task)
                await anyio.sleep(0.01)


@asynccontextmanager
async def session(**options: Any) -> AsyncIterator[tuple[Session, Gates, dict[str, Any]]]:
    server, gates = make_server(**options)
    async with raw_server(server) as raw:
        peer = Session(raw)
        yield peer, gates, await peer.open()


async def test_capabilities_and_listings_say_what_runs_as_a_task() -> None:
    async with session() as (peer, _, init):
        assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        assert "extensions" not in init["capabilities"]
        tools = {t["name"]: t for t in (await peer.result("tools/list", {}))["tools"]}
        assert tools["gated"]["execution"] == {"taskSupport": "optional"}
        assert tools["must"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in tools["plain"]


async def test_a_task_augmented_call_its_status_and_its_result() -> None:
    async with session() as (peer, gates, _):
        created = await peer.result("tools/call", {"name": "gated", "arguments": {"label": "r"}, "task": {"ttl": 5000}})
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 5000 and task["pollInterval"] == 20
        assert (await peer.result("tasks/get", {"taskId": task["taskId"]}))["status"] == "working"
        gates.event("r").set()
        payload = await peer.result("tasks/result", {"taskId": task["taskId"]})  # blocks until it is done
        assert payload["content"][0]["text"] == "r done in task True"
        assert payload["_meta"][RELATED] == {"taskId": task["taskId"]}
        statuses = [n["params"]["status"] for n in peer.notes if n["method"] == "notifications/tasks/status"]
        assert statuses[-1] == "completed"
        # Without `task` the same tool answers as usual.
        gates.event("s").set()
        plain = await peer.result("tools/call", {"name": "gated", "arguments": {"label": "s"}})
        assert plain["content"][0]["text"] == "s done in task False"


async def test_task_misuse_is_32601() -> None:
    async with session() as (peer, _, _init):
        assert (await peer.error("tools/call", {"name": "must", "arguments": {}}))["code"] == -32601
        assert (await peer.error("tools/call", {"name": "plain", "arguments": {}, "task": {}}))["code"] == -32601
        assert (await peer.error("tasks/update", {"taskId": "x", "inputResponses": {}}))["code"] == -32601


async def test_input_goes_through_tasks_result_tagged_with_the_task() -> None:
    async with session() as (peer, _, _init):
        created = await peer.result("tools/call", {"name": "confirm", "arguments": {"rounds": 2}, "task": {}})
        task_id = created["task"]["taskId"]
        await peer.until(task_id, "input_required")
        payload = await peer.result("tasks/result", {"taskId": task_id})
        assert payload["content"][0]["text"] == "confirmed 2 time(s)"
        assert [a["method"] for a in peer.asked] == ["elicitation/create", "elicitation/create"]
        assert all(a["params"]["_meta"][RELATED] == {"taskId": task_id} for a in peer.asked)


async def test_a_tool_error_fails_the_task_and_result_returns_it_a_protocol_error_is_raised() -> None:
    async with session() as (peer, _, _init):
        oops = (await peer.result("tools/call", {"name": "oops", "arguments": {}, "task": {}}))["task"]["taskId"]
        assert (await peer.until(oops, "failed", "completed"))["status"] == "failed"  # isError is failed here
        payload = await peer.result("tasks/result", {"taskId": oops})
        assert payload["isError"] is True
        boom = (await peer.result("tools/call", {"name": "boom", "arguments": {}, "task": {}}))["task"]["taskId"]
        await peer.until(boom, "failed")
        error = await peer.error("tasks/result", {"taskId": boom})
        assert error == {"code": -32603, "message": "boom broke", "data": {"why": "testing"}}


async def test_cancel_answers_the_cancelled_task_and_refuses_a_finished_one() -> None:
    async with session() as (peer, gates, _):
        task_id = (await peer.result("tools/call", {"name": "gated", "arguments": {"label": "k"}, "task": {}}))["task"][
            "taskId"
        ]
        await gates.started("k").wait()
        cancelled = await peer.result("tasks/cancel", {"taskId": task_id})
        assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled"
        assert (await peer.error("tasks/cancel", {"taskId": task_id}))["code"] == -32602
        assert (await peer.error("tasks/result", {"taskId": task_id}))["code"] == -32602
        assert (await peer.error("tasks/get", {"taskId": "unknown"}))["code"] == -32602


async def test_tasks_list_shows_a_session_its_own_tasks_only() -> None:
    server, _ = make_server(max_ttl_ms=10_000)
    async with raw_server(server) as one_raw, raw_server(server) as other_raw:
        one, other = Session(one_raw), Session(other_raw)
        await one.open()
        await other.open()
        mine = [
            (await one.result("tools/call", {"name": "quick", "arguments": {}, "task": {"ttl": 99_000}}))["task"]
            for _ in range(3)
        ]
        assert {t["ttl"] for t in mine} == {10_000}  # capped
        theirs = (await other.result("tools/call", {"name": "quick", "arguments": {}, "task": {}}))["task"]
        listed = await one.result("tasks/list", {})
        assert {t["taskId"] for t in listed["tasks"]} == {t["taskId"] for t in mine}
        assert [t["taskId"] for t in (await other.result("tasks/list", {}))["tasks"]] == [theirs["taskId"]]
