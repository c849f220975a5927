"""Tasks over Streamable HTTP: the task outlives its POST (it runs in the app), `Mcp-Name` carries
the task id on the task methods (-32020 otherwise), refusals get their statuses, a principal sees
only its tasks, and an app that stops fails the tasks still running."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcpgen.runtime.server.tasks import EXTENSION
from support.asgi_driver import AsgiClient, asgi_client, meta, modern_headers, request
from support.tasks_server import make_server

pytestmark = pytest.mark.anyio
TASKS = {"extensions": {EXTENSION: {}}, "elicitation": {}}


def with_user(app: Any) -> Any:
    """The app behind a stand-in for an authentication middleware: `x-user` becomes the principal."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            user = dict(scope["headers"]).get(b"x-user")
            scope = {**scope, "mcpgen.auth": user.decode() if user else None}
        await app(scope, receive, send)

    return asgi


async def post(
    client: AsgiClient, method: str, params: dict[str, Any], *, caps: dict[str, Any] | None = None, **headers: str
) -> tuple[int, dict[str, Any]]:
    body = {**params, "_meta": meta(caps=TASKS if caps is None else caps)}
    name = params.get("taskId", params.get("name"))
    hdrs = modern_headers(method, name if isinstance(name, str) else None)
    hdrs.update(headers)
    reply = await client.post(request(1, method, body), hdrs)
    messages = await reply.messages()
    return reply.status, messages[-1]


async def until(client: AsgiClient, task_id: str, *statuses: str, **headers: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            status, reply = await post(client, "tasks/get", {"taskId": task_id}, **headers)
            assert status == 200, reply
            if reply["result"]["status"] in statuses:
                return dict(reply["result"])
            await anyio.sleep(0.01)


async def test_a_task_outlives_its_post_and_mcp_name_carries_its_id() -> None:
    server, gates = make_server()
    async with asgi_client(server.http_app()) as client:
        status, created = await post(client, "tools/call", {"name": "gated", "arguments": {"label": "h"}})
        assert status == 200 and created["result"]["resultType"] == "task"
        task_id = created["result"]["taskId"]
        gates.event("h").set()
        done = await until(client, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "h done in task True"
        for headers in ({"mcp-name": "another-task"}, {"mcp-name": ""}):
            status, reply = await post(client, "tasks/get", {"taskId": task_id}, **headers)
            assert (status, reply["error"]["code"]) == (400, -32020)
        body = request(2, "tasks/get", {"taskId": task_id, "_meta": meta(caps=TASKS)})
        reply = await client.post(body, modern_headers("tasks/get"))  # no Mcp-Name at all
        assert reply.status == 400 and (await reply.json())["error"]["code"] == -32020


async def test_refusals_get_their_http_statuses() -> None:
    server, _ = make_server()
    async with asgi_client(server.http_app()) as client:
        status, reply = await post(client, "tasks/get", {"taskId": "x"}, caps={})
        assert (status, reply["error"]["code"]) == (400, -32021)
        status, reply = await post(client, "tools/call", {"name": "must", "arguments": {}}, caps={})
        assert (status, reply["error"]["code"]) == (400, -32021)
        status, reply = await post(client, "tasks/get", {"taskId": "x"})
        assert (status, reply["error"]["code"]) == (400, -32602)
        status, reply = await post(client, "tasks/result", {"taskId": "x"})
        assert (status, reply["error"]["code"]) == (404, -32601)


async def test_a_principal_sees_its_own_tasks_only() -> None:
    server, _ = make_server()
    app = server.http_app()
    async with app.run(), asgi_client(with_user(app), run=False) as client:
        _, created = await post(client, "tools/call", {"name": "quick", "arguments": {}}, **{"x-user": "alice"})
        task_id = created["result"]["taskId"]
        await until(client, task_id, "completed", **{"x-user": "alice"})
        for who in ({"x-user": "bob"}, {}):
            status, reply = await post(client, "tasks/get", {"taskId": task_id}, **who)
            assert (status, reply["error"]["code"]) == (400, -32602)


async def test_stopping_the_app_fails_the_tasks_still_running() -> None:
    server, gates = make_server()
    app = server.http_app()
    async with asgi_client(app) as client:
        _, created = await post(client, "tools/call", {"name": "gated", "arguments": {"label": "stop"}})
        await gates.started("stop").wait()
    record = await server.tasks.store.get(created["result"]["taskId"])
    assert record is not None and record.status == "failed" and "stop" in gates.cancelled
    assert record.error is not None and record.error["code"] == -32603
