"""The tasks extension on the server (2026-07-28), message by message from a raw peer: opt-in per
request, required and optional tools, the CreateTaskResult, tasks/get in every status,
tasks/update (partial answers, keys never reused), cooperative idempotent tasks/cancel, unknown
ids, removed methods, input before the task exists, status notifications on subscriptions/listen,
principals, TTL."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcpgen.runtime.core.transport import Frame, TransportContext
from mcpgen.runtime.server.tasks import EXTENSION, MemoryTaskStore
from support.peers import RawPeer, raw_server
from support.tasks_server import Gates, make_server

pytestmark = pytest.mark.anyio
V26 = "2026-07-28"
TASKS = {"extensions": {EXTENSION: {}}}
ANSWER = {"action": "accept", "content": {"ok": True}}


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientCapabilities": TASKS if caps is None else caps,
        **extra,
    }


class Peer:
    """A raw modern client: each request carries its own `_meta`."""

    def __init__(self, raw: RawPeer, auth: Any = None) -> None:
        self.raw = raw
        self.auth = auth
        self.ids = iter(range(1, 1_000_000))

    async def call(self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] | None = None) -> Any:
        body = {**(params or {}), "_meta": meta(caps)}
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": body}
        context = TransportContext("memory", auth=self.auth) if self.auth is not None else None
        await self.raw.transport.send.send(Frame(json.dumps(message).encode(), context))  # type: ignore[arg-type]
        while True:
            reply = await self.raw.receive(10)
            if reply.get("id") == message["id"]:
                return reply

    async def result(
        self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] | None = None
    ) -> Any:
        reply = await self.call(method, params, caps)
        assert "result" in reply, reply
        return reply["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] | None = None) -> Any:
        reply = await self.call(method, params, caps)
        assert "error" in reply, reply
        return reply["error"]

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll tasks/get until the task shows one of `statuses` (the server's own pace)."""
        with anyio.fail_after(10):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if task["status"] in statuses:
                    return dict(task)
                await anyio.sleep(0.01)


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[tuple[Peer, Gates]]:
    server, gates = make_server(**options)
    async with raw_server(server) as raw:
        yield Peer(raw), gates


async def test_a_task_capable_tool_becomes_a_task_only_when_the_request_opts_in() -> None:
    async with serving() as (peer, _):
        created = await peer.result("tools/call", {"name": "quick", "arguments": {"text": "t"}})
        assert created["resultType"] == "task" and created["status"] == "working"
        for absent in ("result", "error", "inputRequests", "requestState", "task"):
            assert absent not in created
        assert set(created) >= {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
        # The same tool without the extension in this request's capabilities: an ordinary call.
        plain = await peer.result("tools/call", {"name": "quick", "arguments": {"text": "t"}}, caps={})
        assert plain["resultType"] == "complete" and plain["content"][0]["text"] == "t:False"
        # A tool without task support never becomes a task.
        assert (await peer.result("tools/call", {"name": "plain", "arguments": {}}))["resultType"] == "complete"


async def test_a_required_task_tool_without_the_opt_in_is_32021_naming_the_extension() -> None:
    async with serving() as (peer, _):
        error = await peer.error("tools/call", {"name": "must", "arguments": {}}, caps={"elicitation": {}})
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        created = await peer.result("tools/call", {"name": "must", "arguments": {}})
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "must ran"


async def test_creation_is_strongly_consistent_and_get_shows_working_then_the_result() -> None:
    async with serving() as (peer, gates):
        created = await peer.result("tools/call", {"name": "gated", "arguments": {"label": "a"}})
        task = await peer.result("tasks/get", {"taskId": created["taskId"]})  # at once: it exists
        assert task["status"] == "working" and task["resultType"] == "complete"
        assert "result" not in task and "inputRequests" not in task
        gates.event("a").set()
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "a done in task True"
        assert done["createdAt"] == created["createdAt"] and done["lastUpdatedAt"] >= created["lastUpdatedAt"]


async def test_a_tool_error_completes_and_a_protocol_error_fails() -> None:
    async with serving() as (peer, _):
        oops = await peer.result("tools/call", {"name": "oops", "arguments": {}})
        done = await peer.until(oops["taskId"], "completed", "failed")
        assert done["status"] == "completed" and done["result"]["isError"] is True and "error" not in done
        boom = await peer.result("tools/call", {"name": "boom", "arguments": {}})
        failed = await peer.until(boom["taskId"], "completed", "failed")
        assert failed["status"] == "failed" and "result" not in failed
        assert failed["error"] == {"code": -32603, "message": "boom broke", "data": {"why": "testing"}}
        assert failed["statusMessage"] == "boom broke"


async def test_input_required_lists_every_outstanding_request_and_partial_answers_are_kept() -> None:
    async with serving() as (peer, _):
        created = await peer.result("tools/call", {"name": "pair", "arguments": {}}, caps={**TASKS, "elicitation": {}})
        task = await peer.until(created["taskId"], "input_required")
        assert set(task["inputRequests"]) == {"first", "second"}
        assert task["inputRequests"]["first"]["method"] == "elicitation/create"
        ack = await peer.result(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {"first": {"action": "accept", "content": {"name": "A"}}}},
        )
        assert ack["resultType"] == "complete" and "taskId" not in ack and "status" not in ack
        task = await peer.result("tasks/get", {"taskId": created["taskId"]})
        assert task["status"] == "input_required" and set(task["inputRequests"]) == {"second"}
        second = {"second": {"action": "accept", "content": {"name": "B"}}}
        await peer.result("tasks/update", {"taskId": created["taskId"], "inputResponses": second})
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "A+B"


async def test_keys_are_never_reused_and_stray_answers_are_ignored() -> None:
    async with serving() as (peer, _):
        caps = {**TASKS, "elicitation": {}}
        created = await peer.result("tools/call", {"name": "confirm", "arguments": {"rounds": 3}}, caps=caps)
        task_id = created["taskId"]
        seen: list[str] = []
        with anyio.fail_after(10):
            while len(seen) < 3:
                task = await peer.until(task_id, "input_required")
                (key,) = task["inputRequests"]
                if key in seen:  # not moved on to the next round yet
                    await anyio.sleep(0.01)
                    continue
                seen.append(key)
                stray = {"never-asked": {"whatever": 1}, key: ANSWER}
                if len(seen) > 1:
                    stray[seen[0]] = ANSWER  # answered already: ignored
                ack = await peer.result("tasks/update", {"taskId": task_id, "inputResponses": stray})
                assert ack["resultType"] == "complete"
        assert seen == ["confirm", "confirm~2", "confirm~3"]
        done = await peer.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "confirmed 3 time(s)"


async def test_an_answer_that_does_not_fit_its_request_is_refused() -> None:
    async with serving() as (peer, _):
        created = await peer.result(
            "tools/call", {"name": "confirm", "arguments": {}}, caps={**TASKS, "elicitation": {}}
        )
        await peer.until(created["taskId"], "input_required")
        bad = {"confirm": {"action": "accept", "content": {"ok": "yes"}}}
        error = await peer.error("tasks/update", {"taskId": created["taskId"], "inputResponses": bad})
        assert error["code"] == -32602
        assert (await peer.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "input_required"
        error = await peer.error("tasks/update", {"taskId": created["taskId"], "inputResponses": 5})
        assert error["code"] == -32602


async def test_the_server_never_asks_for_input_the_creating_request_did_not_declare() -> None:
    async with serving() as (peer, _):
        created = await peer.result("tools/call", {"name": "model", "arguments": {}})  # no sampling declared
        failed = await peer.until(created["taskId"], "failed")
        assert failed["error"]["code"] == -32021


async def test_cancel_is_cooperative_and_idempotent() -> None:
    async with serving() as (peer, gates):
        created = await peer.result("tools/call", {"name": "gated", "arguments": {"label": "c"}})
        await gates.started("c").wait()
        ack = await peer.result("tasks/cancel", {"taskId": created["taskId"]})
        assert ack["resultType"] == "complete" and set(ack) <= {"resultType", "_meta"}
        task = await peer.until(created["taskId"], "cancelled")
        assert "result" not in task
        with anyio.fail_after(10):
            while "c" not in gates.cancelled:  # the handler was stopped
                await anyio.sleep(0.01)
        again = await peer.result("tasks/cancel", {"taskId": created["taskId"]})
        assert again["resultType"] == "complete"
        # A finished task is left as it is.
        quick = await peer.result("tools/call", {"name": "quick", "arguments": {}})
        await peer.until(quick["taskId"], "completed")
        await peer.result("tasks/cancel", {"taskId": quick["taskId"]})
        assert (await peer.result("tasks/get", {"taskId": quick["taskId"]}))["status"] == "completed"


async def test_unknown_ids_removed_methods_and_undeclared_task_methods() -> None:
    async with serving() as (peer, _):
        for method, params in (
            ("tasks/get", {"taskId": "nope"}),
            ("tasks/update", {"taskId": "nope", "inputResponses": {}}),
            ("tasks/cancel", {"taskId": "nope"}),
        ):
            assert (await peer.error(method, params))["code"] == -32602
            error = await peer.error(method, params, caps={})
            assert error["code"] == -32021 and error["data"]["requiredCapabilities"] == {"extensions": {EXTENSION: {}}}
        for removed, params in (("tasks/result", {"taskId": "nope"}), ("tasks/list", {})):
            assert (await peer.error(removed, params))["code"] == -32601


async def test_input_before_the_task_and_inside_it_use_separate_keys() -> None:
    async with serving() as (peer, _):
        caps = {**TASKS, "elicitation": {}}
        first = await peer.result("tools/call", {"name": "intake", "arguments": {}}, caps=caps)
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["name"]
        retry = {
            "name": "intake",
            "arguments": {},
            "requestState": first["requestState"],
            "inputResponses": {"name": {"action": "accept", "content": {"name": "Ann"}}},
        }
        created = await peer.result("tools/call", retry, caps=caps)
        assert created["resultType"] == "task" and "requestState" not in created and "inputRequests" not in created
        task = await peer.until(created["taskId"], "input_required")
        assert list(task["inputRequests"]) == ["name"]  # the task's own key space
        answer = {"name": {"action": "accept", "content": {"name": "Bea"}}}
        await peer.result("tasks/update", {"taskId": created["taskId"], "inputResponses": answer})
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Ann then Bea"
        # Without the opt-in the tool cannot run: -32021 before any input is asked.
        assert (await peer.error("tools/call", {"name": "intake", "arguments": {}}, caps={"elicitation": {}}))[
            "code"
        ] == -32021


async def test_a_task_sends_no_progress_or_log_messages() -> None:
    async with serving() as (peer, _):
        body = {
            "name": "quick",
            "arguments": {},
            "_meta": {**meta(), "progressToken": "p", "io.modelcontextprotocol/logLevel": "debug"},
        }
        await peer.raw.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": body})
        created = await peer.raw.receive()
        assert created["id"] == 99 and created["result"]["resultType"] == "task", created
        done = await peer.until(created["result"]["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "quick:True"
        assert await peer.raw.nothing_within(0.05)


async def test_status_notifications_on_a_listen_stream() -> None:
    async with serving() as (peer, gates):
        created = await peer.result("tools/call", {"name": "gated", "arguments": {"label": "n"}})
        task_id = created["taskId"]
        listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen"}
        listen["params"] = {"notifications": {"taskIds": [task_id, "unknown"]}, "_meta": meta()}
        await peer.raw.send(listen)
        ack = await peer.raw.receive()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"]["taskIds"] == [task_id]
        now = await peer.raw.receive()
        assert now["method"] == "notifications/tasks" and now["params"]["status"] == "working"
        assert now["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
        gates.event("n").set()
        with anyio.fail_after(10):
            while True:
                note = await peer.raw.receive()
                if note["params"]["status"] == "completed":
                    break
        assert note["params"]["result"]["content"][0]["text"] == "n done in task True"
        # Without the extension declared, asking for task notifications is -32021.
        listen["id"], listen["params"] = "M", {"notifications": {"taskIds": [task_id]}, "_meta": meta(caps={})}
        await peer.raw.send(listen)
        refused = await peer.raw.receive()
        assert refused["id"] == "M" and refused["error"]["code"] == -32021


async def test_a_task_is_bound_to_the_principal_that_created_it() -> None:
    server, _ = make_server()
    async with raw_server(server) as raw:
        alice, bob, nobody = Peer(raw, "alice"), Peer(raw, "bob"), Peer(raw)
        created = await alice.result("tools/call", {"name": "quick", "arguments": {}})
        await alice.until(created["taskId"], "completed")
        for other in (bob, nobody):
            for method in ("tasks/get", "tasks/cancel"):
                assert (await other.error(method, {"taskId": created["taskId"]}))["code"] == -32602
        assert len(created["taskId"]) >= 32  # 192 random bits


async def test_an_expired_task_is_gone() -> None:
    now = [time.time()]  # the store's clock, moved on by hand
    store = MemoryTaskStore(clock=lambda: now[0])
    server, _ = make_server(store=store, ttl_ms=60_000)
    async with raw_server(server) as raw:
        peer = Peer(raw)
        created = await peer.result("tools/call", {"name": "quick", "arguments": {}})
        assert created["ttlMs"] == 60_000
        await peer.until(created["taskId"], "completed")
        record = await store.get(created["taskId"])
        assert record is not None
        now[0] = record.created_at + 59.999  # before its TTL it is there, finished or not
        assert (await peer.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "completed"
        now[0] = record.created_at + 60.0
        assert (await peer.error("tasks/get", {"taskId": created["taskId"]}))["code"] == -32602


async def test_the_connection_closing_fails_its_running_tasks() -> None:
    server, gates = make_server()
    async with raw_server(server) as raw:
        created = await Peer(raw).result("tools/call", {"name": "gated", "arguments": {"label": "z"}})
        await gates.started("z").wait()
    record = await server.tasks.store.get(created["taskId"])
    assert record is not None and record.status == "failed"
    assert record.error is not None and "stopped" in record.error["message"] and "z" in gates.cancelled


async def test_middleware_wraps_a_call_that_becomes_a_task() -> None:
    """The server toolkit's middleware around the tasks extension: request middleware answers with
    the CreateTaskResult (as sent, not finished twice), tool middleware runs in the task's
    background run, and a request middleware's own answer to a task-capable call is finished."""
    from mcpgen.runtime import CallNext, Middleware, RequestInfo, ToolCall

    answered: list[Any] = []
    tools_called: list[tuple[str, dict[str, Any]]] = []

    class Watch(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            if request.target == "plain" and request.method == "tools/call":
                return {"content": [{"type": "text", "text": "from middleware"}]}  # finished by the server
            result = await call_next()
            if request.method == "tools/call":
                answered.append(result)
            return result

        async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
            tools_called.append((call.name, dict(call.arguments)))
            call.arguments["text"] = call.arguments["text"].upper()
            return await call_next()

    server, _ = make_server()
    server.add_middleware(Watch())
    async with raw_server(server) as raw:
        peer = Peer(raw)
        created = await peer.result("tools/call", {"name": "quick", "arguments": {"text": "t"}})
        assert created["resultType"] == "task"
        assert answered == [created]  # what the middleware got back is what was sent
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "T:True"  # the tool middleware ran in the task
        assert tools_called == [("quick", {"text": "t"})]
        plain = await peer.result("tools/call", {"name": "quick", "arguments": {"text": "p"}}, caps={})
        assert plain["resultType"] == "complete" and plain["content"][0]["text"] == "P:False"
        short = await peer.result("tools/call", {"name": "plain", "arguments": {}})
        assert short["resultType"] == "complete" and short["content"][0]["text"] == "from middleware"
        assert short["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tasks-test"
