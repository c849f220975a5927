"""The client's negotiation driver: send what `protocol.negotiation.Negotiation` decides, feed it
the answers, and adopt the version it settles on (see there for the modes and the decisions).

A failed authorization (`AuthError`, over HTTP) ends the negotiation at once: the server
answered, but only to say who may talk to it, so no fallback is tried.

The whole negotiation (the probe, the fallback `initialize`, a second probe after a -32022) has
one deadline, `Timeouts.startup` from its start: what the server does not answer by then fails
with `RequestTimeout`, whatever mix of silence, errors and garbage it sent. Start-up time does not
count against the probe: on a pipe the probe goes out with a `ping` (the one request a
handshake-era server answers before `initialize`), and the probe's clock (`Timeouts.probe`, at most
half of what is left, so the fallback has time) starts only once the server has answered
something; a server that answers nothing at all before the deadline is not answering. Over a
request-scoped transport (HTTP) every request gets an answer (a handshake-era server's is an error
status), so the probe waits for it. A discover answer that arrives after the fallback `initialize`
was sent, but before its answer, is still adopted: a server that speaks the modern era is never
downgraded; and an `initialize` refused meanwhile waits one more probe window for that discover
answer before it counts. Time spent authorizing (a user signing in) moves the deadline. A modern
pin negotiates nothing: on a stream its first calls carry the server's start instead, within the
same deadline (see `RequestPipeline.starting`).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.errors import (
    AuthError,
    ConnectionClosed,
    McpError,
    McpRuntimeError,
    NegotiationError,
    RemoteProtocolError,
    RequestTimeout,
)
from ..protocol.negotiation import DISCOVER_METHOD, Adopt, Fail, Initialize, Negotiation, Step

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from . import Client
    from .options import Timeouts


async def negotiate(client: Client) -> Adopt:
    """Run the negotiation on the client's session; the adopted version and the server's answer."""
    plan = Negotiation(client.eras, client.versions, client.mode, accept_older=client.checks.older_handshake)
    startup = client.timeouts.startup_or_default
    deadline = anyio.current_time() + startup
    step, first = plan.start(), True
    while True:
        if isinstance(step, Adopt):
            return step
        if isinstance(step, Fail):
            raise NegotiationError(step.reason) from step.cause
        if isinstance(step, Initialize):
            limit = startup if first else max(deadline - anyio.current_time(), 0.0)  # what the probe left
            step = await _initialize(client, plan, step, limit)
        else:
            probe = _Probe(client, plan, step.version, deadline)
            step = await probe.run()
            deadline = probe.deadline  # moved by an authorization
        first = False


async def _initialize(client: Client, plan: Negotiation, step: Initialize, limit: float) -> Step:
    try:
        raw = await client.session.send_request("initialize", client.initialize_params(step.version), timeout=limit)
    except McpError as exc:
        return Fail(f"the server refused initialize for {step.version}: {exc} {exc.data or ''}".rstrip(), exc)
    except RemoteProtocolError as exc:
        return Fail(f"the server's answer to initialize for {step.version} is unusable: {exc}", exc)
    return plan.after_initialize(raw, step.version, step.exact)


class _Probe:
    """One probe: `server/discover` (with a liveness `ping` on pipes), its clock, and the fallback
    `initialize` that may overlap a late discover answer, all within the negotiation's deadline."""

    def __init__(self, client: Client, plan: Negotiation, version: str, deadline: float) -> None:
        self.client, self.plan, self.version = client, plan, version
        self.deadline = deadline  # the whole negotiation's (moved by an authorization)
        self.events, self.inbox = anyio.create_memory_object_stream[tuple[str, Any]](8)
        self.fallback: Initialize | None = None
        self.discover_pending = True
        self.alive = False  # the server answered something
        self.refused: Fail | None = None  # initialize was refused while the discover answer may still decide
        self.refused_until = math.inf  # ... until then (one more probe window)
        self.ids: dict[str, int | str] = {}  # method -> the id of our request

    @property
    def timeouts(self) -> Timeouts:
        return self.client.timeouts

    async def run(self) -> Step:
        try:
            with self.events, self.inbox:  # the probe's tasks are done with them when _run returns
                return await self._run()
        except BaseExceptionGroup as group:  # a closed connection, from whichever task saw it first
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def _run(self) -> Step:
        async with anyio.create_task_group() as tg:
            probe_sent = anyio.Event()
            tg.start_soon(self._discover, probe_sent)
            if not self.client.session.context.request_scoped:
                await probe_sent.wait()  # the probe goes first: some servers pick their era by the first message
                tg.start_soon(self._ping)
            # HTTP answers every POST (a legacy server with an error status): no silence to time out on,
            # so a slow answer under load is waited for (up to the deadline) instead of read as a legacy server.
            step = await self._decide(tg)
            tg.cancel_scope.cancel()
        return step

    async def _decide(self, tg: anyio.abc.TaskGroup) -> Step:
        probe_until = math.inf  # the probe's own clock: set once the server answered something
        while True:
            if self.refused is not None:  # initialize was refused: the discover answer has a last moment
                until = min(self.deadline, self.refused_until)
            elif self.fallback is not None:
                until = self.deadline
            else:
                until = min(self.deadline, probe_until)
            with anyio.move_on_after(max(until - anyio.current_time(), 0)):
                kind, value = await self.inbox.receive()
                if kind == "alive" and not self.alive:
                    self.alive = True
                    probe_until = self._window()
                step = self._on(kind, value)
                if step is not None:
                    return step
                continue
            if self._held():
                continue
            if self.refused is not None:
                return self.refused
            if anyio.current_time() >= self.deadline:
                return self._out_of_time()
            step = self.plan.fall_back("no answer to server/discover in time")
            if not isinstance(step, Initialize):
                return step
            self.fallback = step
            tg.start_soon(self._initialize, step)

    def _window(self) -> float:
        """When the probe's clock (started now) runs out: `Timeouts.probe`, at most half of what is
        left of the deadline (the fallback needs time too)."""
        now = anyio.current_time()
        return now + min(self.timeouts.probe, max(self.deadline - now, 0) / 2)

    def _held(self) -> bool:
        """Move the deadline past an authorization that held one of our requests up (a user signing
        in is not a slow server): the full startup time counts from its end. True if it moved."""
        calls = self.client.session.calls
        startup = self.timeouts.startup_or_default
        moved = self.deadline
        for request_id in self.ids.values():
            pending = calls.pending.get(request_id)
            if pending is None:
                continue
            if pending.authorizing:
                moved = max(moved, anyio.current_time() + startup)
            elif pending.resumed_at is not None:
                moved = max(moved, pending.resumed_at + startup)
        if moved > self.deadline:
            self.deadline = moved
            return moved > anyio.current_time()
        return False

    def _out_of_time(self) -> Step:
        """The negotiation's deadline passed: what the server did say, or that it said nothing."""
        startup = self.timeouts.startup_or_default
        if self.fallback is not None:
            raise RequestTimeout(f"initialize: no answer within the {startup} s the connection may take")
        if not self.alive and not self.client.session.context.request_scoped:
            raise RequestTimeout(f"the server answered nothing (neither {DISCOVER_METHOD} nor ping) within {startup} s")
        raise RequestTimeout(f"{DISCOVER_METHOD}: no answer within the {startup} s the connection may take")

    def _on(self, kind: str, value: Any) -> Step | None:
        if kind == "discover":
            self.discover_pending = False
            step = self.plan.after_discover(value, self.version)
        elif kind == "discover-error":
            self.discover_pending = False
            step = self.plan.after_probe_error(value, self.version)
        elif kind == "initialize":
            assert self.fallback is not None
            return self.plan.after_initialize(value, self.fallback.version, self.fallback.exact)
        elif kind == "initialize-error":
            refused = Fail(f"the server refused initialize: {value}", value)
            if self.discover_pending:
                self.refused = refused  # a modern-only server refuses initialize: its discover answer decides
                self.refused_until = self._window()
                return None
            return refused
        else:
            return None
        if isinstance(step, Initialize) and self.fallback is not None:
            return self.refused  # sent already: its answer decides (or decided: refused)
        return step

    async def _discover(self, probe_sent: anyio.Event) -> None:
        session = self.client.session
        try:
            params = {"_meta": self.client.request_meta(self.version)}
            self.ids[DISCOVER_METHOD] = request_id = session.calls.next_id()
            raw = await session.send_request(
                DISCOVER_METHOD, params, timeout=None, sent=probe_sent, request_id=request_id
            )
            await self._tell("discover", raw)
        except (ConnectionClosed, AuthError):
            raise  # a server we may not use tells us nothing about its era: no fallback
        except McpRuntimeError as exc:
            await self._tell("discover-error", exc)

    async def _ping(self) -> None:
        try:
            await self.client.session.send_request("ping", None, timeout=None)
        except ConnectionClosed:
            return  # the probe itself reports a closed connection
        except McpRuntimeError:
            pass  # an error, even an unreadable answer, is an answer too: the server is up
        await self._tell("alive", None)

    async def _initialize(self, step: Initialize) -> None:
        session = self.client.session
        try:
            self.ids["initialize"] = request_id = session.calls.next_id()
            params = self.client.initialize_params(step.version)
            raw = await session.send_request("initialize", params, timeout=None, request_id=request_id)
            await self._tell("initialize", raw)
        except (ConnectionClosed, AuthError):
            raise  # no answer to initialize (or no authorization for it): the caller hears why
        except McpRuntimeError as exc:
            await self._tell("initialize-error", exc)

    async def _tell(self, kind: str, value: Any) -> None:
        await self.events.send((kind, value))
