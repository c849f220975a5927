"""A client as a user writes it, against the public API only: type-checked strictly in CI."""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcpgen.generated.types import CallToolResult, InputRequiredResult
from mcpgen.runtime import Client, ClientAdvertising, ClientHooks, InputHandlers, TaskState, ToolTask, stdio


async def on_log(level: Any, data: Any, logger: Any) -> None:
    print(level, data, logger, file=sys.stderr)


async def on_change(kind: str) -> None:
    print("changed:", kind, file=sys.stderr)


async def confirm_everything(params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


def show(state: TaskState) -> None:
    print("task", state.status, file=sys.stderr)


def first_text(result: CallToolResult) -> str | None:
    """The first text block of a result, whichever protocol version produced it."""
    for block in result.content:
        if block.type == "text":
            return block.text
    return None


async def main(command: list[str]) -> None:
    async with Client(
        stdio(command),
        mode="auto",
        hooks=ClientHooks(on_log=on_log, on_list_changed=on_change),
        inputs=InputHandlers(elicitation=confirm_everything),
        # tool calls the server runs as tasks: waited for, or handed over with wait=False
        advertising=ClientAdvertising(tasks=True),
    ) as client:
        print(client.protocol_version, client.era, client.server_info)
        names: list[str] = [tool.name async for tool in client.tools()]
        result: CallToolResult = await client.call_tool("add", {"a": 1, "b": 2})
        print(names, result.structured_content)
        deleted = await client.call_tool("delete", {"item": "x"})
        print(first_text(deleted))
        pending = await client.call_tool("delete", {"item": "y"}, resolve_input=False)
        if isinstance(pending, InputRequiredResult):  # the server asked for input: answer it yourself
            print(sorted(pending.input_requests or {}))
        outcome = await client.call_tool("crunch", {"n": 3}, wait=False)
        if isinstance(outcome, ToolTask):
            state: TaskState = await outcome.status()
            finished: CallToolResult = await outcome.result(on_status=show)
            print(state.task_id == outcome.task_id, first_text(finished))
        enrolled: CallToolResult = await client.call_tool("enroll", {"course": "python"})  # waits for the task
        print(first_text(enrolled))
        async with client.listen(tools=True) as subscription:
            print(subscription.honoured)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
