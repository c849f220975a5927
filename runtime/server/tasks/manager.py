"""The server's tasks: which calls become tasks, where they run, and what every process hears of them.

A tool registered with `task_support="optional"` or `"required"` may run as a task; the
`TaskManager` of the server (`server.tasks`) decides per call, by the protocol version of the
request:

- **the tasks extension** (`io.modelcontextprotocol/tasks`, on the versions the generated tree
  applies it to): a call becomes a task when the request itself declares the extension in its
  `_meta` client capabilities (whatever was said before); a `required` tool called without it is
  -32021 naming the extension; an `optional` one runs as an ordinary call;
- **the experimental tasks of 2025-11-25** (the versions whose `tools/call` takes a `task`
  param): a call becomes a task when it carries `task`; a `required` tool called without it, or a
  tool without task support called with it, is -32601.

The server is the one that decides: a call that can be a task is one. The task is created (and
readable from every process sharing the store) before the `CreateTaskResult` goes out; the
handler runs in the background of whatever serves the connection (the HTTP app, the stdio or
in-process session), as a `TaskRun`. Every change of a task is announced: to the waiters of this
process (the run waiting for answers or a cancellation, a `tasks/result` waiting for the end), to
`subscriptions/listen` streams that asked for it (`notifications/tasks`), to the handshake-era
session that created it (`notifications/tasks/status`), and through a shared store to the other
processes, which do the same.
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskStatus

from ...auth.shared.principal import principal_of
from ...protocol.capabilities import nested_keys, required_capabilities
from ...protocol.errors import InvalidParams, MethodNotFound, MissingClientCapability
from ...protocol.keys import SUBSCRIPTION_ID_KEY
from .records import CANCELLED, TaskRecord, legacy_view, modern_view
from .signals import Signals
from .store import Change, MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from mcpgen.generated._spec import ExtensionSpec, MethodSpec

    from .. import Server
    from ..context import RequestContext
    from ..session import ServerSession
    from ..subscriptions import ListenStream

log = logging.getLogger("mcpgen.runtime.server.tasks")

EXTENSION = "io.modelcontextprotocol/tasks"
"""The id of the tasks extension (SEP-2663)."""
LEGACY_PARAM = "task"  # the params field that asks 2025-11-25's `tools/call` for a task
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list")
RECHECK_SECONDS = 5.0  # a waiter reads the store again this often even without a signal (a lost announcement)

TaskSupport = Literal["forbidden", "optional", "required"]
"""Whether a tool's calls may (`optional`) or must (`required`) run as tasks."""


@dataclass(frozen=True)
class TaskOptions:
    """How a server keeps its tasks.

    - `store`: where tasks live (default: this process's memory; `RedisTaskStore` to share them
      between the processes of a deployment and keep them across restarts);
    - `ttl_ms`: how long a task is kept from its creation, finished or not (None: until the
      process ends; with a shared store, for ever);
    - `max_ttl_ms`: the most a handshake-era client may ask for with its `task.ttl`;
    - `poll_interval_ms`: the polling interval suggested to clients.
    """

    store: TaskStore | None = None
    ttl_ms: int | None = 3_600_000
    max_ttl_ms: int | None = 86_400_000
    poll_interval_ms: int = 500


@dataclass(frozen=True)
class Plan:
    """How one call runs as a task (decided before its handler runs)."""

    immediate: bool  # the task exists before the handler runs (else at `ctx.run_as_task()`)
    ttl_ms: int | None
    extension: ExtensionSpec | None  # the extension's design, or None for 2025-11-25's


@dataclass
class TaskNotice:
    """A task's status for a listen stream (`notifications/tasks`: the task as `tasks/get` shows it)."""

    record: TaskRecord
    method: str = field(default="notifications/tasks", init=False)

    def params(self, subscription_id: Any = None) -> dict[str, Any]:
        view = modern_view(self.record)
        if subscription_id is not None:
            view["_meta"] = {SUBSCRIPTION_ID_KEY: subscription_id}
        return view


class TaskManager:
    """The tasks of one `Server` (`server.tasks`; see the module docstring)."""

    def __init__(self, server: Server, options: TaskOptions | None = None) -> None:
        self.server = server
        self.options = options or TaskOptions()
        self.store: TaskStore = self.options.store if self.options.store is not None else MemoryTaskStore()
        self.signals = Signals()
        self._streams: dict[str, set[ListenStream]] = {}
        self._sessions: weakref.WeakValueDictionary[str, ServerSession] = weakref.WeakValueDictionary()
        self._scopes: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()
        self._augmentable_methods: frozenset[str] | None = None
        self.augmented: frozenset[str] = frozenset()
        """The methods whose calls may become tasks (none while no tool supports tasks)."""
        self._legacy: dict[str, bool] = {}
        self._listed: dict[str, bool] = {}
        self._active = False

    # -- what the server offers ------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Does the server have a tool that may run as a task? (As of the last `refresh`.)"""
        return self._active

    def refresh(self) -> None:
        """The server's tools changed: whether it has a task-capable one, again (and so which
        methods' calls may become tasks: `augmented`, none while no tool supports tasks)."""
        self._active = any(tool.task_support != "forbidden" for tool in self.server.tools.values())
        if self._active and self._augmentable_methods is None:
            self._augmentable_methods = self._augmentable()
        self.augmented = (self._augmentable_methods or frozenset()) if self._active else frozenset()

    def extension(self, version: str) -> ExtensionSpec | None:
        """The tasks extension on `version`, when the generated tree applies it there."""
        return self.server.registry.extension(EXTENSION, version)

    def legacy(self, version: str) -> bool:
        """Does `version` have 2025-11-25's tasks (a `tools/call` that takes a `task` param)?"""
        found = self._legacy.get(version)
        if found is None:
            spec = self.server.registry.spec(version, "tools/call")
            gate = spec.capability if spec is not None else None
            found = self._legacy[version] = gate is not None and any(
                key == LEGACY_PARAM for key, _ in gate.param_requires
            )
        return found

    def extension_ids(self) -> frozenset[str]:
        """The extensions the server enables for its tasks (for the router's tables)."""
        return frozenset({EXTENSION}) if self.active else frozenset()

    def advertised(self) -> dict[str, dict[str, Any]]:
        """The server's `extensions` entries for its tasks (an empty object: no settings)."""
        return {EXTENSION: {}} if self.active else {}

    def legacy_capabilities(self, version: str | None) -> dict[str, Any]:
        """2025-11-25's `tasks` capability, for the versions that have it (and the version-less
        capabilities the router checks gates against): every path the tables gate the task
        methods and a task-augmented `tools/call` on."""
        if not self.active:
            return {}
        versions = [version] if version is not None else list(self.server.versions)
        paths: set[str] = set()
        for v in versions:
            if not self.legacy(v):
                continue
            table = self.server.registry.methods(v)
            for method in ("tools/call", *TASK_METHODS):
                spec = table.get(method)
                gate = spec.capability if spec is not None else None
                if gate is None:
                    continue
                if method == "tools/call":
                    paths.update(path for key, path in gate.param_requires if key == LEGACY_PARAM)
                elif gate.side in ("server", "receiver"):
                    paths.add(gate.path)
        return required_capabilities(sorted(paths)) if paths else {}

    def lists_support(self, version: str) -> bool:
        """Do `version`'s tool listings say whether each tool runs as a task (`execution`)?"""
        found = self._listed.get(version)
        if found is None:
            registry = self.server.registry
            found = self._listed[version] = self.legacy(version) and registry.has_field(
                version, "tools/list", ("tools", "execution"), result=True
            )
        return found and self.active

    def _augmentable(self) -> frozenset[str]:
        """The methods whose calls may become tasks in some version the server serves."""
        found: set[str] = set()
        for version in self.server.versions:
            ext = self.extension(version)
            if ext is not None:
                found.update(ext.augments)
            if self.legacy(version):
                found.add("tools/call")
        return frozenset(found)

    def handlers(self) -> dict[str, Callable[..., Any]]:
        """The handlers of the task methods (both designs), for `Server.handlers`."""
        from .handlers import HANDLERS

        return {method: functools.partial(handler, self.server) for method, handler in HANDLERS.items()}

    @staticmethod
    def validated_params(method: str, params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """What routing validates of a request's params: `tasks/update` without the answers
        themselves (an answer to a key that is not outstanding is ignored, whatever it is; the
        handler checks the others against the requests they answer)."""
        if method == "tasks/update" and isinstance(params, Mapping):
            answers = params.get("inputResponses")
            if isinstance(answers, Mapping):
                return {**params, "inputResponses": {}}
        return params

    # -- deciding -------------------------------------------------------------------------------

    def plan(self, ctx: RequestContext, spec: MethodSpec, params: Any) -> Plan | None:
        """How this call runs as a task, or None when it runs as an ordinary call. Raises the
        error of a call that cannot be served either way (see the module docstring)."""
        tool = self.server.tools.get(getattr(params, "name", None) or "") if spec.method == "tools/call" else None
        if tool is None:
            return None  # not a tool of this server: the handler says so
        support: TaskSupport = tool.task_support
        version = ctx.protocol_version
        ext = self.extension(version)
        ttl = self.options.ttl_ms
        if ext is not None:
            if spec.method not in ext.augments:
                return None
            opted_in = ext.declared_in(ctx.client_capabilities)
            if not opted_in and support == "required":
                raise MissingClientCapability(
                    f"Missing required client capability: tool {getattr(params, 'name', '')!r} runs only as a "
                    f"task, which needs the {EXTENSION} extension declared in the request's client capabilities",
                    data={"requiredCapabilities": nested_keys(ext.capability)},
                )
        elif self.legacy(version):
            raw = (ctx.request.params or {}).get(LEGACY_PARAM)
            opted_in = isinstance(raw, Mapping)
            if opted_in and support == "forbidden":
                raise MethodNotFound(f"tool {getattr(params, 'name', '')!r} does not support task-augmented calls")
            if not opted_in and support == "required":
                raise MethodNotFound(f"tool {getattr(params, 'name', '')!r} must be called as a task (params.task)")
            if opted_in:
                ttl = self._legacy_ttl(raw)
        else:
            return None
        if not opted_in or support == "forbidden":
            return None
        return Plan(immediate=not tool.defer_task, ttl_ms=ttl, extension=ext)

    def _legacy_ttl(self, raw: Any) -> int | None:
        asked = raw.get("ttl") if isinstance(raw, Mapping) else None
        if not isinstance(asked, int) or isinstance(asked, bool) or asked <= 0:
            return self.options.ttl_ms
        cap = self.options.max_ttl_ms
        return asked if cap is None else min(asked, cap)

    async def execute(self, ctx: RequestContext, spec: MethodSpec, params: Any, handler: Callable[..., Any]) -> Any:
        """Serve a call of an augmented method: as a task when `plan` says so, else as usual."""
        plan = self.plan(ctx, spec, params)
        if plan is None:
            return await ctx.session.run_handler(ctx, spec, params, handler)
        from .runner import TaskRun

        host = ctx.session.background
        if host is None:
            raise RuntimeError("a task needs its server to be running (serve a transport, or run the HTTP app)")
        return await TaskRun(self, ctx, spec, params, handler, plan).start(host)

    # -- records --------------------------------------------------------------------------------

    def new_record(self, ctx: RequestContext, spec: MethodSpec, plan: Plan) -> TaskRecord:
        now = time.time()
        owner = principal_of(ctx.auth)
        scope = None
        if owner is None and plan.extension is None:  # 2025-11-25's tasks/list: the session's own tasks
            scope = self.scope_of(ctx.session)
        return TaskRecord(
            task_id=secrets.token_urlsafe(24),  # 192 random bits: unguessable, and plain ASCII for Mcp-Name
            status="working",
            created_at=now,
            updated_at=now,
            ttl_ms=plan.ttl_ms,
            poll_interval_ms=self.options.poll_interval_ms,
            version=ctx.protocol_version,
            method=spec.method,
            owner=owner,
            scope=scope,
        )

    def scope_of(self, session: ServerSession) -> str:
        found = self._scopes.get(session)
        if found is None:
            found = self._scopes[session] = secrets.token_hex(16)
        return found

    async def created(self, ctx: RequestContext, record: TaskRecord) -> None:
        """Store a new task (readable everywhere once this returns) and remember who to tell of it."""
        await self.store.create(record)
        if self.extension(record.version) is None:
            self._sessions[record.task_id] = ctx.session  # 2025-11-25: status notifications to its session
        self._changed(record)

    async def find(self, ctx: RequestContext, task_id: str) -> TaskRecord:
        """The task `task_id` as its creator may see it; -32602 for an unknown, expired or
        someone else's task (the three are told apart by nobody)."""
        record = await self.store.get(task_id)
        if record is None or not record.visible_to(principal_of(ctx.auth)):
            raise InvalidParams("Failed to retrieve task: Task not found", data={"taskId": task_id})
        return record

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        """Change a task atomically and announce the change (here and, through the store, elsewhere)."""
        record, changed = await self.store.update(task_id, change)
        if record is not None and changed:
            self._changed(record)
        return record, changed

    async def cancel(
        self, task_id: str, message: str = "The task was cancelled by request."
    ) -> tuple[TaskRecord | None, bool]:
        """Move a task that has not finished to `cancelled` (the process running it stops it)."""

        def cancel(record: TaskRecord) -> bool:
            if record.terminal:
                return False
            record.status, record.status_message = CANCELLED, message
            record.requests, record.answers, record.schemas = {}, {}, {}
            record.updated_at = time.time()
            return True

        return await self.update(task_id, cancel)

    async def wait_for(self, task_id: str, done: Callable[[TaskRecord | None], bool]) -> TaskRecord | None:
        """Wait until the task satisfies `done` (None: it is gone); its record then."""
        with self.signals.watching(task_id) as signal:
            while True:
                fired = signal()
                record = await self.store.get(task_id)
                if done(record):
                    return record
                with anyio.move_on_after(RECHECK_SECONDS):
                    await fired.wait()

    # -- announcing -----------------------------------------------------------------------------

    def _changed(self, record: TaskRecord) -> None:
        """A task changed (here or in another process): wake its waiters, tell who listens."""
        self.signals.fire(record.task_id)
        for stream in list(self._streams.get(record.task_id, ())):
            stream.push(TaskNotice(record))
        session = self._sessions.get(record.task_id)
        if session is not None:
            if not session.closed:
                session.push("notifications/tasks/status", legacy_view(record))
            if record.terminal:
                self._sessions.pop(record.task_id, None)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hear the changes other processes make to tasks (a shared store), until cancelled."""
        try:
            await self.store.run(self._changed, task_status=task_status)
        except Exception:
            log.exception("the task store's change feed failed; changes made by other processes no longer arrive")

    # -- listen streams (`notifications/tasks`) --------------------------------------------------

    async def listen_for(self, ctx: RequestContext, wanted: Any, honoured: dict[str, Any]) -> frozenset[str]:
        """The task ids a `subscriptions/listen` request asks to hear about and may: put in
        `honoured` (`taskIds`). -32021 when the request did not declare the extension."""
        # the filter as on the wire (`serve_listen` reads it so); a model's unknown keys otherwise
        extra = wanted if isinstance(wanted, Mapping) else (getattr(wanted, "model_extra", None) or {})
        asked = extra.get("taskIds")
        ext = self.extension(ctx.protocol_version)
        if asked is None or ext is None or not self.active:
            return frozenset()
        if not ext.declared_in(ctx.client_capabilities):
            raise MissingClientCapability(
                f"Missing required client capability: task status notifications need the {EXTENSION} extension",
                data={"requiredCapabilities": nested_keys(ext.capability)},
            )
        if not isinstance(asked, list) or not all(isinstance(i, str) for i in asked):
            raise InvalidParams("notifications.taskIds must be a list of task ids")
        owner = principal_of(ctx.auth)
        agreed = []
        for task_id in dict.fromkeys(asked):
            record = await self.store.get(task_id)
            if record is not None and record.visible_to(owner):
                agreed.append(task_id)
        honoured["taskIds"] = agreed
        return frozenset(agreed)

    async def attach(self, stream: ListenStream) -> None:
        """Send a listen stream the changes of its tasks, starting with each one's state now."""
        for task_id in stream.task_ids:
            self._streams.setdefault(task_id, set()).add(stream)
        for task_id in stream.task_ids:
            record = await self.store.get(task_id)
            if record is not None:
                stream.push(TaskNotice(record))

    def detach(self, stream: ListenStream) -> None:
        for task_id in stream.task_ids:
            streams = self._streams.get(task_id)
            if streams is not None:
                streams.discard(stream)
                if not streams:
                    del self._streams[task_id]
