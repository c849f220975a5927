"""How a client agrees on a protocol version with a server: the decisions, given the answers. Pure.

Modes: `"auto"` probes `server/discover` with the newest version of a self-contained (modern) era
and takes the newest mutual version from the `DiscoverResult` (or from the `supported` list of a
-32022 error, then probes again); a recognised modern error never falls back; anything else, or no
answer, means a handshake-era server: fall back to `initialize`. `"handshake"` runs the handshake
directly (accepting a counter-offer only if we support it, or with `accept_older` an older
handshake-era one, spoken with our oldest handshake tables); a version string pins that version
(a modern pin sends nothing; a handshake-era pin runs `initialize` for exactly that version).

`Negotiation` decides (`Step = Probe | Initialize | Adopt | Fail`); the client's driver
(`client.negotiation`) sends what it decides and feeds it the answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .errors import LATER_ERROR_CODES, McpError, McpRuntimeError, UnsupportedProtocolVersion, validation_detail
from .keys import HANDSHAKE_METHOD

if TYPE_CHECKING:
    from .eras import Eras
    from .tables import VersionRegistry

AUTO = "auto"
HANDSHAKE_MODE = "handshake"
LEGACY_MODE = "legacy"  # the earlier name of HANDSHAKE_MODE, kept for one release
DISCOVER_METHOD = "server/discover"


@dataclass(frozen=True)
class Probe:
    version: str


@dataclass(frozen=True)
class Initialize:
    version: str
    exact: bool


@dataclass(frozen=True)
class Adopt:
    version: str
    answer: Mapping[str, Any] | None  # the discover or initialize result (None for a modern pin)


@dataclass(frozen=True)
class Fail:
    reason: str
    cause: BaseException | None = None


Step = Probe | Initialize | Adopt | Fail


@dataclass
class Negotiation:
    """The client's negotiation decisions, given what the server answered. Pure."""

    eras: Eras
    versions: Sequence[str]
    mode: str
    probed: list[str] = field(default_factory=list)
    accept_older: bool = False  # take an older handshake-era counter-offer (see `older_handshake`)

    @property
    def registry(self) -> VersionRegistry:
        return self.eras.registry

    def _self_contained(self, version: str) -> bool:
        return self.eras.of(version).self_contained

    def _ours(self, self_contained: bool) -> list[str]:
        """Our versions of the eras with (or without) a session, newest first."""
        return [v for v in self.registry.newest_first(self.versions) if self._self_contained(v) == self_contained]

    def start(self) -> Step:
        if self.mode == HANDSHAKE_MODE:
            ours = self._ours(self_contained=False)
            return (
                Initialize(ours[0], exact=False)
                if ours
                else Fail(f"mode={HANDSHAKE_MODE!r} needs a handshake-era version among the client's versions")
            )
        if self.mode != AUTO:
            return Adopt(self.mode, None) if self._self_contained(self.mode) else Initialize(self.mode, exact=True)
        ours = self._ours(self_contained=True)
        if not ours:
            return self.fall_back("no modern version to probe with")
        self.probed.append(ours[0])
        return Probe(ours[0])

    def fall_back(self, reason: str) -> Step:
        """Anything but a recognised modern answer to the probe means a handshake-era server."""
        ours = self._ours(self_contained=False)
        newest = ours[0] if ours else None
        if newest is None:
            return Fail(f"the server is not a modern server ({reason}) and we support no handshake version")
        return Initialize(newest, exact=False)

    def _choose(self, offered: Sequence[str], version: str) -> Step:
        choice = self.registry.newest_mutual(offered, self.versions)
        if choice is None:
            return Fail(
                f"no protocol version in common: the server supports {list(offered)}, we support {list(self.versions)}"
            )
        if not self._self_contained(choice):
            return Initialize(choice, exact=False)
        if self.probed.count(choice) >= 2:  # one retry: a server may refuse a first request by design
            return Fail(f"the server refused {version} but lists it as supported")
        self.probed.append(choice)
        return Probe(choice)

    def after_discover(self, raw: Any, version: str) -> Step:
        spec = self.registry.spec(version, DISCOVER_METHOD)
        try:
            assert spec is not None
            spec.parse_result(raw)
            if not isinstance(raw, dict) or "resultType" not in raw:
                raise ValueError("no resultType: not a modern server")
        except (ValidationError, ValueError) as exc:
            detail = validation_detail(exc) if isinstance(exc, ValidationError) else str(exc)
            return self.fall_back(f"its discover result is not a modern one: {detail}")
        offered = [v for v in raw.get("supportedVersions", []) if isinstance(v, str)]
        choice = self.registry.newest_mutual(offered, self.versions)
        if choice is None:
            return Fail(
                f"no protocol version in common: the server supports {offered}, we support {list(self.versions)}"
            )
        if self._self_contained(choice):
            return Adopt(choice, raw)
        return Initialize(choice, exact=False)

    def after_probe_error(self, error: McpRuntimeError, version: str) -> Step:
        if isinstance(error, UnsupportedProtocolVersion):
            return self._choose(error.supported, version)
        if isinstance(error, McpError) and error.code in LATER_ERROR_CODES:
            reason = (
                f"the server is a modern server but refused server/discover: {error}; not falling back to initialize"
            )
            return Fail(reason, error)
        return self.fall_back(str(error))

    def older_handshake(self, offered: object) -> str | None:
        """With `accept_older`: the tables to speak an older handshake-era version with. A dated
        version before every handshake version we have is of that era too (eras follow each other
        in time), and later revisions of the era only add to the messages, so the oldest tables we
        have serve it; the server's own version still goes in its HTTP header."""
        ours = self._ours(self_contained=False)
        if not self.accept_older or not ours or not isinstance(offered, str):
            return None
        return ours[-1] if self.registry.compare_dates(offered, ours[-1]) == -1 else None

    def after_initialize(self, raw: Any, version: str, exact: bool) -> Step:
        offered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        acceptable = [version] if exact else self._ours(self_contained=False)
        tables = offered if offered in acceptable else None if exact else self.older_handshake(offered)
        if tables is None:
            return Fail(
                f"the server answered initialize with protocol version {offered!r}; this client supports {acceptable}"
            )
        assert isinstance(raw, dict)
        spec = self.registry.spec(tables, HANDSHAKE_METHOD)
        try:
            assert spec is not None
            spec.parse_result(raw)
        except ValidationError as exc:
            return Fail(f"invalid initialize result: {validation_detail(exc)}")
        return Adopt(tables, raw)
