"""`TaskRun`: one call that may become a task, run in the background of what serves it.

The handler runs on a task of the connection's (or HTTP app's) task group from the start; the
request waits for its first outcome:

- the task is created (before the handler runs, or when the handler awaits `ctx.run_as_task()`):
  the request is answered with the `CreateTaskResult`, and the handler goes on;
- before that, the handler finished, failed or asked for input: that is the request's own answer
  (a result, an error, an `InputRequiredResult` of the modern era; a handshake-era session asks
  the client and runs the handler again, as for any call).

Once it is a task, what the handler asks for becomes the task's input: the task is
`input_required` with the requests under keys never used before in this task, the answers come
through `tasks/update` (or, in 2025-11-25's design, `tasks/result`) from any process, and the
handler runs again with them. Its result (or error) is the task's outcome. A cancelled task
(`tasks/cancel`, from any process) stops the handler; a server that stops while a task runs marks
it `failed`. A terminal task is never changed again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from ...protocol.errors import InternalError, McpError
from ...protocol.input_requests import InputRequired
from ..input import check_input_capabilities, decode_answer
from .context import TaskContext
from .records import COMPLETED, FAILED, INPUT_REQUIRED, WORKING, TaskRecord, legacy_view, modern_created

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..context import RequestContext
    from .manager import Plan, TaskManager


class _Gone(Exception):
    """The task was cancelled or has expired: the run stops without an outcome of its own."""


class TaskRun:
    """One call of a task-capable tool (see the module docstring)."""

    def __init__(  # noqa: PLR0913 - the call (its spec, params, handler) and how it runs
        self,
        manager: TaskManager,
        ctx: RequestContext,
        spec: MethodSpec,
        params: Any,
        handler: Any,
        plan: Plan,
    ) -> None:
        self.manager = manager
        self.ctx = TaskContext(ctx, self)
        self.spec = spec
        self.params = params
        self.handler = handler
        self.plan = plan
        self.task_id: str | None = None
        self.scope = anyio.CancelScope()
        self._first = anyio.Event()
        self._answer: Any = None
        self._group: TaskGroup | None = None
        self._stopped_by_cancel = False

    # -- the request's side --------------------------------------------------------------------

    async def start(self, host: TaskGroup) -> Any:
        """Run the call on `host` and answer the request with its first outcome."""
        host.start_soon(self._run)
        try:
            await self._first.wait()
        finally:
            if not self._first.is_set():  # the request was cancelled before it had an answer
                self.scope.cancel()
        if isinstance(self._answer, BaseException):
            raise self._answer
        return self._answer

    def _deliver(self, answer: Any) -> None:
        if not self._first.is_set():
            self._answer = answer
            self._first.set()

    async def detach(self) -> None:
        """Create the task and answer the request with it (once; see `RequestContext.run_as_task`)."""
        if self.task_id is not None:
            return
        record = self.manager.new_record(self.ctx, self.spec, self.plan)
        await self.manager.created(self.ctx, record)
        self.task_id = record.task_id
        assert self._group is not None
        self._group.start_soon(self._watch_cancel, record.task_id)
        created = modern_created(record) if self.plan.extension is not None else {"task": legacy_view(record)}
        try:
            self._deliver(self.ctx.session.finish(self.spec, self.ctx, created))
        except McpError as exc:
            self._deliver(exc)

    # -- the background side -------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            with self.scope:
                async with anyio.create_task_group() as group:
                    self._group = group
                    await self._main()
                    group.cancel_scope.cancel()  # the cancellation watcher
        except BaseException:
            # The server stops (its task group is cancelled) while the task runs.
            if self.task_id is not None:
                with anyio.CancelScope(shield=True):
                    await self._settle(error=InternalError("the server stopped before the task finished"))
            raise
        finally:
            self._deliver(InternalError(f"the {self.spec.method} call ended without an answer"))

    async def _watch_cancel(self, task_id: str) -> None:
        await self.manager.wait_for(task_id, lambda record: record is None or record.terminal)
        self._stopped_by_cancel = True
        self.scope.cancel()

    async def _main(self) -> None:
        try:
            if self.plan.immediate:
                await self.detach()
            value = await self._loop()
            result = self.ctx.session.finish(self.spec, self.ctx, value)
        except _Gone:
            return
        except McpError as exc:
            await self._outcome(error=exc)
            return
        except Exception as exc:  # a bug of the handler's or ours: the task fails (an error id, the
            # details in the log unless the server's diagnostics send them), the server goes on
            await self._outcome(error=self.manager.server.errors.internal(exc, f"the {self.spec.method} task"))
            return
        await self._outcome(result=result)

    async def _outcome(self, *, result: dict[str, Any] | None = None, error: McpError | None = None) -> None:
        if self.task_id is None:
            self._deliver(error if error is not None else result)
        else:
            await self._settle(result=result, error=error)

    async def _settle(self, *, result: dict[str, Any] | None = None, error: McpError | None = None) -> None:
        """Record the task's outcome, unless it is terminal already (cancelled meanwhile)."""
        assert self.task_id is not None

        def settle(record: TaskRecord) -> bool:
            if record.terminal:
                return False
            if error is not None:
                record.status, record.error, record.status_message = FAILED, error.to_error(), error.message
            else:
                record.status, record.result = COMPLETED, result
            record.requests, record.answers, record.schemas = {}, {}, {}
            record.updated_at = time.time()
            return True

        await self.manager.update(self.task_id, settle)

    async def _loop(self) -> Any:
        """Run the handler until it has a result, asking for input the way the call is served."""
        session, ctx, spec = self.ctx.session, self.ctx, self.spec
        rounds = 0
        while True:
            try:
                value = await self.handler(ctx, self.params)
                if not isinstance(value, InputRequired):
                    return value
                raise value
            except InputRequired as asked:
                rounds += 1
                session.check_may_ask(spec, rounds)
                check_input_capabilities(ctx, asked)
                if self.task_id is None:
                    final = await ctx.serving.ask_for_input(ctx, spec, asked)
                    if final is not None:
                        return final  # an InputRequiredResult: the request's answer; the client retries
                else:
                    await self._task_input(self.task_id, asked)

    # -- input during the task -----------------------------------------------------------------

    async def _task_input(self, task_id: str, asked: InputRequired) -> None:
        """The task waits for the client: `input_required` with the requests (under keys new to
        this task) until every one is answered; the handler then runs again with the answers."""
        keys: dict[str, str] = {}  # wire key -> the handler's key

        def ask(record: TaskRecord) -> bool:
            if record.terminal:
                return False
            keys.clear()
            for key, request in asked.requests.items():
                wire = record.unique_key(key)
                keys[wire] = key
                record.issued.append(wire)
                record.requests[wire] = request
                params = request.get("params") or {}
                if request.get("method") == "elicitation/create" and "requestedSchema" in params:
                    record.schemas[wire] = params["requestedSchema"]
            record.status, record.updated_at = INPUT_REQUIRED, time.time()
            return True

        record, changed = await self.manager.update(task_id, ask)
        if record is None or not changed:
            raise _Gone
        answered = await self.manager.wait_for(
            task_id, lambda r: r is None or r.terminal or all(k in r.answers for k in keys)
        )
        if answered is None or answered.terminal:
            raise _Gone
        taken: dict[str, Any] = {}

        def take(record: TaskRecord) -> bool:
            if record.terminal:
                return False
            taken.clear()
            for wire in keys:
                taken[wire] = record.answers.pop(wire)
                record.requests.pop(wire, None)
                record.schemas.pop(wire, None)
            if not record.requests:
                record.status = WORKING
            record.updated_at = time.time()
            return True

        record, changed = await self.manager.update(task_id, take)
        if record is None or not changed:
            raise _Gone
        table = self.ctx.server.registry.methods(self.ctx.protocol_version)
        self.ctx.input_responses = {
            keys[wire]: decode_answer(table[answered.requests[wire]["method"]], wire, value, answered.schemas.get(wire))
            for wire, value in taken.items()
        }
        self.ctx.state = asked.state
