"""The client's grouped options: `Client(url, timeouts=Timeouts(request=10), inputs=InputHandlers(...))`.

Each group is a frozen dataclass with a default for every field, so a client states only what it
changes. The keywords these replace (`request_timeout=`, `sampling_handler=`, `max_pages=`,
`client_info=`, `log_level=`, `telemetry=`, `limits=`, ...) still work for one release, with a
`DeprecationWarning` naming the group to use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from ..core.options import Moved, group_types, resolve_groups
from ..core.telemetry import Telemetry
from ..protocol.keys import LOG_LEVELS


class SamplingHandler(Protocol):
    """`async def handler(params) -> result`: `params` is the version's `CreateMessageRequestParams`;
    return a `CreateMessageResult` (a model or its wire dict)."""

    def __call__(self, params: Any, /) -> Awaitable[Any] | Any: ...


class ElicitationHandler(Protocol):
    """`async def handler(params) -> result`: `params` is the version's `ElicitRequestParams`
    (form or URL mode); return an `ElicitResult` (a model or its wire dict)."""

    def __call__(self, params: Any, /) -> Awaitable[Any] | Any: ...


@dataclass(frozen=True)
class Timeouts:
    """How long the client waits.

    - `request`: seconds for a whole call (None: no limit), and for closing the connection;
    - `probe`: how long a server that answered something may take to answer the version probe
      before it is taken for a handshake-era server (at most half of what is left of `startup`,
      so the fallback handshake has time);
    - `startup`: seconds for connecting as a whole, the probe and the handshake together (default:
      `request`, or 60 s without one); a server that answers nothing at all by then is not
      answering (`RequestTimeout`). A pinned modern version sends nothing to connect, so the
      start of a server on a stream (a process the client spawned) falls on the first calls: until
      the server has answered anything, a call with the default timeout may take until this
      deadline (counted from connecting) when it is later than `request`. (Not over HTTP: a server
      that is not up refuses the connection at once.)
    """

    request: float | None = 60.0
    probe: float = 3.0
    startup: float | None = None

    @property
    def startup_or_default(self) -> float:
        return self.startup if self.startup is not None else (self.request or 60.0)


@dataclass(frozen=True)
class ClientAdvertising:
    """What the client declares to the server.

    - `info`: the client's name, version (and title) (default: mcpgen's own);
    - `capabilities`: declared as given instead of inferred from the input handlers and roots (an
      empty mapping declares nothing);
    - `extensions`: the extensions declared (id -> settings), where the version has a place for them;
    - `log_level`: ask for log messages from this level up (`debug`, `info`, ..., `emergency`);
    - `tasks`: accept tool calls the server runs as tasks (the tasks extension, declared on every
      request; on a handshake-era server, its experimental tasks): `call_tool` waits for them, or
      gives back a `ToolTask` with `wait=False`.
    """

    info: Mapping[str, Any] | None = None
    capabilities: Mapping[str, Any] | None = None
    extensions: Mapping[str, Mapping[str, Any]] | None = None
    log_level: str | None = None
    tasks: bool = False

    def __post_init__(self) -> None:
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {LOG_LEVELS}")


@dataclass(frozen=True)
class ClientLimits:
    """Deprecated: its fields are `ClientChecks`'s (`Client(checks=ClientChecks(max_pages=...))`);
    `Client(limits=ClientLimits(...))` still works for one release, with a `DeprecationWarning`.

    - `max_pages`: pages a listing may have (`PaginationError` past that);
    - `max_message_bytes`: the size of one message (default: the transport's, 4 MiB);
    - `max_input_rounds`: rounds of input requests one call may need (`InputRoundsExceeded`).
    """

    max_pages: int = 1000
    max_message_bytes: int | None = None
    max_input_rounds: int = 10


@dataclass(frozen=True)
class InputHandlers:
    """How the client answers what a server asks: the same handlers serve a handshake-era server's
    requests and a modern server's input requests (multi-round-trip calls).

    - `sampling`, `elicitation`: `async def handler(params) -> result` (see `SamplingHandler`,
      `ElicitationHandler`); `sampling_tools` declares tool use in sampling; `elicitation_modes`
      the modes declared (`form`, `url`);
    - `roots`: the client's roots (URIs, or `{"uri": ..., "name": ...}` objects);
    - `drive`: answer input requests and retry by itself (False: a call that needs input raises
      `InputError`, unless made with `resolve_input=False`);
    - `state_only_pause`: seconds to wait before retrying when the server asked for nothing but
      sent state (it is working).
    """

    sampling: SamplingHandler | None = None
    elicitation: ElicitationHandler | None = None
    roots: Iterable[Mapping[str, Any] | str] | None = None
    sampling_tools: bool = False
    elicitation_modes: Iterable[str] = ("form",)
    drive: bool = True
    state_only_pause: float = 0.0


@dataclass
class OutgoingRequest:
    """A request the client is about to send, as `ClientHooks.on_request` sees it: change
    `params` (the JSON object, `_meta` included) to change what is sent.

    Attributes:
        method: the request's method.
        params: the request's params (None: none).
        request_id: the request's JSON-RPC id.
        version: the negotiated protocol version (None while negotiating).
    """

    method: str
    params: dict[str, Any] | None
    request_id: str | int
    version: str | None  # the negotiated version (None while negotiating)


CallNext = Callable[[], Awaitable[Any]]
RequestHook = Callable[[OutgoingRequest, CallNext], Awaitable[Any]]
"""`async def hook(request, call_next) -> result`: wraps every request the client sends."""


@dataclass(frozen=True)
class ClientHooks:
    """What watches the connection: callbacks for what the server announces, run in order on the
    connection's callback worker (never on its reader, so they may make calls of their own), a
    hook around what the client sends, and OpenTelemetry.

    - `on_list_changed(kind)`: a list changed (`tools`, `prompts`, `resources`);
    - `on_resource_updated(uri)`: a subscribed resource changed;
    - `on_log(level, data, logger)`: a log message;
    - `on_notification(method, params)`: every notification from the server (progress and
      cancellations included), before the callbacks above;
    - `on_request(request, call_next)`: wraps every request the client sends (the negotiation's
      included, and each retry): it sees `request.method`, `.params`, `.request_id`, `.version`,
      may change the params, return a result (the raw result object) without sending, raise, or
      call on and look at what came back (the raw result object, before it is checked);
    - `telemetry`: OpenTelemetry settings (`Telemetry`; on by default when `opentelemetry-api` is
      installed and an SDK configured, `Telemetry(enabled=False)` turns it off).
    """

    on_list_changed: Callable[[str], Any] | None = None
    on_resource_updated: Callable[[str | None], Any] | None = None
    on_log: Callable[[Any, Any, Any], Any] | None = None
    on_notification: Callable[[str, dict[str, Any]], Any] | None = None
    on_request: RequestHook | None = None
    telemetry: Telemetry | None = None


@dataclass(frozen=True)
class ClientChecks:
    """What the client checks of the server's answers, and how much of them it accepts.

    - `structured_output`: tool results' structured content against the tool's `outputSchema`
      (`StructuredOutputError`);
    - `older_handshake`: accept a handshake-era server's counter-offer of a version older than any
      this client knows, spoken with the oldest tables it has;
    - `max_pages`: pages a listing may have (`PaginationError` past that);
    - `max_message_bytes`: the size of one message (default: the transport's, 4 MiB);
    - `max_input_rounds`: rounds of input requests one call may need (`InputRoundsExceeded`).
    """

    structured_output: bool = True
    older_handshake: bool = False
    max_pages: int = 1000
    max_message_bytes: int | None = None
    max_input_rounds: int = 10


class DeprecatedClientOptions(TypedDict, total=False):
    """The keywords `Client` took before its options were grouped (each still works, with a warning)."""

    request_timeout: float | None
    probe_timeout: float
    startup_timeout: float | None
    max_pages: int
    max_message_bytes: int | None
    max_input_rounds: int
    sampling_handler: SamplingHandler | None
    sampling_tools: bool
    elicitation_handler: ElicitationHandler | None
    elicitation_modes: Iterable[str]
    roots: Iterable[Mapping[str, Any] | str] | None
    mrtr: bool
    state_only_pause: float
    on_list_changed: Callable[[str], Any] | None
    on_resource_updated: Callable[[str | None], Any] | None
    on_log: Callable[[Any, Any, Any], Any] | None
    validate_structured_output: bool
    accept_older: bool
    client_info: Mapping[str, Any] | None
    capabilities: Mapping[str, Any] | None
    extensions: Mapping[str, Mapping[str, Any]] | None
    log_level: str | None
    tasks: bool
    telemetry: Telemetry | None
    limits: ClientLimits | None


_MOVED: dict[str, Moved] = {
    "request_timeout": Moved("timeouts", ("request",)),
    "probe_timeout": Moved("timeouts", ("probe",)),
    "startup_timeout": Moved("timeouts", ("startup",)),
    "max_pages": Moved("checks", ("max_pages",)),
    "max_message_bytes": Moved("checks", ("max_message_bytes",)),
    "max_input_rounds": Moved("checks", ("max_input_rounds",)),
    "sampling_handler": Moved("inputs", ("sampling",)),
    "sampling_tools": Moved("inputs", ("sampling_tools",)),
    "elicitation_handler": Moved("inputs", ("elicitation",)),
    "elicitation_modes": Moved("inputs", ("elicitation_modes",)),
    "roots": Moved("inputs", ("roots",)),
    "mrtr": Moved("inputs", ("drive",)),
    "state_only_pause": Moved("inputs", ("state_only_pause",)),
    "on_list_changed": Moved("hooks", ("on_list_changed",)),
    "on_resource_updated": Moved("hooks", ("on_resource_updated",)),
    "on_log": Moved("hooks", ("on_log",)),
    "validate_structured_output": Moved("checks", ("structured_output",)),
    "accept_older": Moved("checks", ("older_handshake",)),
    "client_info": Moved("advertising", ("info",)),
    "capabilities": Moved("advertising", ("capabilities",)),
    "extensions": Moved("advertising", ("extensions",)),
    "log_level": Moved("advertising", ("log_level",)),
    "tasks": Moved("advertising", ("tasks",)),
    "telemetry": Moved("hooks", ("telemetry",)),
    "limits": Moved("checks", spread=ClientLimits, none_ignored=True),
}


@dataclass
class ClientOptions:
    """Every group, resolved (what `Client` keeps)."""

    advertising: ClientAdvertising = field(default_factory=ClientAdvertising)
    timeouts: Timeouts = field(default_factory=Timeouts)
    inputs: InputHandlers = field(default_factory=InputHandlers)
    hooks: ClientHooks = field(default_factory=ClientHooks)
    checks: ClientChecks = field(default_factory=ClientChecks)


_GROUP_TYPES = group_types(ClientOptions)


def resolve_client_options(groups: Mapping[str, Any], deprecated: Mapping[str, Any]) -> ClientOptions:
    """The groups given, with the deprecated keywords folded in (each warns, at `Client(...)`'s caller)."""
    return ClientOptions(**resolve_groups("Client", _GROUP_TYPES, _MOVED, groups, deprecated))
