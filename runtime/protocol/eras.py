"""The protocol's eras as rules: what marks each era's messages, which requests each claims and in
which order eras are tried, where each carries capabilities, how each reports a missing resource. Pure.

An era is a family of protocol versions that work alike on the wire. The generated tree says which
era each of its versions belongs to (`versions.ERAS`) and names the eras (`versions.HANDSHAKE`,
`versions.MODERN`); this module is the one place in the runtime that gives those names a meaning.
Everything else asks an era's rules (`EraRules`, here) or its own side's strategy for the era
(`server.eras`, `client.eras`, found by the era's name) and never compares era names itself.

- **Handshake era** (2025-11-25 and before): `initialize` opens a session that fixes the version
  and the client's capabilities for the connection; the server may send requests of its own
  (sampling, elicitation, roots); `ping` is answered before the handshake.
- **Modern era** (2026-07-28 on): no session; every request names its version and carries the
  client's capabilities in `_meta`, so each is self-contained; the server asks for input with
  `InputRequiredResult` instead of requests of its own.

Eras are tried newest first, by the date of each era's newest version in the tables, so the
order never depends on import order. Adding an era is one `EraRules` subclass here (listed in
`RULES`) and one strategy on each side.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from . import http_headers
from .errors import INVALID_PARAMS, HeaderMismatch, InvalidParams, McpError, UnsupportedProtocolVersion
from .keys import CLIENT_CAPABILITIES_KEY, HANDSHAKE_METHOD, PROTOCOL_VERSION_KEY
from .routing import Rejection

if TYPE_CHECKING:
    from .routing import Call, Router
    from .tables import VersionRegistry

LIVENESS_METHOD = "ping"  # the one request a handshake-era server answers before `initialize`
RESOURCE_NOT_FOUND = -32002  # the handshake era's convention (its schema fixes no code for it)


def message_version(params: Mapping[str, Any] | None) -> Any:
    """The version a message names for itself in its `_meta` (what makes it self-contained), or None."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, Mapping) else None


class EraRules(abc.ABC):
    """What the protocol says about one era, for both sides."""

    session_method: str | None
    """The request that opens a session and fixes the version and the client's capabilities for
    the connection (`initialize`), or None when every request is self-contained."""
    liveness_method: str | None
    """A request a server of this era answers before any session is open (None: no such request)."""
    logs_without_level: bool
    """May a server send log messages when the client named no level?"""
    server_sends_requests: bool
    """May the server send requests of its own to the client (answered by the client)?"""
    client_capabilities_at: tuple[str, tuple[str, ...]]
    """Where the client's capabilities travel: a method and the path (wire names) in its params."""
    server_capabilities_at: tuple[str, tuple[str, ...]]
    """Where the server's capabilities travel: a method and the path (wire names) in its result."""
    claims_by_meta: bool = False
    """Does `claim` take every request whose `_meta` names a version, and serve it with that
    version exactly when both `_meta` keys are there, the routing headers agree with the body and
    the era serves the version (what `Router.quick` relies on)? Such an era claims no request
    whose `_meta` names no version, unless its MCP-Protocol-Version header names one of its own."""
    claims_by_session: bool = False
    """Does `claim` take every request on a session but `session_method`, serving it with the
    version the session negotiated (what `Router.quick` relies on)?"""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @property
    def self_contained(self) -> bool:
        """Does every request carry what the server needs to serve it (no session)?"""
        return self.session_method is None

    @abc.abstractmethod
    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        """The version this era serves `call` with, a rejection, or None if the call is not of this era."""

    @abc.abstractmethod
    def resource_not_found(self, uri: str) -> McpError:
        """The error for reading a resource that does not exist."""


class HandshakeRules(EraRules):
    session_method = HANDSHAKE_METHOD
    claims_by_session = True
    liveness_method = LIVENESS_METHOD
    logs_without_level = True
    server_sends_requests = True
    client_capabilities_at = (HANDSHAKE_METHOD, ("capabilities",))
    server_capabilities_at = (HANDSHAKE_METHOD, ("capabilities",))

    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        versions = router.versions_of(self)
        if call.method == self.session_method:
            requested = (call.params or {}).get("protocolVersion")
            if not versions:
                supported = router.supported_newest_first()
                return Rejection(
                    UnsupportedProtocolVersion.code,
                    f"Unsupported protocol version {requested!r}: this server serves {', '.join(supported)}, "
                    "which use no initialize handshake",
                    {"supported": supported, "requested": requested},
                )
            return requested if requested in versions else versions[0]
        if call.session_version is not None:
            return call.session_version
        if call.method == self.liveness_method and versions:
            return versions[0]
        return None

    def resource_not_found(self, uri: str) -> McpError:
        return McpError(f"resource not found: {uri}", code=RESOURCE_NOT_FOUND, data={"uri": uri})


REQUIRED_META = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY)


class ModernRules(EraRules):
    session_method = None
    claims_by_meta = True
    liveness_method = None
    logs_without_level = False
    server_sends_requests = False
    client_capabilities_at = ("server/discover", ("_meta", CLIENT_CAPABILITIES_KEY))
    server_capabilities_at = ("server/discover", ("capabilities",))

    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        """A request naming a version in `_meta` is modern (so is one whose HTTP header names a
        version that is not of a session era); then the modern ladder: the `_meta` keys (-32602),
        the routing headers against the body (-32020), whether the version is served (-32022)."""
        headers = call.headers
        meta = call.meta
        if PROTOCOL_VERSION_KEY not in meta:
            header = headers.get(http_headers.PROTOCOL_VERSION) if headers is not None else None
            if header is None or not router.eras.of_header(header).self_contained:
                return None
        if CLIENT_CAPABILITIES_KEY not in meta or PROTOCOL_VERSION_KEY not in meta:
            missing = ", ".join(repr(key) for key in REQUIRED_META if key not in meta)
            return Rejection(INVALID_PARAMS, f"a modern request needs _meta {missing}")
        requested = meta[PROTOCOL_VERSION_KEY]
        if headers is not None:
            name_field = router.name_param(call.method, requested)
            problem = http_headers.mismatch(
                call.method, call.params, headers, router.header_params(call.params), name_field
            )
            if problem is not None:
                return Rejection(HeaderMismatch.code, f"Header mismatch: {problem}")
        if not isinstance(requested, str) or requested not in router.versions_of(self):
            supported = router.supported_newest_first()
            return Rejection(
                UnsupportedProtocolVersion.code,
                f"Unsupported protocol version {requested!r}; this server supports {', '.join(supported)}",
                {"supported": supported, "requested": requested},
            )
        return requested

    def resource_not_found(self, uri: str) -> McpError:
        return InvalidParams(f"resource not found: {uri}", data={"uri": uri})


RULES: Mapping[str, Callable[[str], EraRules]] = {"HANDSHAKE": HandshakeRules, "MODERN": ModernRules}
"""The eras the runtime knows: the generated tree's constant that names each, and its rules."""


class Eras:
    """The eras of one generated tree, with the order in which they claim requests."""

    def __init__(self, registry: VersionRegistry) -> None:
        self.registry = registry
        tree: ModuleType = registry.tree
        self.by_name: dict[str, EraRules] = {}
        for constant, make in RULES.items():
            name = getattr(tree, constant, None)
            if isinstance(name, str):
                self.by_name[name] = make(name)
        unknown = {registry.era(v) for v in registry.supported} - set(self.by_name)
        if unknown:
            raise LookupError(f"the generated tree has eras this runtime has no rules for: {sorted(unknown)}")
        position = {v: i for i, v in enumerate(registry.supported)}  # oldest first, as dates

        def newest(rules: EraRules) -> int:
            return max((position[v] for v in registry.supported if registry.era(v) == rules.name), default=-1)

        self.newest_first: tuple[EraRules, ...] = tuple(sorted(self.by_name.values(), key=newest, reverse=True))

    def named(self, name: str) -> EraRules:
        try:
            return self.by_name[name]
        except KeyError:
            raise LookupError(f"no rules for the era {name!r}; known: {sorted(self.by_name)}") from None

    def of(self, version: str) -> EraRules:
        """The era of a version of the tree."""
        return self.named(self.registry.era(version))

    def versions_of(self, rules: EraRules, versions: Iterable[str]) -> list[str]:
        """Those of `versions` that belong to the era, newest first."""
        registry = self.registry
        return registry.newest_first(v for v in versions if v in registry.supported and registry.era(v) == rules.name)

    def of_header(self, version: str) -> EraRules:
        """The era of a version named in an HTTP header, also one the tree lacks: a dated version
        belongs to the era of the newest known version at or before it (eras follow each other in
        time), or to the oldest era when it precedes them all; anything else to the newest era."""
        registry = self.registry
        version = version.strip()
        if version in registry.supported:
            return self.of(version)
        known = [v for v in registry.supported if registry.compare_dates(v, version) is not None]
        if not known:
            return self.newest_first[0]
        before = [v for v in known if registry.compare_dates(v, version) == -1]
        return self.of(before[-1] if before else registry.supported[0])


_Strategy = TypeVar("_Strategy")


def strategies(
    eras: Eras, table: Mapping[type[EraRules], Callable[[Any], _Strategy]], side: str
) -> dict[str, _Strategy]:
    """One side's strategy for each era of a tree, by the era's name, from `table` (a strategy
    class for each kind of era rules); LookupError naming `side` for an era it has none for."""
    found: dict[str, _Strategy] = {}
    for rules in eras.newest_first:
        strategy = table.get(type(rules))
        if strategy is None:
            raise LookupError(f"the {side} has no strategy for the era {rules.name!r}")
        found[rules.name] = strategy(rules)
    return found
