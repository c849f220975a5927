"""How a client agrees on a protocol version: pure decisions (`Negotiation`), and the driver.

Modes: `"auto"` probes `server/discover` with the newest modern version and takes the newest
mutual version from the `DiscoverResult` (or from the `supported` list of a -32022 error, then
probes again); a recognised modern error never falls back; anything else, or no answer,
means a handshake-era server: fall back to `initialize`. `"legacy"` runs the handshake directly
(accepting a counter-offer only if we support it, or with `accept_older` an older handshake-era
one, spoken with our oldest handshake tables); a version string pins that version (a
modern pin sends nothing; a handshake-era pin runs `initialize` for exactly that version).

A failed authorization (`AuthError`, over HTTP) ends the negotiation at once: the server
answered, but only to say who may talk to it, so no fallback is tried.

Start-up time does not count against the probe: on a pipe the probe goes out with a `ping`
(the one request a handshake-era server answers before `initialize`), and the probe's clock
starts only once the server has answered something. Over HTTP every POST gets an answer (a
legacy server's is an error status), so the probe waits for it. A discover answer that arrives after the
fallback `initialize` was sent, but before its answer, is still adopted: a server that speaks
the modern era is never downgraded.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from ..errors import (
    MODERN_ERROR_CODES,
    AuthError,
    ConnectionClosed,
    McpError,
    McpRuntimeError,
    NegotiationError,
    RequestTimeout,
    UnsupportedProtocolVersion,
)
from ..registry import HANDSHAKE, MODERN, VersionRegistry, validation_detail

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from . import Client


_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}$")


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

    registry: VersionRegistry
    versions: Sequence[str]
    mode: str
    probed: list[str] = field(default_factory=list)
    accept_older: bool = False  # take an older handshake-era counter-offer (see `older_handshake`)

    def _newest(self, era: str) -> str | None:
        found = self.registry.newest_first(self.registry.of_era(era, self.versions))
        return found[0] if found else None

    def start(self) -> Step:
        if self.mode == "legacy":
            newest = self._newest(HANDSHAKE)
            return (
                Initialize(newest, exact=False)
                if newest
                else Fail("mode='legacy' needs a handshake-era version among the client's versions")
            )
        if self.mode != "auto":
            return Adopt(self.mode, None) if self.registry.is_modern(self.mode) else Initialize(self.mode, exact=True)
        newest = self._newest(MODERN)
        if newest is None:
            return self.fall_back("no modern version to probe with")
        self.probed.append(newest)
        return Probe(newest)

    def fall_back(self, reason: str) -> Step:
        """Anything but a recognised modern answer to the probe means a handshake-era server."""
        newest = self._newest(HANDSHAKE)
        if newest is None:
            return Fail(f"the server is not a modern server ({reason}) and we support no handshake version")
        return Initialize(newest, exact=False)

    def _choose(self, offered: Sequence[str], version: str) -> Step:
        choice = self.registry.newest_mutual(offered, self.versions)
        if choice is None:
            return Fail(
                f"no protocol version in common: the server supports {list(offered)}, we support {list(self.versions)}"
            )
        if not self.registry.is_modern(choice):
            return Initialize(choice, exact=False)
        if self.probed.count(choice) >= 2:  # one retry: a server may refuse a first request by design
            return Fail(f"the server refused {version} but lists it as supported")
        self.probed.append(choice)
        return Probe(choice)

    def after_discover(self, raw: Any, version: str) -> Step:
        spec = self.registry.spec(version, "server/discover")
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
        if self.registry.is_modern(choice):
            return Adopt(choice, raw)
        return Initialize(choice, exact=False)

    def after_probe_error(self, error: McpRuntimeError, version: str) -> Step:
        if isinstance(error, UnsupportedProtocolVersion):
            return self._choose(error.supported, version)
        if isinstance(error, McpError) and error.code in MODERN_ERROR_CODES:
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
        ours = self.registry.newest_first(self.registry.handshake_versions(self.versions))
        if not self.accept_older or not ours or not isinstance(offered, str) or not _DATED.match(offered):
            return None
        return ours[-1] if offered < ours[-1] else None

    def after_initialize(self, raw: Any, version: str, exact: bool) -> Step:
        offered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        acceptable = [version] if exact else self.registry.handshake_versions(self.versions)
        tables = offered if offered in acceptable else None if exact else self.older_handshake(offered)
        if tables is None:
            return Fail(
                f"the server answered initialize with protocol version {offered!r}; this client supports {acceptable}"
            )
        assert isinstance(raw, dict)
        spec = self.registry.spec(tables, "initialize")
        try:
            assert spec is not None
            spec.parse_result(raw)
        except ValidationError as exc:
            return Fail(f"invalid initialize result: {validation_detail(exc)}")
        return Adopt(tables, raw)


# -- the driver ----------------------------------------------------------------------------------


async def negotiate(client: Client) -> Adopt:
    """Run the negotiation on the client's session; the adopted version and the server's answer."""
    plan = Negotiation(client.registry, client.versions, client.mode, accept_older=client.accept_older)
    step = plan.start()
    while True:
        if isinstance(step, Adopt):
            return step
        if isinstance(step, Fail):
            raise NegotiationError(step.reason) from step.cause
        if isinstance(step, Initialize):
            step = await _initialize(client, plan, step)
        else:
            step = await _Probe(client, plan, step.version).run()


async def _initialize(client: Client, plan: Negotiation, step: Initialize) -> Step:
    try:
        raw = await client.session.send_request("initialize", client.initialize_params(step.version))
    except McpError as exc:
        return Fail(f"the server refused initialize for {step.version}: {exc} {exc.data or ''}".rstrip(), exc)
    return plan.after_initialize(raw, step.version, step.exact)


class _Probe:
    """One probe: `server/discover` (with a liveness `ping` on pipes), the clock, and the fallback
    `initialize` that may overlap a late discover answer."""

    def __init__(self, client: Client, plan: Negotiation, version: str) -> None:
        self.client, self.plan, self.version = client, plan, version
        self.events, self.inbox = anyio.create_memory_object_stream[tuple[str, Any]](8)
        self.fallback: Initialize | None = None
        self.discover_pending = True
        self.discover_id: int | str | None = None

    async def run(self) -> Step:
        try:
            return await self._run()
        except BaseExceptionGroup as group:  # a closed connection, from whichever task saw it first
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def _run(self) -> Step:
        async with anyio.create_task_group() as tg:
            probe_sent = anyio.Event()
            tg.start_soon(self._discover, probe_sent)
            needs_liveness = self.client.session.context.kind != "http"
            if needs_liveness:
                await probe_sent.wait()  # the probe goes first: some servers pick their era by the first message
                tg.start_soon(self._ping)
            # HTTP answers every POST (a legacy server with an error status): no silence to time out on,
            # so a slow answer under load is waited for instead of read as a legacy server.
            deadline = anyio.current_time() + self.client.startup_timeout
            step = await self._decide(tg, deadline)
            tg.cancel_scope.cancel()
        return step

    async def _decide(self, tg: anyio.abc.TaskGroup, deadline: float) -> Step:
        while True:
            wait = deadline - anyio.current_time() if self.fallback is None else math.inf
            with anyio.move_on_after(max(wait, 0)):
                kind, value = await self.inbox.receive()
                step = self._on(kind, value, tg)
                if kind == "alive" and self.fallback is None:
                    deadline = min(deadline, anyio.current_time() + self.client.probe_timeout)
                if step is not None:
                    return step
                continue
            held = self._held(deadline)
            if held > anyio.current_time():
                deadline = held
                continue
            step = self.plan.fall_back("no answer to server/discover in time")
            if not isinstance(step, Initialize):
                return step
            self.fallback = step
            tg.start_soon(self._initialize, step)

    def _held(self, deadline: float) -> float:
        """The probe's deadline, moved past an authorization that held the discover request up
        (a user signing in is not a slow server): the full startup time counts from its end."""
        calls = self.client.session.calls
        pending = calls.pending.get(self.discover_id) if self.discover_id is not None else None
        if pending is None:
            return deadline
        if pending.authorizing:
            return anyio.current_time() + self.client.startup_timeout
        if pending.resumed_at is not None:
            return max(deadline, pending.resumed_at + self.client.startup_timeout)
        return deadline

    def _on(self, kind: str, value: Any, tg: anyio.abc.TaskGroup) -> Step | None:
        if kind == "discover":
            self.discover_pending = False
            step = self.plan.after_discover(value, self.version)
        elif kind == "discover-error":
            self.discover_pending = False
            step = self.plan.after_probe_error(value, self.version)
        elif kind == "initialize":
            return (
                self.plan.after_initialize(value, self.fallback.version, self.fallback.exact) if self.fallback else None
            )
        elif kind == "initialize-error":
            if self.discover_pending:
                return None  # a modern-only server refuses initialize: its discover answer decides
            return Fail(f"the server refused initialize: {value}", value)
        else:
            return None
        if isinstance(step, Initialize) and self.fallback is not None:
            return None  # already sent: its answer decides
        return step

    async def _discover(self, probe_sent: anyio.Event) -> None:
        session = self.client.session
        try:
            params = {"_meta": self.client.request_meta(self.version)}
            self.discover_id = session.calls.next_id()
            raw = await session.send_request("server/discover", params, sent=probe_sent, request_id=self.discover_id)
            await self.events.send(("discover", raw))
        except (ConnectionClosed, AuthError):
            raise  # a server we may not use tells us nothing about its era: no fallback
        except McpRuntimeError as exc:
            await self.events.send(("discover-error", exc))

    async def _ping(self) -> None:
        try:
            await self.client.session.send_request("ping", None, timeout=self.client.startup_timeout)
        except McpError:
            pass  # an error is an answer too: the server is up
        except (RequestTimeout, ConnectionClosed):
            return  # the probe itself reports a closed connection
        await self.events.send(("alive", None))

    async def _initialize(self, step: Initialize) -> None:
        try:
            raw = await self.client.session.send_request("initialize", self.client.initialize_params(step.version))
            await self.events.send(("initialize", raw))
        except (ConnectionClosed, RequestTimeout, AuthError):
            raise  # no answer to initialize either (or no authorization for it): the caller hears why
        except McpRuntimeError as exc:
            await self.events.send(("initialize-error", exc))
