"""The client: connect, negotiate a protocol version, and call what the server offers.

    async with Client(["python", "server.py"]) as client:     # stdio; or Client(stdio([...], env=...)),
        print(client.protocol_version, client.server_info)   # Client("https://host/mcp", auth=...),
                                                             # Client(transport), Client(connector)
        async for tool in client.tools():
            ...
        result = await client.call_tool("add", {"a": 1, "b": 2})

Negotiation (`mode`) is described in `negotiation`. Every call is checked against the
negotiated version's table before anything is sent: the method must exist and be ours to send,
the server must have advertised the capability that gates it (`CapabilityError` otherwise), the
params must validate. Results come back as the version's models; structured tool output is
checked against the tool's `outputSchema`.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import ModuleType
from typing import Any

import anyio
from pydantic import BaseModel
from typing_extensions import Unpack

from ..core.correlation import ProgressCallback
from ..core.memory import InProcess
from ..core.session import DEFAULT, Timeout
from ..core.stdio import stdio
from ..core.telemetry import instrument
from ..core.transport import Connector, Servable, Transport
from ..core.worker import call
from ..protocol.capabilities import merge_capabilities
from ..protocol.errors import ConnectionClosed
from ..protocol.keys import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
)
from ..protocol.negotiation import AUTO, HANDSHAKE_MODE, LEGACY_MODE
from ..protocol.tables import VersionRegistry
from .calls import OutputChecker, TypedCalls
from .eras import EraSpeaking, tables_for
from .input import InputAnswerer, check_callback, root
from .negotiation import negotiate
from .options import (
    ClientAdvertising,
    ClientChecks,
    ClientHooks,
    ClientLimits,
    DeprecatedClientOptions,
    ElicitationHandler,
    InputHandlers,
    OutgoingRequest,
    SamplingHandler,
    Timeouts,
    resolve_client_options,
)
from .requests import RequestPipeline
from .session import ClientSession
from .subscriptions import Event, ListenRequest, Subscription
from .tasks import EXTENSION as TASKS_EXTENSION
from .tasks import ClientTasks, TaskCancelled, TaskState, ToolTask

log = logging.getLogger("mcpgen.runtime.client")

DEFAULT_CLIENT_INFO = {"name": "mcpgen", "version": "0.1.0"}
Target = Transport | Connector | Servable | Sequence[str] | str


def connector_for(
    target: Target, *, auth: Any = None, timeout: float | None = None, registry: VersionRegistry | None = None
) -> Transport | Connector:
    """What `Client(target)` connects through: a transport, a connector, a `Server` (served in this
    process), a command list (stdio) or a URL (Streamable HTTP; `auth` is an `httpx.Auth` for it,
    `timeout` bounds closing the connection, `registry` the tables its routing headers follow)."""
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        from .http.connector import http

        return http(target, auth=auth, close_timeout=timeout, registry=registry)
    if auth is not None:
        raise TypeError("auth= applies to a server URL; give it to the connector instead, e.g. http(url, auth=...)")
    if isinstance(target, Transport):
        return target
    if isinstance(target, Servable) and not isinstance(target, Connector):
        return InProcess(target)  # a Server: served in this process for the client's lifetime
    if isinstance(target, Connector):
        return target
    if isinstance(target, str):
        raise TypeError(
            f"Client({target!r}): a server command is a list of arguments, e.g. Client({target.split()!r}); "
            'a remote server is a URL, e.g. Client("http://localhost:8000/mcp")'
        )
    return stdio(target)


class Client(TypedCalls):
    """An MCP client for one server (see the module docstring).

    - `server`: a URL (Streamable HTTP), a command list (stdio), a `Server` (served in this
      process), a transport or a connector;
    - `mode`: `"auto"` (the newest version both sides speak), `"handshake"` (the handshake era
      only) or a version to pin;
    - `versions`: the versions this client may speak (default: every version of the registry);
      `registry`: the generated tree to speak with (default: the one mcpgen ships);
    - `auth`: an `httpx.Auth` (such as the OAuth flows of `mcpgen.runtime.auth`) for a URL;
    - the groups: `advertising` (`ClientAdvertising`: the client's info, capabilities,
      extensions, log level, and whether it accepts tasks), `inputs` (`InputHandlers`: sampling,
      elicitation, roots, the input driver), `timeouts` (`Timeouts`), `checks` (`ClientChecks`:
      output checks, accepted versions, pages, message size, input rounds), `hooks`
      (`ClientHooks`: change, log and notification callbacks, a hook around every request sent,
      OpenTelemetry).

    The keywords these groups replace (`client_info=`, `capabilities=`, `extensions=`,
    `log_level=`, `tasks=`, `telemetry=`, `limits=`, `request_timeout=`, ...) still work for one
    release, with a `DeprecationWarning`.
    """

    def __init__(  # noqa: PLR0913 - the grouped options (see the class docstring)
        self,
        server: Target,
        *,
        mode: str = "auto",
        versions: Iterable[str] | None = None,
        registry: VersionRegistry | ModuleType | None = None,
        auth: Any = None,
        advertising: ClientAdvertising | None = None,
        inputs: InputHandlers | None = None,
        timeouts: Timeouts | None = None,
        checks: ClientChecks | None = None,
        hooks: ClientHooks | None = None,
        **deprecated: Unpack[DeprecatedClientOptions],
    ) -> None:
        options = resolve_client_options(
            {"advertising": advertising, "inputs": inputs, "timeouts": timeouts, "checks": checks, "hooks": hooks},
            deprecated,
        )
        declared = options.advertising
        self.registry, self.eras, self.speaking = tables_for(
            registry if isinstance(registry, VersionRegistry) or registry is None else VersionRegistry(registry)
        )
        self.versions = self.registry.check_versions(versions)
        if mode == LEGACY_MODE:
            warnings.warn(
                f"Client(mode={LEGACY_MODE!r}) is deprecated; use mode={HANDSHAKE_MODE!r}",
                DeprecationWarning,
                stacklevel=2,
            )
            mode = HANDSHAKE_MODE
        if mode not in (AUTO, HANDSHAKE_MODE) and mode not in self.versions:
            raise ValueError(f"mode must be 'auto', 'handshake' or one of {list(self.versions)}, not {mode!r}")
        hooks_ = options.hooks
        check_callback("ClientHooks.on_list_changed", hooks_.on_list_changed, 1)
        check_callback("ClientHooks.on_resource_updated", hooks_.on_resource_updated, 1)
        check_callback("ClientHooks.on_log", hooks_.on_log, 3)
        check_callback("ClientHooks.on_notification", hooks_.on_notification, 2)
        check_callback("ClientHooks.on_request", hooks_.on_request, 2)
        self.mode = mode
        self.target = connector_for(server, auth=auth, timeout=options.timeouts.request, registry=self.registry)
        self.advertising = declared
        """What the client declares to the server (`ClientAdvertising`), as given."""
        self.client_info = dict(declared.info or DEFAULT_CLIENT_INFO)
        self._capability_overrides = declared.capabilities
        self.extensions = {k: dict(v) for k, v in (declared.extensions or {}).items()}
        if declared.tasks:
            self.extensions.setdefault(TASKS_EXTENSION, {})  # the extension's opt-in, on every request
        self.tasks = ClientTasks(self, declared.tasks)
        """The client's side of tasks (`attach(task_id)` takes a task up again by its id)."""
        self.log_level = declared.log_level
        self.timeouts = options.timeouts
        self.hooks = hooks_
        self.checks = options.checks
        self.telemetry = instrument(hooks_.telemetry, "client")
        self.inputs = InputAnswerer(self, options.inputs, options.checks.max_input_rounds)
        self.output_checker = OutputChecker(self) if options.checks.structured_output else None
        self.requests = RequestPipeline(self)
        self._session: ClientSession | None = None
        self.server_info: dict[str, Any] | None = None
        """The server's name, version (and title) as it gave them when connecting."""
        self.server_capabilities: dict[str, Any] | None = None
        """What the server offers, as it said when connecting (`tools`, `resources`, ...)."""
        self.instructions: str | None = None
        """The server's instructions for the model, if it gave any."""
        self._stack: AsyncExitStack | None = None
        self.last_bad_frames = 0  # non-JSON lines the server wrote on the last connection
        """How many lines that were not JSON-RPC the server wrote on the last connection (stdio)."""

    # -- state -----------------------------------------------------------------------------------

    @property
    def session(self) -> ClientSession:
        """The connection's session (`ConnectionClosed` when not connected)."""
        if self._session is None:
            raise ConnectionClosed("the client is not connected (use `async with Client(...)`)")
        return self._session

    @property
    def connected(self) -> bool:
        return self._session is not None and not self._session.closed

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version."""
        return self.session.version or ""

    @property
    def era(self) -> str:
        """The era of the negotiated version, as the tables name it (`handshake` or `modern`)."""
        return self.registry.era(self.protocol_version)

    @property
    def speaks(self) -> EraSpeaking:
        """How this client speaks the negotiated version's era."""
        era = self.session.era
        if era is None:
            raise ConnectionClosed("no version has been negotiated yet")
        return era

    @property
    def limits(self) -> ClientLimits:
        """Deprecated: the limits are `checks` (`ClientChecks`) fields now."""
        warnings.warn(
            "Client.limits is deprecated; use Client.checks (max_pages, max_message_bytes, max_input_rounds)",
            DeprecationWarning,
            stacklevel=2,
        )
        checks = self.checks
        return ClientLimits(
            max_pages=checks.max_pages,
            max_message_bytes=checks.max_message_bytes,
            max_input_rounds=checks.max_input_rounds,
        )

    @property
    def roots(self) -> list[dict[str, Any]] | None:
        return self.inputs.roots

    def capabilities(self, version: str | None = None) -> dict[str, Any]:
        """What this client declares (for `version`, default the negotiated one): inferred from its
        handlers and roots, unless `ClientAdvertising.capabilities` was given, which wins outright
        (an empty mapping declares nothing)."""
        if self._capability_overrides is not None:
            return merge_capabilities({}, self._capability_overrides)
        if version is None and self._session is not None:
            version = self._session.version
        caps = self.inputs.capabilities(self.registry.methods(version) if version else {})
        if self.extensions and version is not None:
            method, path = self.eras.of(version).client_capabilities_at
            if self.registry.has_field(version, method, (*path, "extensions")):
                caps["extensions"] = {k: dict(v) for k, v in self.extensions.items()}
        return caps

    def request_meta(self, version: str) -> dict[str, Any]:
        """The `_meta` a modern request carries for `version` (its version, this client's
        capabilities and info, and the log level asked for)."""
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_CAPABILITIES_KEY: self.capabilities(version),
            CLIENT_INFO_KEY: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL_KEY] = self.log_level
        return meta

    def initialize_params(self, version: str) -> dict[str, Any]:
        """The params of a handshake-era `initialize` request offering `version`."""
        return {"protocolVersion": version, "capabilities": self.capabilities(version), "clientInfo": self.client_info}

    # -- connecting ----------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        session: ClientSession | None = None
        try:
            target = self.target
            transport = target if isinstance(target, Transport) else await stack.enter_async_context(target.connect())
            options: dict[str, Any] = {"request_timeout": self.timeouts.request}
            if self.checks.max_message_bytes:
                options["max_message_bytes"] = self.checks.max_message_bytes
            session = ClientSession(self, transport, **options)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            await tg.start(session.run)
            self._session = session
            await self.connect_session()
        except BaseException:
            if session is not None:
                self.last_bad_frames = session.bad_frames
            self._session = None
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            self.last_bad_frames = self._session.bad_frames
        stack, self._stack = self._stack, None
        session, self._session = self._session, None
        if session is not None and session.transport is not None:
            with contextlib.suppress(Exception):
                await session.transport.send.aclose()  # the peer sees the end of the connection
        if stack is not None:
            # The body's errors propagate as they are: our task group is cancelled, never handed them.
            await stack.__aexit__(None, None, None)

    async def connect_session(self) -> None:
        """Negotiate a version on the connection (again, after the server ended a session)."""
        started = anyio.current_time()
        adopted = await negotiate(self)
        # A modern pin sent nothing, so nothing says a server on a stream (a process it spawned) is
        # up yet: its first calls may wait out its start, within the start-up time (a slow start is
        # not a slow answer). Over HTTP a server that is not up refuses the connection at once.
        waits = adopted.answer is None and not self.session.context.request_scoped
        self.requests.starting(started + self.timeouts.startup_or_default if waits else None)
        session = self.session
        session.version = adopted.version
        session.era = self.speaking[self.registry.era(adopted.version)]
        answer = adopted.answer or {}
        if adopted.answer is not None:
            caps = answer.get("capabilities")
            self.server_capabilities = caps if isinstance(caps, dict) else {}
            instructions = answer.get("instructions")
            self.instructions = instructions if isinstance(instructions, str) else None
            agreed = answer.get("protocolVersion")
            if isinstance(agreed, str) and agreed != adopted.version:
                log.warning("the server speaks protocol %s; talking to it with %s messages", agreed, adopted.version)
            meta = answer.get("_meta")
            info = answer.get("serverInfo", meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None)
            self.server_info = info if isinstance(info, dict) else None
        await session.era.finish_connecting(self)

    # -- calls -----------------------------------------------------------------------------------

    def spec(self, method: str) -> Any:
        """The table row of `method` for the negotiated version, checked as ours to send."""
        return self.requests.spec(method)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | BaseModel | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
    ) -> Any:
        """Send any request of the negotiated version's table; returns its result model.

        `method` is the method's name (`tools/call`, ...), `params` its params (a mapping or a
        model), `timeout` seconds to wait (default: `Timeouts.request`; None: no limit), and
        `progress` a callback for the progress notifications the server sends for it.

        For methods that may need input (MRTR), the driver answers input requests with this
        client's handlers and retries. With `resolve_input=False` the `InputRequiredResult` is
        returned instead, and `retry()` sends your own answers; a client made with
        `InputHandlers(drive=False)` never answers by itself (`InputError` unless
        `resolve_input=False`).

        Fails before sending (`CapabilityError`) if the method is not ours to send or the server
        did not advertise the capability that gates it, and (`InvalidParams`) if the params do
        not validate. Sent once more, after the fix, when the server ended the session
        (`SessionExpired`: a new session first) or refused the version (`UnsupportedProtocolVersion`
        listing another version of the same era).
        """
        return await self.requests.request(
            method, params, timeout=timeout, progress=progress, resolve_input=resolve_input
        )

    async def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Check that the server is alive, on any version: `ping` where the version has it (the
        handshake era), else the request every server of the version answers (`server/discover`).

        Args:
            timeout: seconds to wait for the answer (default: `Timeouts.request`; None: no limit).

        Raises:
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
            McpError: the server answered with an error.
        """
        await self.speaks.ping(self, timeout)

    async def retry(
        self, method: str, params: Mapping[str, Any] | None, result: Any, responses: Mapping[str, Any]
    ) -> Any:
        """With the driver off: send the retry of `method` for an `InputRequiredResult`, with your own answers.

        Args:
            method: the method of the first request (e.g. `tools/call`).
            params: its params, as first sent.
            result: the `InputRequiredResult` the server answered with.
            responses: your answer per key of `result.input_requests` (see `fulfil`).

        Returns:
            The server's next answer: the method's result, or another `InputRequiredResult`.
        """
        return await self.requests.retry(method, params, result, responses)

    async def fulfil(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Answer input requests with this client's handlers (what the driver does each round).

        Args:
            requests: the `input_requests` of an `InputRequiredResult` (key -> request).

        Returns:
            The answer per key, ready for `retry`.

        Raises:
            MissingInputHandler: a request needs a handler this client was not given.
        """
        return await self.inputs.fulfil(requests)

    # -- roots, logging, change notifications ----------------------------------------------------------

    async def add_roots(self, *roots: Mapping[str, Any] | str) -> None:
        """Add roots; a handshake-era server that was told `roots.listChanged` hears about it."""
        self.inputs.roots = [*(self.inputs.roots or []), *(root(r) for r in roots)]
        await self._roots_changed()

    async def remove_roots(self, *uris: str) -> None:
        """Remove the roots with these URIs; a handshake-era server that was told `roots.listChanged` hears about it."""
        self.inputs.roots = [r for r in (self.inputs.roots or []) if r["uri"] not in uris]
        await self._roots_changed()

    async def _roots_changed(self) -> None:
        if self._session is not None and self._session.era is not None:
            await self._session.era.roots_changed(self)

    async def set_log_level(self, level: str) -> None:
        """Ask for log messages from `level` up (handshake era: `logging/setLevel`; modern: the
        level every later request carries)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {LOG_LEVELS}")
        self.log_level = level
        await self.speaks.set_log_level(self, level)

    async def on_event(self, event: Event) -> None:
        """Run the change callbacks (`ClientHooks`) for one `event` (on the session's callback worker)."""
        if event.kind == "resource":
            if self.hooks.on_resource_updated is not None:
                await call(self.hooks.on_resource_updated, event.uri)
        elif self.hooks.on_list_changed is not None:
            await call(self.hooks.on_list_changed, event.kind)
        if event.kind == "tools":
            if self.output_checker is not None:
                self.output_checker.forget()
            self.tasks.forget()

    def listen(
        self, *, tools: bool = False, prompts: bool = False, resources: bool = False, resource_uris: Iterable[str] = ()
    ) -> AbstractAsyncContextManager[Subscription]:
        """Receive change notifications: a `subscriptions/listen` stream on a modern connection,
        `resources/subscribe` plus pushed list-changed notifications on a handshake-era one.
        `sub.honoured` says what the server agreed to send.

        Args:
            tools: hear when the tool list changes.
            prompts: hear when the prompt list changes.
            resources: hear when the resource list changes.
            resource_uris: hear when these resources change.

        Returns:
            An async context manager: the `Subscription` while open; leaving it ends the stream.
        """
        kinds = tuple(kind for flag, kind in ((tools, "tools"), (prompts, "prompts"), (resources, "resources")) if flag)
        return self.speaks.listen(self, ListenRequest(kinds, tuple(sorted(set(resource_uris)))))


__all__ = [
    "Client",
    "ClientAdvertising",
    "ClientChecks",
    "ClientHooks",
    "ClientLimits",
    "ClientSession",
    "ElicitationHandler",
    "Event",
    "InputHandlers",
    "OutgoingRequest",
    "SamplingHandler",
    "Subscription",
    "TaskCancelled",
    "TaskState",
    "Timeouts",
    "ToolTask",
    "connector_for",
]
