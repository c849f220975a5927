"""The server's grouped options: `Server("demo", sealing=Sealing(keys=[...]), limits=ServerLimits(page_size=100))`.

Each group is a frozen dataclass with a default for every field, so a server states only what it
changes. The keywords these replace (`state_keys=`, `page_size=`, `list_changed=`, `title=`,
`validate_results=`, ...) still work for one release, with a `DeprecationWarning` naming the
group to use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from ..auth.server.resource import ProtectedResource
    from .catalog import Visibility
    from .http.events import EventStore
    from .http.security import HttpSecurity

from ..core.options import Moved, group_types, resolve_groups
from ..core.telemetry import Telemetry


@dataclass(frozen=True)
class Sealing:
    """What the server seals before handing it to a client to bring back.

    - `keys`: the keys of the modern era's `requestState` (the first seals, all open: rotation);
      default `MCPGEN_STATE_KEYS` (comma-separated, base64 or hex), else a random key per process.
      Every worker of a deployment needs the same keys;
    - `ttl_seconds`: how long a sealed state is accepted;
    - `seal_request_state`: False hands the state out unsealed (trusting clients with it);
    - `cursor_secret`: the key of list cursors (default: random per process).
    """

    keys: Sequence[bytes] | bytes | None = None
    ttl_seconds: float = 600.0
    seal_request_state: bool = True
    cursor_secret: bytes | None = None


@dataclass(frozen=True)
class Caching:
    """The cache hints of modern results: how long a client may keep one (`ttl_ms`) and for whom
    (`scope`: `private` to the user, or `public`)."""

    ttl_ms: int = 0
    scope: Literal["private", "public"] = "private"


@dataclass(frozen=True)
class ServerAdvertising:
    """What the server shows its clients, beyond its name, version and instructions.

    - `title`: a human-readable name, in the server's info;
    - `capabilities`: overrides of the inferred capabilities (deep-merged; a `None` value removes
      a key);
    - `list_changed`: advertise list-changed notifications (False: the capabilities say the lists
      never change, and no such notification is sent);
    - `logging`: advertise the logging capability;
    - `caching`: the cache hints of modern results (`Caching`);
    - `visibility`: `visibility(ctx, item) -> bool` filters what each caller is shown in
      listings, and refuses what it may not see when called (`visible_by_scopes` uses the items'
      `scopes=`).
    """

    title: str | None = None
    capabilities: Mapping[str, Any] | None = None
    list_changed: bool = True
    logging: bool = True
    caching: Caching = field(default_factory=Caching)
    visibility: Visibility | None = None


@dataclass(frozen=True)
class ServerLimits:
    """Bounds the server keeps: `page_size` items per listing page (None: one page),
    `max_input_rounds` rounds of input one call may ask for, and `worker_threads`: how many plain
    `def` handlers may run at once in worker threads (None: anyio's default limiter, shared with
    the rest of the process, 40 threads unless changed)."""

    page_size: int | None = 50
    max_input_rounds: int = 10
    worker_threads: int | None = None

    def __post_init__(self) -> None:
        if self.worker_threads is not None and self.worker_threads < 1:
            raise ValueError("worker_threads must be at least 1 (or None for anyio's default)")


@dataclass(frozen=True)
class Diagnostics:
    """What the server checks of its own answers, and tells about itself when things go wrong.

    - `error_details`: send an unexpected exception's type, message and traceback to the client
      (development only: by default the client gets a generic message with an error id, and the
      details go to the server's log under that id);
    - `telemetry`: OpenTelemetry settings (`Telemetry`; by default on when `opentelemetry-api` is
      installed and an SDK is configured, `Telemetry(enabled=False)` turns it off);
    - `validate_results`: check every result against the version's table before sending it (a
      result that does not fit is an internal error, logged, instead of a malformed answer).
    """

    error_details: bool = False
    telemetry: Telemetry | None = None
    validate_results: bool = True


class SessionOptions(TypedDict, total=False):
    """The settings `Server.serve` gives the connection's session; each may be left out, for its default."""

    request_timeout: float | None
    """Seconds to wait for the answer to a request the server sends the client (default 60;
    None: no limit)."""
    max_message_bytes: int | None
    """The largest message accepted (default: the transport's limit)."""
    max_in_flight: int
    """How many of the client's requests are served at once (default 256; later ones wait in the
    backlog, started in arrival order as room frees)."""
    max_backlog: int | None
    """How many of the client's requests may wait for room past `max_in_flight` (default: as many
    as `max_in_flight`); past both, a request is answered at once with -31503 naming the limits."""


class HttpOptions(TypedDict, total=False):
    """The settings `Server.http_app` and `Server.run_http` pass on to the endpoint (`HttpApp`);
    each may be left out, for its default."""

    security: HttpSecurity | None
    """Host/Origin checks and the body size limit (default: strict on a loopback address)."""
    event_store: EventStore | None
    """Where handshake-era SSE events are kept for resumption (default: in memory; None: streams
    are not resumable)."""
    retry_ms: int | None
    """The reconnection delay told to handshake-era clients on each SSE stream (default 1000)."""
    keepalive: float | None
    """Seconds of silence after which a response commits to SSE and gets a comment line (default 15)."""
    session_idle_timeout: float | None
    """Seconds after which an idle handshake-era session is closed (default 1800)."""
    max_sessions: int | None
    """How many handshake-era sessions may be open (default 10 000; 503 past that)."""
    max_sessions_per_principal: int | None
    """How many of them one authenticated principal may hold (default 100)."""
    auth: ProtectedResource | None
    """OAuth protection (default: the server's `http_auth`; None: unprotected)."""


class DeprecatedServerOptions(TypedDict, total=False):
    """The keywords `Server` took before its options were grouped (each still works, with a warning)."""

    state_keys: Sequence[bytes] | bytes | None
    state_key: bytes | None
    state_ttl_seconds: float
    seal_request_state: bool
    cursor_secret: bytes | None
    cache_ttl_ms: int
    cache_scope: Literal["private", "public"]
    page_size: int | None
    max_input_rounds: int
    title: str | None
    capabilities: Mapping[str, Any] | None
    list_changed: bool
    logging: bool
    caching: Caching | None
    visibility: Visibility | None
    validate_results: bool


_MOVED: dict[str, Moved] = {
    "state_keys": Moved("sealing", ("keys",)),
    "state_key": Moved("sealing", ("keys",), none_ignored=True),
    "state_ttl_seconds": Moved("sealing", ("ttl_seconds",)),
    "seal_request_state": Moved("sealing", ("seal_request_state",)),
    "cursor_secret": Moved("sealing", ("cursor_secret",)),
    "cache_ttl_ms": Moved("advertising", ("caching", "ttl_ms")),
    "cache_scope": Moved("advertising", ("caching", "scope")),
    "page_size": Moved("limits", ("page_size",)),
    "max_input_rounds": Moved("limits", ("max_input_rounds",)),
    "title": Moved("advertising", ("title",)),
    "capabilities": Moved("advertising", ("capabilities",)),
    "list_changed": Moved("advertising", ("list_changed",)),
    "logging": Moved("advertising", ("logging",)),
    "caching": Moved("advertising", ("caching",), none_ignored=True),
    "visibility": Moved("advertising", ("visibility",)),
    "validate_results": Moved("diagnostics", ("validate_results",)),
}


@dataclass
class ServerOptions:
    """Every group, resolved (what `Server` keeps)."""

    advertising: ServerAdvertising = field(default_factory=ServerAdvertising)
    sealing: Sealing = field(default_factory=Sealing)
    limits: ServerLimits = field(default_factory=ServerLimits)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


_GROUP_TYPES = group_types(ServerOptions)


def resolve_server_options(groups: Mapping[str, Any], deprecated: Mapping[str, Any]) -> ServerOptions:
    """The groups given, with the deprecated keywords folded in (each warns, at `Server(...)`'s caller)."""
    return ServerOptions(**resolve_groups("Server", _GROUP_TYPES, _MOVED, groups, deprecated))
