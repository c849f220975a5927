"""`ToolTask`: a tool call the server turned into a task, and `TaskState`, what the server says of it.

    outcome = await client.call_tool("crunch", {"n": 3}, wait=False)
    if isinstance(outcome, ToolTask):
        print(outcome.task_id, (await outcome.status()).status)
        result = await outcome.result(on_status=print)   # waits, answering the task's input requests
    else:
        result = outcome                                  # the server answered at once

Waiting polls `tasks/get` at the interval the server suggests (`pollIntervalMs`, which may change
as the task goes), and wakes early on the server's status notifications: on a modern connection
it listens for them (`subscriptions/listen` with the task's id) and, when the server agrees,
takes the state they carry instead of polling. Input the task asks for is answered by the same
handlers as any call's (`InputHandlers`: elicitation, sampling, roots), each request once. The
result comes back as if the call had been synchronous: the tool's `CallToolResult` (an `isError`
one included), the JSON-RPC error it failed with raised as its `McpError`, or `TaskCancelled`.

The handshake era's experimental tasks work the same way from the outside: the waiting polls
`tasks/get`, then `tasks/result` brings the result (and the server's input requests, which the
connection answers as it answers any request of the server's).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from ...core.worker import call
from ...protocol import wire
from ...protocol.errors import InputError, McpError, McpRuntimeError

if TYPE_CHECKING:
    from mcpgen.generated.types import CallToolResult

    from .manager import ClientTasks

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
DEFAULT_POLL_MS = 1000  # when the server suggests no interval
LISTENING_POLL_MS = 30_000  # a safety net while the server sends status notifications


class TaskCancelled(McpRuntimeError):
    """The task was cancelled before it finished (it has no result)."""


@dataclass(frozen=True)
class TaskState:
    """A task as the server last described it (either design).

    `task_id` names it; `status` is `working`, `input_required`, `completed`, `failed` or
    `cancelled`, and `status_message` may say more; `created_at` and `last_updated_at` are the
    server's ISO 8601 timestamps; `ttl_ms` is how long the server keeps the task after it was
    made (None: no limit said) and `poll_interval_ms` how often it suggests polling.
    `input_requests` (the extension) are the requests still waiting for an answer, by key;
    `result` the tool's result object of a completed task and `error` the JSON-RPC error object
    of a failed one (the extension inlines them; for the handshake era's tasks they come from
    `tasks/result`).
    """

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    input_requests: Mapping[str, Any] = field(default_factory=dict)
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Has the task finished (`completed`, `failed` or `cancelled`)?"""
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, raw: Any) -> TaskState:
        """Read `raw`, a task object of either design (`ttlMs`/`ttl`, `pollIntervalMs`/`pollInterval`).

        Raises:
            TypeError: `raw` is not a task object.
        """
        data = wire.to_wire(raw)
        if not isinstance(data, dict):
            raise TypeError(f"not a task: {data!r}")
        ttl = data.get("ttlMs", data.get("ttl"))
        poll = data.get("pollIntervalMs", data.get("pollInterval"))
        requests = data.get("inputRequests")
        result, error = data.get("result"), data.get("error")
        return cls(
            task_id=str(data["taskId"]),
            status=cast("TaskStatus", data["status"]),
            created_at=str(data.get("createdAt", "")),
            last_updated_at=str(data.get("lastUpdatedAt", "")),
            ttl_ms=ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None,
            poll_interval_ms=poll if isinstance(poll, int) and not isinstance(poll, bool) and poll > 0 else None,
            status_message=data.get("statusMessage") if isinstance(data.get("statusMessage"), str) else None,
            input_requests=dict(requests) if isinstance(requests, dict) else {},
            result=result if isinstance(result, dict) else None,
            error=error if isinstance(error, dict) else None,
        )


StatusCallback = Callable[[TaskState], Awaitable[Any] | Any]


class ToolTask:
    """A tool call running as a task on the server: what `Client.call_tool(..., wait=False)`
    returns for a call the server runs as a task. Wait for it (`result()`, `wait()`), poll it
    (`status()`), answer its input requests (`answer()`) or cancel it (`cancel()`). The client's
    `tasks` side makes it; code does not.
    """

    def __init__(self, tasks: ClientTasks, tool: str, state: TaskState, *, extension: bool) -> None:
        self._tasks = tasks
        self.tool = tool
        """The tool that was called."""
        self.state = state
        """What the server said of the task last (`status()` asks again)."""
        self.extension = extension
        """True for the tasks extension's design, False for the handshake era's experimental tasks."""
        self._answered: set[str] = set()
        self._poked = anyio.Event()
        self._notified: TaskState | None = None

    def __repr__(self) -> str:
        return f"<ToolTask {self.tool} {self.task_id} {self.state.status}>"

    @property
    def task_id(self) -> str:
        return self.state.task_id

    # -- asking the server -------------------------------------------------------------------------

    async def status(self) -> TaskState:
        """Ask the server for the task's state now (`tasks/get`)."""
        self.state = await self._tasks.get(self.task_id)
        return self.state

    async def cancel(self) -> None:
        """Ask the server to cancel the task (`tasks/cancel`). Cancellation is cooperative: the
        task may still finish otherwise; a task that has finished is left as it is."""
        await self._tasks.cancel(self)

    async def answer(self, responses: Mapping[str, Any]) -> None:
        """Answer some of the task's input requests yourself (`tasks/update`; the tasks
        extension only: the handshake era's tasks are answered through `result()`).

        Args:
            responses: an answer per key of `state.input_requests`.
        """
        await self._tasks.update(self, responses)
        self._answered.update(responses)

    def notified(self, state: TaskState) -> None:
        """The server announced the task's `state` (a status notification)."""
        self._notified = state
        self._poked.set()

    # -- waiting ----------------------------------------------------------------------------------

    async def wait(self, *, on_status: StatusCallback | None = None, listen: bool = True) -> TaskState:
        """Wait until the task finishes, answering its input requests with the client's handlers;
        its final state. `on_status` is called with each state that differs from the last one
        (status or message); `listen`: hear the server's status notifications (modern connections)."""
        if not self.extension:
            return await self._tasks.legacy_wait(self, on_status)
        if listen and not self.state.terminal:
            async with self._tasks.listening(self) as agreed:
                return await self._wait(on_status, agreed)
        return await self._wait(on_status, False)

    async def result(self, *, on_status: StatusCallback | None = None, listen: bool = True) -> CallToolResult:
        """Wait for the task (see `wait`, which takes the same `on_status` and `listen`) and give
        its outcome as the call's own: the tool's result, its JSON-RPC error raised (`McpError`),
        or `TaskCancelled`.

        Raises:
            McpError: the task failed (the tool's JSON-RPC error).
            TaskCancelled: the task was cancelled.
        """
        if not self.extension:
            return await self._tasks.legacy_result(self, on_status)
        state = await self.wait(on_status=on_status, listen=listen)
        return self._tasks.outcome(self, state)

    async def _wait(self, on_status: StatusCallback | None, listening: bool) -> TaskState:
        state, shown = self.state, None
        while True:
            if shown is None or (state.status, state.status_message) != shown:
                shown = (state.status, state.status_message)
                if on_status is not None:
                    await call(on_status, state)
            if state.terminal:
                return state
            if state.status == "input_required":
                await self._answer_input(state)
            state = await self._next(state, listening)

    async def _answer_input(self, state: TaskState) -> None:
        fresh = {k: r for k, r in state.input_requests.items() if k not in self._answered}
        if not fresh:
            return
        if not self._tasks.drives:
            raise InputError(
                f"task {self.task_id}: the server asks for input and this client's driver is off; "
                "answer it with ToolTask.answer()"
            )
        self._answered.update(fresh)  # each request is answered once, however often it is listed
        await self.answer(await self._tasks.fulfil(fresh))

    async def _next(self, state: TaskState, listening: bool) -> TaskState:
        """The next state: a notification's, or what `tasks/get` says after the poll interval."""
        interval = state.poll_interval_ms or DEFAULT_POLL_MS
        if listening:
            interval = max(interval, LISTENING_POLL_MS)
        if self._notified is None:
            with anyio.move_on_after(interval / 1000 if interval else math.inf):
                await self._poked.wait()
        self._poked = anyio.Event()
        notified, self._notified = self._notified, None
        if notified is not None and (listening or notified.terminal):
            self.state = notified
            return notified
        return await self.status()


def raise_for(state: TaskState) -> None:
    """Raise what a failed or cancelled task stands for."""
    if state.status == "failed":
        if state.error is not None:
            raise McpError.from_error(dict(state.error))
        raise McpError(state.status_message or f"task {state.task_id} failed", code=-32603)
    if state.status == "cancelled":
        raise TaskCancelled(state.status_message or f"task {state.task_id} was cancelled")
