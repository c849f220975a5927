"""Tasks in a deployment of two worker processes sharing a Redis task store (`MCPGEN_REDIS_URL`):
a task created through one process is read, answered and cancelled through the other; the
cancellation reaches the process running it; a restart loses no finished result before its TTL,
and a process that stops fails the tasks it was running. Each request goes on a fresh connection
to the process the test names (nothing pins it anywhere)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcpgen.runtime import ClientAdvertising
from mcpgen.runtime.server.tasks import EXTENSION
from support.asgi_driver import meta, modern_headers, request
from support.processes import redis_server, worker

pytestmark = pytest.mark.anyio
TARGET = str(Path(__file__).resolve().parents[1] / "support" / "tasks_server.py") + ":server"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CAPS = {"extensions": {EXTENSION: {}}, "elicitation": {}}


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    return {"MCPGEN_REDIS_URL": redis_url, "MCPGEN_STATE_KEYS": "b" * 64}


async def post(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("taskId", params.get("name"))
    body = request(1, method, {**params, "_meta": meta(caps=CAPS)})
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(url, json=body, headers={**HEADERS, **modern_headers(method, name)})
    message: dict[str, Any] = reply.json()
    assert "result" in message, message
    return dict(message["result"])


async def until(url: str, task_id: str, *statuses: str) -> dict[str, Any]:
    """Ask `url` for the task until it shows one of `statuses` (the task's own pace)."""
    with anyio.fail_after(30):
        while True:
            task = await post(url, "tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.05)


async def test_a_task_is_read_answered_and_cancelled_through_the_other_process(env: dict[str, str]) -> None:
    with ExitStack() as stack:
        a, b = stack.enter_context(worker(TARGET, env)), stack.enter_context(worker(TARGET, env))
        created = await post(a, "tools/call", {"name": "ask_pid", "arguments": {}})
        asking = await post(b, "tasks/get", {"taskId": created["taskId"]})  # at once, from the other process
        assert asking["taskId"] == created["taskId"]
        asking = await until(b, created["taskId"], "input_required")
        assert list(asking["inputRequests"]) == ["go"]
        answer = {"go": {"action": "accept", "content": {"ok": True}}}
        await post(b, "tasks/update", {"taskId": created["taskId"], "inputResponses": answer})
        done = await until(a, created["taskId"], "completed")
        ran_in, _, answered = done["result"]["content"][0]["text"].partition(":")
        assert answered == "{'ok': True}"
        body = request(2, "tools/call", {"name": "sleepy", "arguments": {"seconds": 0}, "_meta": meta()})
        async with httpx.AsyncClient(timeout=30) as http:  # no opt-in: an ordinary call, answered by A
            pid_of_a = (
                await http.post(a, json=body, headers={**HEADERS, **modern_headers("tools/call", "sleepy")})
            ).json()
        assert int(ran_in) == pid_of_a["result"]["structuredContent"]["result"]  # answered through B, run on in A
        # Cancelled through B while A runs it: A stops it (it would sleep for ten minutes).
        long = await post(a, "tools/call", {"name": "sleepy", "arguments": {"seconds": 600}})
        await post(b, "tasks/cancel", {"taskId": long["taskId"]})
        cancelled = await until(a, long["taskId"], "cancelled", "completed", "failed")
        assert cancelled["status"] == "cancelled"


async def test_a_restart_keeps_finished_results_and_fails_what_was_running(env: dict[str, str]) -> None:
    with ExitStack() as stack:
        b = stack.enter_context(worker(TARGET, env))
        with worker(TARGET, env) as a:
            finished = await post(a, "tools/call", {"name": "sleepy", "arguments": {"seconds": 0}})
            done = await until(a, finished["taskId"], "completed")
            running = await post(a, "tools/call", {"name": "sleepy", "arguments": {"seconds": 600}})
        # A stopped (gracefully): what it was running failed; what it finished is still there.
        failed = await until(b, running["taskId"], "failed")
        assert failed["error"]["code"] == -32603 and "stopped" in failed["error"]["message"]
        with worker(TARGET, env) as restarted:
            again = await post(restarted, "tasks/get", {"taskId": finished["taskId"]})
            assert again["status"] == "completed" and again["result"] == done["result"]


async def test_the_client_waits_for_tasks_over_http_in_both_eras(env: dict[str, str]) -> None:
    from mcpgen.runtime import Client, InputHandlers, ToolTask

    async def go_on(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    with worker(TARGET, env) as url:
        for mode in ("auto", "handshake"):
            async with Client(
                url, mode=mode, inputs=InputHandlers(elicitation=go_on), advertising=ClientAdvertising(tasks=True)
            ) as client:
                answered = await client.call_tool("ask_pid", {})  # tasks/get and tasks/update carry Mcp-Name
                assert answered.content[0].text.endswith(":{'ok': True}"), mode
                task = await client.call_tool("sleepy", {"seconds": 600}, wait=False)
                assert isinstance(task, ToolTask)
                await task.cancel()
                assert (await task.status()).status == "cancelled"
