"""Inbound routing: which version, table row and params a request is served with. Pure: no I/O.

`Router.route(...)` takes one request (method, params), its transport context and the version
a handshake-era session negotiated (if any), and returns a `Route` (version, era, `MethodSpec`,
parsed params) or a `Rejection` (a JSON-RPC error and the HTTP status it maps to). The server's
session serves the route; its Streamable HTTP application calls the same function per POST.

Which era a request belongs to is decided by the era rules (`EraRules.claim`, in `eras`), newest era first: a
request carrying modern `_meta` is modern, `initialize` and requests on an initialized session
are handshake-era. A modern request runs the modern ladder in this order: the `_meta` keys
(-32602), then the HTTP routing headers against the body when the transport has headers
(-32020), then whether the version is served (-32022). Then, for any era: the method must be a
client request of that version's table (-32601, so `initialize` or `ping` sent as a modern
request is -32601), the server must offer the capability that gates it (-32601), a handler must
exist (-32601), and the params must validate (-32602). The table is the version's with the
extensions the server enables in force (`VersionRegistry.table`); a method gated on both sides
(an extension's) also needs the client to declare the capability in that request (-32021).

`Router.quick(...)` finds the same `Route` for the common request (of the self-contained era, or
on a handshake-era session) without the ladder: what the ladder's steps that do not depend on the
request gave for a (version, method) is remembered (until the server's capabilities or enabled
extensions change), and the request's own steps (the `_meta` keys, the headers against the body,
a handler, the params) are checked again; any step that would not pass as it did gives None, and
the ladder decides (and words the refusal).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from . import http_headers
from .capabilities import gate_allows, gate_requirement
from .errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    McpError,
    MissingClientCapability,
    http_status,
    validation_detail,
)
from .keys import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, REQUEST
from .tables import VersionRegistry

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from .eras import EraRules, Eras


@dataclass
class Call:
    """One inbound request, as routing sees it."""

    method: str
    params: Mapping[str, Any] | None
    headers: Mapping[str, str] | None = None  # lower-case names; None when the transport has none
    session_version: str | None = None  # what `initialize` negotiated on this session
    session_capabilities: Mapping[str, Any] | None = None  # what the client declared in `initialize`

    meta: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        found = self.params.get("_meta") if self.params else None
        self.meta = found if type(found) is dict or isinstance(found, Mapping) else {}  # a dict: no ABC check

    @property
    def requested_version(self) -> Any:
        return self.meta.get(PROTOCOL_VERSION_KEY)

    def client_capabilities(self, era: EraRules) -> Mapping[str, Any]:
        """What the client declared for this request: in its own `_meta` for a self-contained era,
        else what it declared when its session opened."""
        if era.self_contained:
            found = self.meta.get(CLIENT_CAPABILITIES_KEY)
            return found if type(found) is dict or isinstance(found, Mapping) else {}
        return self.session_capabilities or {}


@dataclass(slots=True)
class Route:
    """How to serve a request: its version and era, the table row, the parsed params."""

    version: str
    era: EraRules
    spec: MethodSpec
    params: Any


@dataclass(slots=True)
class _Passed:
    """What the ladder's steps that do not depend on the request gave for one (version, method),
    of self-contained requests or of requests on a session, and what that depended on beyond the
    request (`Router.quick`)."""

    era: EraRules | None  # the era that claims such requests (None: none does it this way)
    spec: MethodSpec | None  # None: the steps do not pass (`route` decides every such request)
    name_field: str | None  # the params field `Mcp-Name` mirrors
    unless: tuple[str, ...]  # params whose presence makes the gate ask more (`route` checks those)
    offered: Mapping[str, Any]  # the server capabilities the row's gate was checked against
    extensions: frozenset[str]  # the extensions in force then


_SERVER_GATED = ("server", "receiver", "both")  # the gate sides the server's own capabilities answer


def _present(params: Mapping[str, Any] | None, keys: tuple[str, ...]) -> bool:
    """Is any of `keys` in `params` with a value (not null)?"""
    return params is not None and any(params.get(key) is not None for key in keys)


@dataclass(frozen=True)
class Rejection:
    """A request refused before any handler ran."""

    code: int
    message: str
    data: Any = None

    @property
    def http_status(self) -> int:
        return http_status(self.code)

    def error(self) -> McpError:
        """As the `McpError` subclass of its code (what the session answers with)."""
        return McpError.from_error({"code": self.code, "message": self.message, "data": self.data})


@dataclass
class Router:
    """Static routing configuration of one server, and the pure routing function."""

    registry: VersionRegistry
    versions: tuple[str, ...]  # what the server serves
    eras: Eras  # tried newest first
    handlers: Collection[str]  # methods with a handler
    capabilities: Callable[[], Mapping[str, Any]]  # what the server offers
    header_params: Callable[[Mapping[str, Any] | None], Mapping[str, str]] = field(default=lambda params: {})
    """For a `tools/call`: the tool's `x-mcp-header` parameters (header name -> argument name)."""
    extensions: Callable[[], frozenset[str]] = field(default=frozenset)
    """The ids of the extensions the server enables (their rows are in force in its tables)."""
    validated: Callable[[str, Mapping[str, Any] | None], Mapping[str, Any] | None] = field(
        default=lambda method, params: params
    )
    """The part of a request's params routing validates (default: all of it); a handler that
    checks some part itself against state only it has (answers to a task's outstanding input
    requests) leaves that part out here and reads it from the request."""
    _by_era: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)
    _names: dict[tuple[str, str, frozenset[str]], str | None] = field(default_factory=dict, init=False, repr=False)
    _requests: dict[tuple[str, str, frozenset[str]], MethodSpec] = field(default_factory=dict, init=False, repr=False)
    """The client requests found so far, by version, method and the extensions in force (only
    methods the tables have: a client's unknown method names are never kept)."""
    _passed: dict[tuple[str, str], _Passed] = field(default_factory=dict, init=False, repr=False)
    """`quick`'s memory: what the steps that do not depend on the request gave, by version and method."""
    _passed_on_sessions: dict[tuple[str, str], _Passed] = field(default_factory=dict, init=False, repr=False)
    """The same for requests on a session."""

    def table(self, version: str) -> Mapping[str, MethodSpec]:
        """The table `version` is served with: the version's, with the enabled extensions in force."""
        return self.registry.table(version, self.extensions())

    def name_param(self, method: str, version: object) -> str | None:
        """The params field `Mcp-Name` mirrors for `method` as the request's version serves it
        (remembered for the versions the tree has, with the extensions in force then)."""
        extensions = self.extensions()
        if not isinstance(version, str) or version not in self.registry.supported:
            return self.registry.name_param(method, version, extensions)
        key = (method, version, frozenset(extensions))
        try:
            return self._names[key]
        except KeyError:
            found = self._names[key] = self.registry.name_param(method, version, extensions)
            return found

    def versions_of(self, era: EraRules) -> list[str]:
        """The versions of `era` this server serves, newest first."""
        found = self._by_era.get(era.name)
        if found is None:
            found = self._by_era[era.name] = self.eras.versions_of(era, self.versions)
        return found

    def supported_newest_first(self) -> list[str]:
        return self.registry.newest_first(self.versions)

    def route(self, call: Call) -> Route | Rejection:
        for era in self.eras.newest_first:
            claimed = era.claim(call, self)
            if claimed is None:
                continue
            if isinstance(claimed, Rejection):
                return claimed
            return self.resolve(call, claimed, era)
        return Rejection(
            INVALID_PARAMS,
            f"missing _meta[{PROTOCOL_VERSION_KEY!r}]: a modern request must name its protocol version "
            "(a handshake-era client must send initialize first)",
            {"supported": self.supported_newest_first()},
        )

    def quick(
        self, method: str, params: Any, headers: Mapping[str, str] | None, session_version: str | None = None
    ) -> Route | None:
        """The `Route` `route` gives the common request, found without the ladder; None when the
        ladder must decide (it words the refusal too). The common request is either of the
        self-contained newest era (no `session_version`: its `_meta` names its version and carries
        the client's capabilities) or one on a session of an era with sessions (`session_version`:
        it names no version of a self-contained era, in `_meta` or header). Its version and method
        passed the ladder's steps that do not depend on the request (remembered), and its own
        steps pass: the routing headers agree with the body, a handler exists, the params validate."""
        meta = params.get("_meta") if type(params) is dict else None
        if session_version is None:
            version = meta.get(PROTOCOL_VERSION_KEY) if type(meta) is dict and CLIENT_CAPABILITIES_KEY in meta else None
            if type(version) is not str:
                return None
            passed = self._passed.get((version, method))
        else:
            header = headers.get(http_headers.PROTOCOL_VERSION) if headers is not None else None
            if (type(meta) is dict and PROTOCOL_VERSION_KEY in meta) or (
                header is not None and header != session_version
            ):
                return None  # (another era's, perhaps: the ladder decides)
            version = session_version
            passed = self._passed_on_sessions.get((version, method))
        if passed is None or passed.offered is not self.capabilities() or passed.extensions is not self.extensions():
            passed = self._passes(version, method, session_version is not None)
        spec, era = passed.spec, passed.era
        unless = passed.unless  # (params making the gate ask more)
        if spec is None or era is None or method not in self.handlers or (unless and _present(params, unless)):
            return None
        if session_version is None and headers is not None:
            if http_headers.mismatch(method, params, headers, self.header_params(params), passed.name_field):
                return None
        try:
            parsed = spec.parse_params(self.validated(method, params))
        except ValueError:  # (pydantic's ValidationError is one)
            return None
        return Route(version, era, spec, parsed)

    def _passes(self, version: str, method: str, on_session: bool) -> _Passed:
        """The ladder's steps for (version, method) that do not depend on the request, taken now
        (remembered for a version and method of the tree): which era claims the request (the
        newest, claiming by `_meta`; or on a session, the first era that claims by session, the
        eras before it claiming by `_meta` only, and not the request opening a session), that it
        serves the version, that the method is a client request of its table, that the server
        offers the capability that gates it. A gate that depends on the request (refined by a
        params value, or on the client's side too) does not pass here: `route` checks it; one
        that asks more of a request with certain params passes for a request without them."""
        offered, extensions = self.capabilities(), self.extensions()
        if not on_session:
            era: EraRules | None = self.eras.newest_first[0]
            claims = era is not None and era.claims_by_meta
        else:
            era = next((rules for rules in self.eras.newest_first if not rules.claims_by_meta), None)
            claims = era is not None and era.claims_by_session and method != era.session_method
        spec = None
        unless: tuple[str, ...] = ()
        if era is not None and claims and version in self.versions_of(era):
            spec = self.client_request(version, method)
            gate = spec.capability if spec is not None else None
            if gate is not None and gate.side in _SERVER_GATED:
                static = gate.side != "both" and gate.param is None
                if not static or not gate_allows(offered, gate, None):
                    spec = None
                else:  # what the gate asks more of a request that has these params: left to `route`
                    unless = tuple(key for key, _ in gate.param_requires)
        name_field = self.name_param(method, version) if spec is not None else None
        passed = _Passed(era, spec, name_field, unless, offered, extensions)
        if version in self.registry.supported and method in self.table(version):
            memory = self._passed_on_sessions if on_session else self._passed
            memory[(version, method)] = passed  # (never keyed by a client's unknown names)
        return passed

    def _gated(self, call: Call, spec: MethodSpec, era: EraRules) -> Rejection | None:
        """The refusal of a method whose capability the server does not offer (-32601), or, for a
        method gated on both sides, that the request does not declare (-32021)."""
        gate = spec.capability
        if gate is None or gate.side not in _SERVER_GATED:
            return None
        if not gate_allows(self.capabilities(), gate, call.params):
            return Rejection(
                METHOD_NOT_FOUND, f"method not found: {call.method} (this server does not offer {gate.path})"
            )
        if gate.side == "both" and not gate_allows(call.client_capabilities(era), gate, call.params):
            return Rejection(
                MissingClientCapability.code,
                f"Missing required client capability: {call.method} needs the client to declare {gate.path}",
                {"requiredCapabilities": gate_requirement(gate)},
            )
        return None

    def client_request(self, version: str, method: str) -> MethodSpec | None:
        """`method`'s row as `version` serves it when it is a request a client may send (None
        otherwise); a row found is remembered (the tables do not change; the enabled extensions
        are part of the key)."""
        key = (version, method, frozenset(self.extensions()))  # (a frozenset is passed as it is)
        found = self._requests.get(key)
        if found is not None:
            return found
        spec = self.registry.table(version, key[2]).get(method)
        if spec is None or spec.kind != REQUEST or not spec.direction.allows("client"):
            return None
        self._requests[key] = spec
        return spec

    def resolve(self, call: Call, version: str, era: EraRules) -> Route | Rejection:
        """The table steps, the same for every era."""
        spec = self.client_request(version, call.method)
        if spec is None:
            return Rejection(METHOD_NOT_FOUND, f"method not found: {call.method} (protocol {version})")
        refused = self._gated(call, spec, era)
        if refused is not None:
            return refused
        if call.method not in self.handlers:
            return Rejection(METHOD_NOT_FOUND, f"method not found: {call.method}")
        try:
            params = spec.parse_params(self.validated(call.method, call.params))
        except ValidationError as exc:
            return Rejection(
                INVALID_PARAMS,
                f"invalid params for {call.method}: {validation_detail(exc)}",
                {"errors": json.loads(exc.json(include_url=False, include_input=False))},
            )
        except ValueError as exc:
            return Rejection(INVALID_PARAMS, f"invalid params for {call.method}: {exc}")
        return Route(version, era, spec, params)
