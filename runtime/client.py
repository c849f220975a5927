"""The client: connect, negotiate a protocol version, and call what the server offers.

    async with Client(["python", "server.py"]) as client:          # stdio; or Client(transport)
        print(client.protocol_version, client.server_info)
        async for tool in client.tools():
            ...
        result = await client.call_tool("add", {"a": 1, "b": 2})

Negotiation (`mode`): `"auto"` probes `server/discover` with the newest modern version, takes
the newest mutual version from a `DiscoverResult` (or from the `supported` list of a -32022
error, then probes again), and falls back to the `initialize` handshake on any other error or
no answer within `probe_timeout`; `"legacy"` runs the handshake directly (accepting a
counter-offer only if we support it); a version string pins that version (a modern pin sends
no negotiation traffic; a handshake-era pin runs `initialize` for exactly that version).

Every call is checked against the negotiated version's table before anything is sent: the
method must exist and be ours to send, and the server must have advertised the capability
that gates it (`CapabilityError` otherwise). Results come back as the version's models.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from .errors import (
    MODERN_ERROR_CODES,
    CapabilityError,
    ConnectionClosed,
    ElicitationError,
    InputRoundsExceeded,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingInputHandler,
    NegotiationError,
    ProtocolError,
    RequestTimeout,
    UnsupportedProtocolVersion,
)
from .mrtr import apply_elicitation, gather
from .protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    Protocol,
    gate_allows,
    has_capability,
    merge_capabilities,
    validation_detail,
)
from .session import DEFAULT, IncomingRequest, ProgressCallback, Session, _Default
from .transport import Transport, stdio_client

log = logging.getLogger("mcpgen.runtime.client")

Callback = Callable[..., Awaitable[None] | None]
RequestHandler = Callable[..., Awaitable[Any] | Any]
DEFAULT_CLIENT_INFO = {"name": "mcpgen", "version": "0.1.0"}


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass(frozen=True)
class Event:
    """A change the server announced: `kind` is `tools`, `prompts`, `resources` (list changed)
    or `resource` (the resource `uri` was updated)."""

    kind: str
    uri: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


class Subscription:
    """Events of one `listen()`; iterate it (`async for event in sub`)."""

    def __init__(self, honoured: Mapping[str, Any] | None = None) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Event](1000)
        self.honoured: Mapping[str, Any] = honoured or {}
        self.acknowledged = anyio.Event()
        self.id: str | int | None = None
        self.error: BaseException | None = None

    def _push(self, event: Event) -> None:
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            log.warning("listen subscription is not being read; dropped %s", event)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _end(self) -> None:
        self._send.close()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._receive.__aiter__()

    async def next(self, timeout: float | None = None) -> Event:
        with anyio.fail_after(timeout):
            return await self._receive.receive()


class ClientSession(Session):
    """The client end of one connection."""

    side = "client"

    def __init__(self, client: Client, transport: Transport, **options: Any) -> None:
        super().__init__(transport, **options)
        self.client = client
        self.version: str | None = None
        self.modern = False
        self.listens: dict[str | int, Subscription] = {}

    def on_closed(self) -> None:
        for sub in list(self.listens.values()):
            sub._end()

    def can_cancel(self, method: str) -> bool:
        if self.version is None or method == "initialize":
            return False
        spec = self.client.protocol.methods(self.version).get("notifications/cancelled")
        return spec is not None and spec.direction.allows("client")

    async def handle_request(self, request: IncomingRequest) -> Any:
        if self.version is None or self.modern:
            raise MethodNotFound(f"method not found: {request.method} (servers send no requests in this era)")
        spec = self.client.protocol.methods(self.version).get(request.method)
        if spec is None or spec.kind.value != "request" or not spec.direction.allows("server"):
            raise MethodNotFound(f"method not found: {request.method}")
        if spec.capability is not None and spec.capability.side in ("client", "receiver"):
            if not gate_allows(self.client.capabilities(), spec.capability, request.params):
                path = spec.capability.path_for(request.params)
                if spec.capability.param is not None and has_capability(
                    self.client.capabilities(), spec.capability.path
                ):
                    raise InvalidParams(f"{request.method}: this client did not declare {path}")
                raise MethodNotFound(f"method not found: {request.method} (this client does not declare {path})")
        if request.method not in self.client.request_handlers:
            raise MethodNotFound(f"method not found: {request.method}")
        return await self.client.answer(spec, request.params)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        params = params or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        subscription_id = meta.get(SUBSCRIPTION_ID_KEY) if meta else None
        stream = self.listens.get(subscription_id) if isinstance(subscription_id, (str, int)) else None
        if method == "notifications/subscriptions/acknowledged":
            if stream is not None:
                honoured = params.get("notifications")
                stream.honoured = honoured if isinstance(honoured, dict) else {}
                stream.acknowledged.set()
            return
        if method == "notifications/cancelled":
            target = params.get("requestId")
            ended = self.listens.get(target) if isinstance(target, (str, int)) else None
            if ended is not None:
                ended._end()
            return
        event = _event_for(method, params)
        if event is not None:
            if stream is not None:
                stream._push(event)
            elif not self.modern:
                for sub in self.listens.values():
                    if _legacy_wants(sub, event):
                        sub._push(event)
            self.defer(self.client._on_event, event)
            return
        if method == "notifications/message":
            callback = self.client.on_log
            if callback is not None:
                self.defer(callback, params.get("level"), params.get("data"), params.get("logger"))


def _root(root: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(root, str):
        return {"uri": root}
    if "uri" not in root:
        raise ValueError(f"a root needs a uri: {root!r}")
    return dict(root)


def _needs_input(result: Any) -> bool:
    return getattr(result, "result_type", None) == "input_required"


def _event_for(method: str, params: Mapping[str, Any]) -> Event | None:
    if method.endswith("/list_changed") and method.startswith("notifications/"):
        kind = method[len("notifications/") : -len("/list_changed")]
        if kind in ("tools", "prompts", "resources"):
            return Event(kind, None, params)
    if method == "notifications/resources/updated":
        uri = params.get("uri")
        return Event("resource", uri if isinstance(uri, str) else None, params)
    return None


def _legacy_wants(sub: Subscription, event: Event) -> bool:
    wanted = sub.honoured
    if event.kind == "resource":
        uri = event.uri or ""
        return any(uri == s or uri.startswith(s.rstrip("/") + "/") for s in wanted.get("resourceSubscriptions") or [])
    return bool(wanted.get(f"{event.kind}ListChanged"))


class Client:
    """An MCP client for one server (see the module docstring)."""

    def __init__(
        self,
        server: Transport | Sequence[str],
        *,
        mode: str = "auto",
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        registry: Protocol | ModuleType | None = None,
        versions: Iterable[str] | None = None,
        request_timeout: float | None = 60.0,
        probe_timeout: float = 3.0,
        log_level: str | None = None,
        on_list_changed: Callback | None = None,
        on_resource_updated: Callback | None = None,
        on_log: Callback | None = None,
        roots: Iterable[Mapping[str, Any] | str] | None = None,
        sampling_handler: RequestHandler | None = None,
        sampling_tools: bool = False,
        elicitation_handler: RequestHandler | None = None,
        elicitation_modes: Iterable[str] = ("form",),
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        mrtr: bool = True,
        max_input_rounds: int = 10,
        state_only_pause: float = 0.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        self.protocol = registry if isinstance(registry, Protocol) else Protocol(registry)
        self.versions = self.protocol.check_versions(versions)
        if mode not in ("auto", "legacy") and mode not in self.versions:
            raise ValueError(f"mode must be 'auto', 'legacy' or one of {list(self.versions)}, not {mode!r}")
        if log_level is not None and log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {LOG_LEVELS}")
        self.mode = mode
        self._server = server
        self.client_info = dict(client_info or DEFAULT_CLIENT_INFO)
        self._capability_overrides = capabilities
        self.request_timeout = request_timeout
        self.probe_timeout = probe_timeout
        self.log_level = log_level
        self.on_list_changed = on_list_changed
        self.on_resource_updated = on_resource_updated
        self.on_log = on_log
        self._env, self._cwd, self._stderr = env, cwd, stderr
        self._max_message_bytes = max_message_bytes
        self.roots: list[dict[str, Any]] | None = None if roots is None else [_root(r) for r in roots]
        self.sampling_handler = sampling_handler
        self.sampling_tools = sampling_tools
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = tuple(elicitation_modes)
        unknown_modes = set(self.elicitation_modes) - {"form", "url"}
        if unknown_modes:
            raise ValueError(f"unknown elicitation modes {sorted(unknown_modes)}; use 'form' and/or 'url'")
        self.extensions = {k: dict(v) for k, v in (extensions or {}).items()}
        self.mrtr = mrtr
        self.max_input_rounds = max_input_rounds
        self.state_only_pause = state_only_pause
        # What answers server->client requests (legacy) and input requests (MRTR): the same handlers.
        self.request_handlers: dict[str, RequestHandler] = {
            "ping": lambda params: {},
            "roots/list": self._answer_roots,
            "sampling/createMessage": self._answer_sampling,
            "elicitation/create": self._answer_elicitation,
        }
        self.session: ClientSession | None = None
        self.server_info: dict[str, Any] | None = None
        self.server_capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self._stack: AsyncExitStack | None = None
        self.last_bad_frames = 0  # non-JSON lines the server wrote on the last connection

    # -- connection ----------------------------------------------------------------------------

    @property
    def protocol_version(self) -> str:
        return self._session().version or ""

    @property
    def era(self) -> str:
        return self.protocol.era(self.protocol_version)

    def capabilities(self, version: str | None = None) -> dict[str, Any]:
        """What this client declares (for `version`, default the negotiated one): inferred from its
        handlers and roots, unless `capabilities=` was given, which wins outright (an empty mapping
        declares nothing)."""
        if self._capability_overrides is not None:
            return merge_capabilities({}, self._capability_overrides)
        caps: dict[str, Any] = {}
        if version is None:
            version = self.session.version if self.session is not None else None
        table = self.protocol.methods(version) if version else {}
        if self.roots is not None:
            notify = table.get("notifications/roots/list_changed")
            caps["roots"] = {"listChanged": True} if notify is not None and notify.direction.allows("client") else {}
        if self.sampling_handler is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation_handler is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.extensions and version is not None:
            fields = getattr(getattr(self.protocol.models(version), "ClientCapabilities", None), "model_fields", {})
            if "extensions" in fields:
                caps["extensions"] = {k: dict(v) for k, v in self.extensions.items()}
        return caps

    def _session(self) -> ClientSession:
        if self.session is None:
            raise ConnectionClosed("the client is not connected (use `async with Client(...)`)")
        return self.session

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        session: ClientSession | None = None
        try:
            if isinstance(self._server, Transport):
                transport = self._server
            else:
                command = list(self._server)
                if not command:
                    raise ValueError("an empty command")
                transport = await stack.enter_async_context(
                    stdio_client(command[0], command[1:], env=self._env, cwd=self._cwd, stderr=self._stderr)
                )
            options: dict[str, Any] = {"request_timeout": self.request_timeout}
            if self._max_message_bytes:
                options["max_message_bytes"] = self._max_message_bytes
            session = ClientSession(self, transport, **options)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            await tg.start(session.run)
            self.session = session
            await self._negotiate()
        except BaseException:
            if session is not None:
                self.last_bad_frames = session.bad_frames
            self.session = None
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.session is not None:
            self.last_bad_frames = self.session.bad_frames
        stack, self._stack = self._stack, None
        session, self.session = self.session, None
        if session is not None:
            with contextlib.suppress(Exception):
                await session.transport.send.aclose()  # the peer sees the end of the connection
        if stack is not None:
            # Errors of the `async with` body propagate as they are, not wrapped by our task group.
            await stack.__aexit__(None, None, None)

    # -- negotiation -----------------------------------------------------------------------------

    async def _negotiate(self) -> None:
        if self.mode == "legacy":
            handshake = self.protocol.handshake_versions(self.versions)
            if not handshake:
                raise NegotiationError("mode='legacy' needs a handshake-era version among the client's versions")
            await self._initialize(self.protocol.newest_first(handshake)[0], exact=False)
        elif self.mode == "auto":
            await self._auto()
        elif self.protocol.is_modern(self.mode):
            self._adopt(self.mode, None)
        else:
            await self._initialize(self.mode, exact=True)

    def _adopt(self, version: str, discover: Mapping[str, Any] | None) -> None:
        session = self._session()
        session.version = version
        session.modern = self.protocol.is_modern(version)
        if discover is not None:
            caps = discover.get("capabilities")
            self.server_capabilities = caps if isinstance(caps, dict) else {}
            instructions = discover.get("instructions")
            self.instructions = instructions if isinstance(instructions, str) else None
            meta = discover.get("_meta")
            info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
            self.server_info = info if isinstance(info, dict) else None

    async def _auto(self) -> None:
        modern = self.protocol.newest_first(self.protocol.modern_versions(self.versions))
        handshake = self.protocol.newest_first(self.protocol.handshake_versions(self.versions))
        if not modern:
            await self._initialize(handshake[0], exact=False)
            return
        probe = modern[0]
        for _ in range(3):
            try:
                raw = await self._session().send_request(
                    "server/discover", {"_meta": self._meta(probe)}, timeout=self.probe_timeout
                )
            except UnsupportedProtocolVersion as exc:
                choice = self.protocol.newest_mutual(exc.supported, self.versions)
                if choice is None:
                    raise NegotiationError(
                        f"no protocol version in common: the server supports {exc.supported}, "
                        f"we support {list(self.versions)}"
                    ) from exc
                if self.protocol.is_modern(choice) and choice != probe:
                    probe = choice
                    continue
                if not self.protocol.is_modern(choice):
                    await self._initialize(choice, exact=False)
                    return
                raise NegotiationError(f"the server refused {probe} but lists it as supported") from exc
            except (McpError, RequestTimeout) as exc:
                if isinstance(exc, McpError) and exc.code in MODERN_ERROR_CODES:
                    raise NegotiationError(
                        f"the server is a modern server but refused server/discover: {exc}; "
                        "not falling back to initialize"
                    ) from exc
                await self._fall_back(handshake, exc)
                return
            spec = self.protocol.methods(probe)["server/discover"]
            try:
                spec.parse_result(raw)
                if not isinstance(raw, dict) or "resultType" not in raw:
                    raise ValueError("no resultType: not a modern server")
            except (ValidationError, ValueError) as exc:
                await self._fall_back(handshake, exc)
                return
            offered = [v for v in raw.get("supportedVersions", []) if isinstance(v, str)]
            choice = self.protocol.newest_mutual(offered, self.versions)
            if choice is None:
                raise NegotiationError(
                    f"no protocol version in common: the server supports {offered}, we support {list(self.versions)}"
                )
            if self.protocol.is_modern(choice):
                self._adopt(choice, raw)
            else:
                await self._initialize(choice, exact=False)
            return
        raise NegotiationError("the server kept refusing the versions it listed as supported")

    async def _fall_back(self, handshake: list[str], reason: Exception) -> None:
        """Anything but a recognised modern answer to the probe means a handshake-era server."""
        if not handshake:
            raise NegotiationError(
                f"the server is not a modern server ({reason}) and we support no handshake version"
            ) from reason
        log.debug("server/discover failed (%s); falling back to initialize", reason)
        await self._initialize(handshake[0], exact=False)

    async def _initialize(self, version: str, *, exact: bool) -> None:
        session = self._session()
        params = {
            "protocolVersion": version,
            "capabilities": self.capabilities(version),
            "clientInfo": self.client_info,
        }
        try:
            raw = await session.send_request("initialize", params)
        except McpError as exc:
            raise NegotiationError(
                f"the server refused initialize for {version}: {exc} {exc.data or ''}".rstrip()
            ) from exc
        offered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        acceptable = [version] if exact else self.protocol.handshake_versions(self.versions)
        if offered not in acceptable:
            raise NegotiationError(
                f"the server answered initialize with protocol version {offered!r}; this client supports {acceptable}"
            )
        assert isinstance(offered, str)
        try:
            self.protocol.methods(offered)["initialize"].parse_result(raw)
        except ValidationError as exc:
            raise NegotiationError(f"invalid initialize result: {validation_detail(exc)}") from exc
        session.version = offered
        session.modern = False
        caps = raw.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = raw.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else None
        instructions = raw.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        await session.send_notification("notifications/initialized")
        if self.log_level is not None and has_capability(self.server_capabilities, "logging"):
            await self.request("logging/setLevel", {"level": self.log_level})

    def _meta(self, version: str) -> dict[str, Any]:
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_CAPABILITIES_KEY: self.capabilities(version),
            CLIENT_INFO_KEY: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL_KEY] = self.log_level
        return meta

    # -- calls -------------------------------------------------------------------------------------

    def spec(self, method: str) -> Any:
        """The table row of `method` for the negotiated version, checked as ours to send."""
        session = self._session()
        assert session.version is not None
        spec = self.protocol.methods(session.version).get(method)
        if spec is None:
            raise CapabilityError(f"{method} is not a method of protocol {session.version}")
        if spec.kind.value != "request" or not spec.direction.allows("client"):
            raise CapabilityError(f"{method} is not a request a client sends in protocol {session.version}")
        return spec

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | BaseModel | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
    ) -> Any:
        """Send any request of the negotiated version's table; returns its result model.

        For methods that may need input (MRTR), the driver answers input requests with this
        client's handlers and retries, unless `mrtr=False` or `resolve_input=False`: then the
        `InputRequiredResult` is returned, and `retry()` sends your own answers.

        Fails before sending (`CapabilityError`) if the method is not ours to send or the server
        did not advertise the capability that gates it, and (`InvalidParams`) if the params do
        not validate.
        """
        spec = self.spec(method)
        session = self._session()
        if isinstance(params, BaseModel):
            params = params.model_dump(mode="json", by_alias=True, exclude_unset=True)
        body = dict(params) if params is not None else None
        if session.modern:
            body = dict(body or {})
            extra = body.get("_meta")
            body["_meta"] = {**self._meta(session.version or ""), **(extra if isinstance(extra, dict) else {})}
        gate = spec.capability
        if gate is not None and gate.side in ("server", "receiver") and self.server_capabilities is not None:
            if not gate_allows(self.server_capabilities, gate, body):
                missing = [
                    p
                    for p in (gate.path_for(body), *gate.extra_paths(body))
                    if not has_capability(self.server_capabilities, p)
                ]
                raise CapabilityError(
                    f"the server does not offer {', '.join(missing) or gate.path} (needed for {method})"
                )
        if body is not None or spec.params_required:
            try:
                spec.parse_params(body)
            except ValidationError as exc:
                raise InvalidParams(f"invalid params for {method}: {validation_detail(exc)}") from None
        result = await self._send(spec, body, timeout, progress)
        if spec.may_require_input and resolve_input and self.mrtr and _needs_input(result):
            result = await self._drive(spec, body, result, timeout, progress)
        return result

    async def _send(
        self, spec: Any, body: dict[str, Any] | None, timeout: Any, progress: ProgressCallback | None
    ) -> Any:
        raw = await self._session().send_request(spec.method, body, timeout=timeout, on_progress=progress)
        try:
            return spec.parse_result(raw)
        except ValidationError as exc:
            raise ProtocolError(f"the server sent an invalid {spec.method} result: {validation_detail(exc)}") from exc

    # -- multi-round-trip requests ----------------------------------------------------------------

    async def _drive(self, spec: Any, body: dict[str, Any] | None, result: Any, timeout: Any, progress: Any) -> Any:
        """Fulfil input requests and retry until the server answers for real (or the round limit)."""
        original = copy.deepcopy(body) or {}
        rounds = 0
        while _needs_input(result):
            rounds += 1
            if rounds > self.max_input_rounds:
                raise InputRoundsExceeded(
                    f"{spec.method}: the server still asks for input after {self.max_input_rounds} rounds"
                )
            requests = result.input_requests.root if hasattr(result.input_requests, "root") else result.input_requests
            if requests:
                responses = await self.fulfil(requests)
            else:
                responses = {}
                await anyio.sleep(self.state_only_pause)
            retry = self._retry_params(original, result, responses)
            result = await self._send(spec, retry, timeout, progress)
        return result

    def _retry_params(self, original: Mapping[str, Any], result: Any, responses: Mapping[str, Any]) -> dict[str, Any]:
        retry = copy.deepcopy(dict(original))
        if responses:
            retry["inputResponses"] = dict(responses)
        else:
            retry.pop("inputResponses", None)
        if result.request_state is not None:
            retry["requestState"] = result.request_state  # echoed exactly, never inspected
        else:
            retry.pop("requestState", None)
        return retry

    async def fulfil(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Answer every input request concurrently with this client's handlers."""
        answers: dict[str, Any] = {}
        table = self.protocol.methods(self._session().version or "")

        async def answer(key: str, request: Any) -> None:
            if isinstance(request, BaseModel):
                request = request.model_dump(mode="json", by_alias=True, exclude_unset=True)
            method = request.get("method")
            spec = table.get(method) if isinstance(method, str) else None
            if spec is None:
                raise ProtocolError(f"input request {key!r}: unknown kind {method!r}")
            params = request.get("params")
            if spec.capability is not None and not gate_allows(self.capabilities(), spec.capability, params):
                raise ProtocolError(
                    f"input request {key!r}: the server asked for {method}, which this client did not declare "
                    f"({spec.capability.path_for(params)})"
                )
            if method not in self.request_handlers:
                raise MissingInputHandler(f"input request {key!r}: no handler for {method}")
            answers[key] = await self.answer(spec, params)

        await gather([functools.partial(answer, key, request) for key, request in requests.items()])
        return answers

    async def answer(self, spec: Any, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run this client's handler for a server->client request or an input request (one path
        for both eras): validate the params, call the handler, validate what it returns."""
        try:
            parsed = spec.parse_params(params)
        except ValidationError as exc:
            raise InvalidParams(f"invalid params for {spec.method}: {validation_detail(exc)}") from None
        value = await _maybe_await(self.request_handlers[spec.method](parsed))
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        try:
            spec.parse_result(value)
        except ValidationError as exc:
            raise ProtocolError(
                f"the {spec.method} handler returned an invalid result: {validation_detail(exc)}"
            ) from None
        result: dict[str, Any] = value
        return result

    async def retry(
        self, method: str, params: Mapping[str, Any] | None, result: Any, responses: Mapping[str, Any]
    ) -> Any:
        """With the driver off: send the retry of `method` for an `InputRequiredResult`, with your own answers."""
        spec = self.spec(method)
        body = dict(params or {})
        if self._session().modern:
            body["_meta"] = {**self._meta(self._session().version or ""), **(body.get("_meta") or {})}
        dumped = {
            k: v.model_dump(mode="json", by_alias=True, exclude_unset=True) if isinstance(v, BaseModel) else v
            for k, v in responses.items()
        }
        return await self._send(spec, self._retry_params(body, result, dumped), DEFAULT, None)

    # -- the handlers behind roots, sampling and elicitation ----------------------------------------

    async def _answer_roots(self, params: Any) -> dict[str, Any]:
        if self.roots is None:
            raise MethodNotFound("this client has no roots")
        return {"roots": list(self.roots)}

    async def _answer_sampling(self, params: Any) -> Any:
        if self.sampling_handler is None:
            raise MissingInputHandler("no sampling handler")
        if (getattr(params, "tools", None) or getattr(params, "tool_choice", None)) and not has_capability(
            self.capabilities(), "sampling.tools"
        ):
            raise InvalidParams(
                "tools in a sampling request need the sampling.tools capability, which this client did not declare"
            )
        return await _maybe_await(self.sampling_handler(params))

    async def _answer_elicitation(self, params: Any) -> Any:
        if self.elicitation_handler is None:
            raise MissingInputHandler("no elicitation handler")
        mode = getattr(params, "mode", None) or "form"
        if mode not in self.elicitation_modes:
            raise InvalidParams(f"elicitation mode {mode!r} was not declared by this client")
        value = await _maybe_await(self.elicitation_handler(params))
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not isinstance(value, dict):
            raise ElicitationError(f"the elicitation handler returned {type(value).__name__}, not an ElicitResult")
        if mode == "url":
            if value.get("content"):
                raise ElicitationError("a URL-mode elicitation carries no form data through the client")
            return value
        if value.get("action") == "accept":
            schema = params.requested_schema.model_dump(mode="json", by_alias=True, exclude_unset=True)
            try:
                value = {**value, "content": apply_elicitation(schema, value.get("content"))}
            except ValueError as exc:
                raise ElicitationError(f"the elicitation answer does not fit the requested schema: {exc}") from None
        return value

    async def add_roots(self, *roots: Mapping[str, Any] | str) -> None:
        """Add roots; a handshake-era server that was told `roots.listChanged` hears about it."""
        self.roots = [*(self.roots or []), *(_root(r) for r in roots)]
        await self._roots_changed()

    async def remove_roots(self, *uris: str) -> None:
        self.roots = [r for r in (self.roots or []) if r["uri"] not in uris]
        await self._roots_changed()

    async def _roots_changed(self) -> None:
        session = self.session
        if session is None or session.modern or session.version is None:
            return
        if has_capability(self.capabilities(), "roots.listChanged"):
            await session.send_notification("notifications/roots/list_changed")

    async def ping(self) -> None:
        await self.request("ping")

    # -- tools, prompts, resources ------------------------------------------------------------------

    async def list_tools(self, cursor: str | None = None) -> Any:
        return await self.request("tools/list", {"cursor": cursor} if cursor is not None else None)

    async def tools(self) -> AsyncIterator[Any]:
        """Every tool, page after page."""
        async for item in self._pages("tools/list", "tools"):
            yield item

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
    ) -> Any:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request("tools/call", params, timeout=timeout, progress=progress, resolve_input=resolve_input)

    async def list_prompts(self, cursor: str | None = None) -> Any:
        return await self.request("prompts/list", {"cursor": cursor} if cursor is not None else None)

    async def prompts(self) -> AsyncIterator[Any]:
        async for item in self._pages("prompts/list", "prompts"):
            yield item

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, **kw: Any) -> Any:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request("prompts/get", params, **kw)

    async def list_resources(self, cursor: str | None = None) -> Any:
        return await self.request("resources/list", {"cursor": cursor} if cursor is not None else None)

    async def resources(self) -> AsyncIterator[Any]:
        async for item in self._pages("resources/list", "resources"):
            yield item

    async def list_resource_templates(self, cursor: str | None = None) -> Any:
        return await self.request("resources/templates/list", {"cursor": cursor} if cursor is not None else None)

    async def resource_templates(self) -> AsyncIterator[Any]:
        async for item in self._pages("resources/templates/list", "resource_templates"):
            yield item

    async def read_resource(self, uri: str, **kw: Any) -> Any:
        return await self.request("resources/read", {"uri": uri}, **kw)

    async def complete(
        self, ref: Mapping[str, Any], argument: Mapping[str, str], context: Mapping[str, Any] | None = None
    ) -> Any:
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return await self.request("completion/complete", params)

    async def set_log_level(self, level: str) -> None:
        """Legacy: `logging/setLevel`; modern: the level every later request carries."""
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {LOG_LEVELS}")
        self.log_level = level
        if not self._session().modern:
            await self.request("logging/setLevel", {"level": level})

    async def _pages(self, method: str, attribute: str) -> AsyncIterator[Any]:
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.request(method, {"cursor": cursor} if cursor is not None else None)
            for item in getattr(page, attribute):
                yield item
            cursor = page.next_cursor
            if not cursor:
                return
            if cursor in seen:
                raise ProtocolError(f"{method}: the server repeated cursor {cursor!r}; stopping to avoid a loop")
            seen.add(cursor)

    # -- change notifications --------------------------------------------------------------------

    async def _on_event(self, event: Event) -> None:
        if event.kind == "resource":
            if self.on_resource_updated is not None:
                await _maybe_await(self.on_resource_updated(event.uri))
        elif self.on_list_changed is not None:
            await _maybe_await(self.on_list_changed(event.kind))

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
    ) -> AsyncIterator[Subscription]:
        """Receive change notifications: a `subscriptions/listen` stream on a modern connection,
        `resources/subscribe` plus pushed list-changed notifications on a handshake-era one.
        `sub.honoured` says what the server agreed to send."""
        session = self._session()
        uris = sorted(set(resource_uris))
        kinds = [kind for flag, kind in ((tools, "tools"), (prompts, "prompts"), (resources, "resources")) if flag]
        if session.modern:
            wanted: dict[str, Any] = {f"{kind}ListChanged": True for kind in kinds}
            if uris:
                wanted["resourceSubscriptions"] = uris
            spec = self.spec("subscriptions/listen")
            body = {"notifications": wanted, "_meta": self._meta(session.version or "")}
            try:
                spec.parse_params(body)
            except ValidationError as exc:
                raise InvalidParams(f"invalid listen params: {validation_detail(exc)}") from None
            sub = Subscription()
            request_id = session.next_id()
            sub.id = request_id
            session.listens[request_id] = sub
            scope = anyio.CancelScope()

            async def run() -> None:
                with scope:
                    try:
                        await session.send_request("subscriptions/listen", body, timeout=None, request_id=request_id)
                    except (McpError, ConnectionClosed) as exc:
                        sub.error = exc
                    finally:
                        sub._end()
                        sub.acknowledged.set()

            if session._task_group is None:
                raise ConnectionClosed("the connection is closed")
            session._task_group.start_soon(run)  # not a task group of ours: body errors stay unwrapped
            try:
                with anyio.fail_after(self.request_timeout):
                    await sub.acknowledged.wait()
                if sub.error is not None:
                    raise sub.error
                yield sub
            finally:
                session.listens.pop(request_id, None)
                scope.cancel()  # sends notifications/cancelled for the listen request
            return
        caps = self.server_capabilities or {}
        honoured: dict[str, Any] = {
            f"{kind}ListChanged": True for kind in kinds if has_capability(caps, f"{kind}.listChanged")
        }
        subscribed = []
        if uris and has_capability(caps, "resources.subscribe"):
            for uri in uris:
                await self.request("resources/subscribe", {"uri": uri})
                subscribed.append(uri)
            honoured["resourceSubscriptions"] = subscribed
        sub = Subscription(honoured)
        key = f"legacy-{id(sub)}"
        session.listens[key] = sub
        try:
            yield sub
        finally:
            session.listens.pop(key, None)
            sub._end()
            for uri in subscribed:
                if not session.closed:
                    try:
                        await self.request("resources/unsubscribe", {"uri": uri})
                    except (McpError, ConnectionClosed):
                        pass
