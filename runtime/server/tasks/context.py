"""`TaskContext`: the context of a call that may run as a task.

It is the `RequestContext` the handler would have had, plus the task's side: `await
ctx.run_as_task()` hands the call over to a task (the client gets its task handle now, the handler
goes on), and once the call is a task, progress and log messages are no longer sent (the request
they would belong to has been answered; the tasks extension carries neither).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context import RequestContext
from ..eras import ClientView

if TYPE_CHECKING:
    from .runner import TaskRun


class TaskContext(RequestContext):
    """A `RequestContext` whose call may become (or is) a task."""

    def __init__(self, base: RequestContext, run: TaskRun) -> None:
        view = ClientView(base.client_capabilities, base.client_info, base.log_level)
        super().__init__(base.session, base.request, base.protocol_version, base.serving, view)
        self.input_responses = base.input_responses  # what the request answered (multi-round-trip)
        self.state = base.state
        self._run = run

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (None while it is an ordinary call)."""
        return self._run.task_id

    async def run_as_task(self) -> None:
        """Hand the call over to a task now, if the client opted in and it is not one yet."""
        await self._run.detach()

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._run.task_id is None:
            await super().report_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        if self._run.task_id is None:
            await super().log(level, data, logger)
