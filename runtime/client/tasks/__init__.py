"""Tasks on the client: `Client(..., advertising=ClientAdvertising(tasks=True))` opts in; a tool call
the server turns into a task comes back as a `ToolTask` (`call_tool(..., wait=False)`), or is waited
for (`call_tool(...)`, as if it had been synchronous). Both designs: the tasks extension
(`io.modelcontextprotocol/tasks`) and the experimental tasks of 2025-11-25. `handle` is the task
handle and its state, `manager` the client's side (`client.tasks`): opting in, the handshake era's
`task` param, the task methods, status notifications.
"""

from .handle import TaskCancelled, TaskState, TaskStatus, ToolTask
from .manager import EXTENSION, NOTIFICATIONS, ClientTasks

__all__ = ["EXTENSION", "NOTIFICATIONS", "ClientTasks", "TaskCancelled", "TaskState", "TaskStatus", "ToolTask"]
