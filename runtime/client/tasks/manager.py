"""`ClientTasks`: a client's side of tasks (`client.tasks`), for both designs.

`Client(..., advertising=ClientAdvertising(tasks=True))` opts in. On a version the tasks extension
applies to, every request then declares the extension in its `_meta` client capabilities (the
extension's only opt-in), and the extension's table rows are in force (`tasks/get`, `tasks/update`,
`tasks/cancel`, a `tools/call` that may answer with a `CreateTaskResult`). On a handshake-era
version with the experimental tasks of 2025-11-25, a `tools/call` carries `task` when the server
offers task-augmented calls and the tool's listing says it supports them (`execution.taskSupport`;
the tools are listed once to learn it). Either way, what comes back may be a task: `adopt` makes it
a `ToolTask`.
"""

from __future__ import annotations

import logging
import math
import sys
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio

from ...core.worker import call
from ...protocol import wire
from ...protocol.capabilities import has_capability
from ...protocol.errors import ConnectionClosed, McpError, McpRuntimeError, RemoteProtocolError, RequestTimeout
from ..subscriptions import Subscription
from .handle import StatusCallback, TaskState, ToolTask, raise_for

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from mcpgen.generated._spec import ExtensionSpec
    from mcpgen.generated.types import CallToolResult

    from .. import Client

log = logging.getLogger("mcpgen.runtime.client")

EXTENSION = "io.modelcontextprotocol/tasks"
"""The id of the tasks extension (SEP-2663)."""
LEGACY_PARAM = "task"  # the params field that asks 2025-11-25's `tools/call` for a task
NOTIFICATIONS = frozenset({"notifications/tasks", "notifications/tasks/status"})
"""The status notifications of the two designs."""


class _Listing(Protocol):
    def tools(self) -> AsyncIterator[Any]: ...


class ClientTasks:
    """The tasks side of one `Client` (see the module docstring)."""

    def __init__(self, client: Client, enabled: bool) -> None:
        self.client = client
        self.enabled = enabled
        self._support: dict[str, str] = {}  # handshake era: each tool's `execution.taskSupport`
        self._listed = False
        self._handles: weakref.WeakValueDictionary[str, ToolTask] = weakref.WeakValueDictionary()

    # -- which design ------------------------------------------------------------------------------

    def extension(self) -> ExtensionSpec | None:
        """The tasks extension on the negotiated version (None: not there, or not opted in)."""
        if not self.enabled:
            return None
        return self.client.registry.extension(EXTENSION, self.client.protocol_version)

    def legacy_path(self) -> str | None:
        """The server capability that offers 2025-11-25's task-augmented `tools/call` on the
        negotiated version (None: the version has no such thing)."""
        spec = self.client.registry.spec(self.client.protocol_version, "tools/call")
        gate = spec.capability if spec is not None else None
        for key, path in gate.param_requires if gate is not None else ():
            if key == LEGACY_PARAM:
                return path
        return None

    @property
    def drives(self) -> bool:
        return self.client.inputs.drives

    async def fulfil(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        return await self.client.fulfil(requests)

    # -- the call ----------------------------------------------------------------------------------

    async def prepare(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """The params of a `tools/call`, asking for a task where the handshake-era design needs it."""
        if not self.enabled or self.extension() is not None or LEGACY_PARAM in params:
            return params
        path = self.legacy_path()
        if path is None or not has_capability(self.client.server_capabilities, path):
            return params
        if await self._tool_support(name) in ("optional", "required"):
            return {**params, LEGACY_PARAM: {}}
        return params

    async def _tool_support(self, name: str) -> str | None:
        if name not in self._support and not self._listed:
            self._listed = True
            try:
                async for tool in cast("_Listing", self.client).tools():
                    self.learn(tool)
            except McpError as exc:
                log.debug("could not list tools to learn their task support: %s", exc)
        return self._support.get(name)

    def learn(self, tool: Any) -> None:
        """Remember a listed tool's task support (handshake era)."""
        execution = wire.to_wire(wire.field(tool, "execution"))
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        self._support[str(wire.field(tool, "name"))] = support if isinstance(support, str) else "forbidden"

    def forget(self) -> None:
        """The tool list changed: learn the tools' task support again when needed."""
        self._support.clear()
        self._listed = False

    @staticmethod
    def is_task(result: Any) -> bool:
        """Is this `tools/call` result a task (either design's `CreateTaskResult`)?"""
        return wire.field(result, "result_type") == "task" or wire.field(result, "task") is not None

    def adopt(self, tool: str, result: Any) -> ToolTask:
        """The handle of a task a call was answered with."""
        extension = wire.field(result, "result_type") == "task"
        task = wire.field(result, "task") if not extension else result
        handle = ToolTask(self, tool, TaskState.from_wire(task), extension=extension)
        self._handles[handle.task_id] = handle
        return handle

    async def finish_call(self, task: ToolTask, timeout: Any) -> CallToolResult:
        """`call_tool` waiting for its task: the outcome as the call's. A `timeout` in seconds
        bounds the whole wait (`RequestTimeout`); a call that times out or is cancelled cancels
        its task (nobody is left to wait for it)."""
        limit = timeout if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else None
        try:
            with anyio.fail_after(limit if limit is not None else math.inf):
                return await task.result()
        except TimeoutError:
            await self._abandon(task)
            raise RequestTimeout(
                f"tools/call ({task.tool}): task {task.task_id} did not finish within {limit} s"
            ) from None
        except anyio.get_cancelled_exc_class():
            await self._abandon(task)
            raise

    async def _abandon(self, task: ToolTask) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.client.timeouts.request or 30.0):
            try:
                await task.cancel()
            except McpRuntimeError as exc:
                log.debug("could not cancel abandoned task %s: %s", task.task_id, exc)

    async def attach(self, task_id: str, tool: str = "") -> ToolTask:
        """The handle of a task this client created earlier, by its id (kept by the application, for
        instance across a restart: clients should keep their task ids to resume polling)."""
        extension = self.extension() is not None
        handle = ToolTask(self, tool, await self.get(task_id), extension=extension)
        self._handles[handle.task_id] = handle
        return handle

    # -- the task methods --------------------------------------------------------------------------

    async def get(self, task_id: str) -> TaskState:
        return TaskState.from_wire(await self.client.request("tasks/get", {"taskId": task_id}))

    async def update(self, task: ToolTask, responses: Mapping[str, Any]) -> None:
        if not task.extension:
            raise McpRuntimeError("the handshake era's tasks take their input through tasks/result (result())")
        answers = {key: wire.to_wire(value) for key, value in responses.items()}
        await self.client.request("tasks/update", {"taskId": task.task_id, "inputResponses": answers})

    async def cancel(self, task: ToolTask) -> None:
        try:
            answer = await self.client.request("tasks/cancel", {"taskId": task.task_id})
        except McpError as exc:
            if task.extension or exc.code != -32602:
                raise
            return  # the handshake era refuses to cancel a finished task: it is finished
        if not task.extension:
            task.state = TaskState.from_wire(answer)

    def outcome(self, task: ToolTask, state: TaskState) -> CallToolResult:
        """A finished task's result, as the call's: its `CallToolResult`, or what it failed with."""
        raise_for(state)
        if state.result is None:
            raise RemoteProtocolError(f"task {task.task_id} completed without a result")
        return self._call_result(dict(state.result))

    def _call_result(self, raw: dict[str, Any]) -> CallToolResult:
        spec = self.client.spec("tools/call")
        try:
            return cast("CallToolResult", spec.parse_result(raw))
        except (ValueError, TypeError) as exc:
            raise RemoteProtocolError(f"the server sent an invalid result for task of tools/call: {exc}") from exc

    # -- the handshake era's tasks -----------------------------------------------------------------

    async def legacy_wait(self, task: ToolTask, on_status: StatusCallback | None) -> TaskState:
        """Poll until the task needs input or has finished; then `tasks/result` (which brings
        the server's input requests, answered as any of its requests) until it has finished."""
        await self._legacy_poll(task, on_status)
        if not task.state.terminal:
            await self.legacy_payload(task)
            await task.status()
            await _report(on_status, task.state)
        return task.state

    async def legacy_result(self, task: ToolTask, on_status: StatusCallback | None) -> CallToolResult:
        await self._legacy_poll(task, on_status)
        if task.state.status == "cancelled":
            raise_for(task.state)
        result = await self.legacy_payload(task)
        if not task.state.terminal:
            await task.status()
            await _report(on_status, task.state)
        return result

    async def _legacy_poll(self, task: ToolTask, on_status: StatusCallback | None) -> None:
        state = task.state
        await _report(on_status, state)
        shown = (state.status, state.status_message)
        while not state.terminal and state.status != "input_required":
            state = await task._next(state, False)
            if (state.status, state.status_message) != shown:
                shown = (state.status, state.status_message)
                await _report(on_status, state)

    async def legacy_payload(self, task: ToolTask) -> CallToolResult:
        """`tasks/result`: blocks until the task has finished; its result or its error."""
        raw = await self.client.request("tasks/result", {"taskId": task.task_id}, timeout=None)
        return self._call_result(wire.to_wire(raw))

    # -- notifications -----------------------------------------------------------------------------

    def notified(self, method: str, params: Mapping[str, Any]) -> None:
        """A status notification of either design: the task's handle hears of it."""
        handle = self._handles.get(str(params.get("taskId")))
        if handle is None:
            return
        try:
            handle.notified(TaskState.from_wire(dict(params)))
        except (KeyError, TypeError) as exc:
            log.warning("ignored a malformed %s: %s", method, exc)

    @asynccontextmanager
    async def listening(self, task: ToolTask) -> AsyncIterator[bool]:
        """Listen for the task's status notifications (`subscriptions/listen` with its id) for
        the block; True when the server agreed to send them."""
        client = self.client
        try:
            client.spec("subscriptions/listen")
        except McpRuntimeError:
            yield False
            return
        session = client.session
        body = client.speaks.params_for(client, client.protocol_version, {"notifications": {"taskIds": [task.task_id]}})
        sub = Subscription()
        sub.id = session.next_id()
        session.listens[sub.id] = sub

        async def hold() -> None:
            try:
                await session.send_request("subscriptions/listen", body, timeout=None, request_id=sub.id)
            except (McpError, ConnectionClosed) as exc:
                log.debug("listening for task %s ended: %s", task.task_id, exc)
            finally:
                sub.acknowledged.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(hold)
                with anyio.move_on_after(client.timeouts.request):
                    await sub.acknowledged.wait()
                agreed = task.task_id in (sub.honoured.get("taskIds") or ())
                try:
                    yield agreed
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # what the block raised, as itself
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        finally:
            session.listens.pop(sub.id, None)
            sub.close()


async def _report(on_status: StatusCallback | None, state: TaskState) -> None:
    if on_status is not None:
        await call(on_status, state)
