"""Tasks on the server: tool calls that run in the background while the client polls, for both
designs (the tasks extension `io.modelcontextprotocol/tasks` of 2026-07-28 on, and the
experimental tasks of 2025-11-25), served from the same tool definitions.

    server = Server("jobs", tasks=TaskOptions(ttl_ms=600_000))

    @server.tool(task_support="optional")          # or "required"
    async def crunch(ctx: RequestContext, n: int) -> str:
        ...

`manager` decides which calls become tasks and announces their changes, `runner` runs them,
`handlers` serves the task methods, `records` is the task and its two wire shapes, `store` the
`TaskStore` interface and the in-memory store, `redis_store` the Redis store (a deployment of
several processes, and restarts).
"""

from typing import TYPE_CHECKING, Any

from .context import TaskContext
from .manager import EXTENSION, TaskManager, TaskNotice, TaskOptions, TaskSupport
from .records import TaskRecord
from .store import MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from .redis_store import RedisTaskStore


def __getattr__(name: str) -> Any:
    if name == "RedisTaskStore":  # imported on first use: it needs the `redis` extra
        from .redis_store import RedisTaskStore

        return RedisTaskStore
    raise AttributeError(name)


__all__ = [
    "EXTENSION",
    "MemoryTaskStore",
    "RedisTaskStore",
    "TaskContext",
    "TaskManager",
    "TaskNotice",
    "TaskOptions",
    "TaskRecord",
    "TaskStore",
    "TaskSupport",
]
