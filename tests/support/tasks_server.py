"""A server with task-capable tools, for the tasks tests (in process, and as a worker process:
`tests/support/tasks_server.py:server`).

In process, tools that must stay running until the test says so wait on a `Gate` (no sleeps);
in a worker process, `sleepy` sleeps for as long as it is asked (its own pacing).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcpgen.runtime import InternalError, RequestContext, Server
from mcpgen.runtime.protocol.input_requests import elicit, sample
from mcpgen.runtime.server.tasks import TaskOptions

OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Gates:
    """Events tests open to let a tool go on, and what the tools saw."""

    def __init__(self) -> None:
        self.events: dict[str, anyio.Event] = {}
        self.entered: dict[str, anyio.Event] = {}
        self.cancelled: list[str] = []
        self.runs: dict[str, int] = {}

    def event(self, label: str) -> anyio.Event:
        return self.events.setdefault(label, anyio.Event())

    def started(self, label: str) -> anyio.Event:
        return self.entered.setdefault(label, anyio.Event())


def make_server(**task_options: Any) -> tuple[Server, Gates]:
    """A fresh server and its gates (`task_options`: `TaskOptions` fields)."""
    server = Server("tasks-test", tasks=TaskOptions(**{"poll_interval_ms": 20, **task_options}))
    gates = Gates()

    @server.tool()
    def plain(text: str = "plain") -> str:
        """Never a task."""
        return text

    @server.tool(task_support="optional")
    async def gated(ctx: RequestContext, label: str) -> str:
        """Runs until the test opens the gate `label`; records a cancellation."""
        gates.runs[label] = gates.runs.get(label, 0) + 1
        gates.started(label).set()
        try:
            await gates.event(label).wait()
        except anyio.get_cancelled_exc_class():
            gates.cancelled.append(label)
            raise
        return f"{label} done in task {ctx.task_id is not None}"

    @server.tool(task_support="optional")
    async def quick(ctx: RequestContext, text: str = "quick") -> str:
        """Answers at once (a task when the client opts in)."""
        await ctx.report_progress(1, 2, "half")  # never sent once the call is a task
        await ctx.info("working")
        return f"{text}:{ctx.task_id is not None}"

    @server.tool(task_support="required")
    def must() -> str:
        """Only ever a task."""
        return "must ran"

    @server.tool(task_support="optional")
    def oops() -> str:
        """A tool error: an isError result."""
        raise RuntimeError("oops failed")

    @server.tool(task_support="optional")
    def boom() -> str:
        """A JSON-RPC error."""
        raise InternalError("boom broke", data={"why": "testing"})

    @server.tool(task_support="optional")
    async def confirm(ctx: RequestContext, rounds: int = 1) -> str:
        """Asks `confirm` `rounds` times (the same key each round), counting the answers."""
        count = (ctx.state or 0) + (1 if ctx.input_response("confirm") is not None else 0)
        if count < rounds:
            return ctx.input_required(state=count, confirm=elicit(f"Confirm #{count + 1}?", OK))
        return f"confirmed {count} time(s)"

    @server.tool(task_support="optional")
    async def pair(ctx: RequestContext) -> str:
        """Asks two questions at once."""
        first, second = ctx.input_response("first"), ctx.input_response("second")
        if first is None or second is None:
            return ctx.input_required(first=elicit("First?", NAME), second=elicit("Second?", NAME))
        return f"{first.content['name']}+{second.content['name']}"

    @server.tool(task_support="optional")
    async def model(ctx: RequestContext) -> str:
        """Asks the client's model."""
        reply = ctx.input_response("m")
        if reply is None:
            return ctx.input_required(m=sample(["Say hi"], 10))
        return f"model said {reply.content.text}"

    @server.tool(task_support="required", defer_task=True)
    async def intake(ctx: RequestContext) -> str:
        """Asks `name` before the task exists, then `name` again inside it (separate key spaces)."""
        if ctx.task_id is None:
            before = ctx.input_response("name")
            if before is None:
                return ctx.input_required(name=elicit("Your name?", NAME))
            await ctx.run_as_task()
            return ctx.input_required(state=before.content["name"], name=elicit("Your name, again?", NAME))
        again = ctx.input_response("name")
        return f"{ctx.state} then {again.content['name'] if again is not None else '?'}"

    @server.tool(task_support="optional")
    async def sleepy(seconds: float) -> int:
        """Sleeps, then says which process ran it (for the worker processes)."""
        await anyio.sleep(seconds)
        return os.getpid()

    @server.tool(task_support="optional")
    async def ask_pid(ctx: RequestContext) -> str:
        """Asks once, then says which process asked and which answered (worker processes)."""
        answer = ctx.input_response("go")
        if answer is None:
            return ctx.input_required(go=elicit("Go on?", OK))
        return f"{os.getpid()}:{answer.content}"

    return server, gates


server, gates = make_server()


if __name__ == "__main__":  # a stdio server for the command-line tests
    server.run_stdio()
