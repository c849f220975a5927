"""The task methods, for both designs: `async (server, ctx, params) -> result`, like the built-in handlers.

The request's protocol version says which design it speaks (the tasks extension where the tree
applies it, else 2025-11-25's experimental tasks); the router has already checked that the method
exists in that version's table (with the extension in force), that the server offers it and,
for the extension, that the request declares it (-32021 otherwise).

- `tasks/get`: the task as the design shows it (the extension inlines the outstanding
  `inputRequests`, the `result` or the `error`).
- `tasks/update` (extension): answers to outstanding input requests, each checked like any
  input response; answers to keys that are not outstanding are ignored; an empty acknowledgement.
- `tasks/cancel`: the extension acknowledges (also for a task that has finished: idempotent);
  2025-11-25 answers with the cancelled task, and refuses a finished one (-32602).
- `tasks/result` (2025-11-25): waits for the end; meanwhile the task's input requests go to the
  client as requests of the server's, on this request's stream, tagged with the task.
- `tasks/list` (2025-11-25): the caller's own tasks (its principal's, or without one its session's).

An unknown task id, an expired task and a task of another principal are all -32602.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

import anyio

from ...auth.shared.principal import principal_of
from ...core.worker import gather
from ...protocol.errors import InvalidParams, McpError
from ..input import decode_answer
from ..pagination import page
from .records import TaskRecord, legacy_status, legacy_view, modern_view

if TYPE_CHECKING:
    from .. import Server
    from ..context import RequestContext

RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"  # 2025-11-25: what ties a message to its task


def _extension(server: Server, ctx: RequestContext) -> bool:
    return server.tasks.extension(ctx.protocol_version) is not None


async def get_task(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    record = await server.tasks.find(ctx, params.task_id)
    return modern_view(record) if _extension(server, ctx) else legacy_view(record)


async def accept_answers(server: Server, record: TaskRecord, responses: Any) -> int:
    """Store the answers to the task's outstanding input requests (each checked as the answer to
    its request, -32602 otherwise); answers to anything else are ignored. How many were new."""
    if not isinstance(responses, dict):
        raise InvalidParams("inputResponses must be an object")
    table = server.registry.methods(record.version)
    accepted: dict[str, Any] = {}
    for key, value in responses.items():
        request = record.requests.get(key)
        if request is None or key in record.answers:
            continue  # never asked, answered already, or superseded
        kind = table.get(request.get("method"))
        if kind is not None:
            decode_answer(kind, key, value, record.schemas.get(key))  # -32602 for an answer that does not fit
        accepted[key] = value
    if not accepted:
        return 0

    def add(current: TaskRecord) -> bool:
        added = False
        for key, value in accepted.items():
            if key in current.requests and key not in current.answers:
                current.answers[key] = value
                added = True
        if added:
            current.updated_at = time.time()
        return added

    _, changed = await server.tasks.update(record.task_id, add)
    return len(accepted) if changed else 0


async def update_task(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    record = await server.tasks.find(ctx, params.task_id)
    # The answers as sent: routing checked only that they are an object (see `validated_params`).
    await accept_answers(server, record, (ctx.request.params or {}).get("inputResponses"))
    return {}


async def cancel_task(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    record = await server.tasks.find(ctx, params.task_id)
    if _extension(server, ctx):
        await server.tasks.cancel(record.task_id)
        return {}
    if record.terminal:
        raise InvalidParams(f"Cannot cancel task: already in terminal status {legacy_status(record)!r}")
    cancelled, changed = await server.tasks.cancel(record.task_id)
    if cancelled is None:
        raise InvalidParams("Failed to retrieve task: Task not found", data={"taskId": record.task_id})
    if not changed:  # it finished meanwhile
        raise InvalidParams(f"Cannot cancel task: already in terminal status {legacy_status(cancelled)!r}")
    return legacy_view(cancelled)


async def task_result(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    """2025-11-25's `tasks/result`: block until the task ends, asking the client what it needs meanwhile."""
    task_id = (await server.tasks.find(ctx, params.task_id)).task_id
    owner = principal_of(ctx.auth)
    asking: set[str] = set()

    def settled(record: TaskRecord | None) -> bool:
        return record is None or record.terminal or any(k not in asking for k in record.pending())

    async with anyio.create_task_group() as tg:
        while True:
            record = await server.tasks.wait_for(task_id, settled)
            if record is None or not record.visible_to(owner):
                raise InvalidParams("Failed to retrieve task: Task not found", data={"taskId": task_id})
            if record.terminal:
                tg.cancel_scope.cancel()
                final = record
                break
            fresh = {k: r for k, r in record.pending().items() if k not in asking}
            asking.update(fresh)
            tg.start_soon(_ask, server, ctx, record, fresh)
    return _payload(final)


async def _ask(server: Server, ctx: RequestContext, record: TaskRecord, requests: dict[str, Any]) -> None:
    """Send a task's input requests to the client (tagged with the task) and store the answers."""
    answers: dict[str, Any] = {}

    async def one(key: str, request: dict[str, Any]) -> None:
        params = dict(request.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK_KEY: {"taskId": record.task_id}}
        answers[key] = await ctx.session.send_request(request["method"], params, route=ctx.request.context.reply)

    await gather([functools.partial(one, key, request) for key, request in requests.items()])
    current = await server.tasks.store.get(record.task_id)
    if current is not None:
        await accept_answers(server, current, answers)


def _payload(record: TaskRecord) -> dict[str, Any]:
    """What the task's request would have returned: its result (tagged with the task), or its error."""
    if record.error is not None:
        raise McpError.from_error(record.error)
    if record.result is None:
        raise InvalidParams(f"task {record.task_id} was {record.status}: it has no result")
    meta = record.result.get("_meta")
    return {
        **record.result,
        "_meta": {**(meta if isinstance(meta, dict) else {}), RELATED_TASK_KEY: {"taskId": record.task_id}},
    }


async def list_tasks(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    owner = principal_of(ctx.auth)
    scope = None if owner is not None else server.tasks.scope_of(ctx.session)
    items = [legacy_view(r) for r in await server.tasks.store.scan(owner=owner, scope=scope)]
    found, next_cursor = page(server.cursors, server.limits.page_size, "tasks", items, getattr(params, "cursor", None))
    listing: dict[str, Any] = {"tasks": found}
    if next_cursor is not None:
        listing["nextCursor"] = next_cursor
    return listing


HANDLERS = {
    "tasks/get": get_task,
    "tasks/update": update_task,
    "tasks/cancel": cancel_task,
    "tasks/result": task_result,
    "tasks/list": list_tasks,
}
"""The task methods (both designs) and their handlers."""
