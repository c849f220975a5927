"""The client's negotiation driver: send what `protocol.negotiation.Negotiation` decides, feed it
the answers, and adopt the version it settles on (see there for the modes and the decisions).

A failed authorization (`AuthError`, over HTTP) ends the negotiation at once: the server
answered, but only to say who may talk to it, so no fallback is tried.

Start-up time does not count against the probe: on a pipe the probe goes out with a `ping`
(the one request a handshake-era server answers before `initialize`), and the probe's clock
starts only once the server has answered something. Over a request-scoped transport (HTTP) every
request gets an answer (a handshake-era server's is an error status), so the probe waits for it.
A discover answer that arrives after the fallback `initialize` was sent, but before its answer, is
still adopted: a server that speaks the modern era is never downgraded.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.errors import AuthError, ConnectionClosed, McpError, McpRuntimeError, NegotiationError, RequestTimeout
from ..protocol.negotiation import DISCOVER_METHOD, Adopt, Fail, Initialize, Negotiation, Step

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from . import Client


async def negotiate(client: Client) -> Adopt:
    """Run the negotiation on the client's session; the adopted version and the server's answer."""
    plan = Negotiation(client.eras, client.versions, client.mode, accept_older=client.checks.older_handshake)
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
            needs_liveness = not self.client.session.context.request_scoped
            if needs_liveness:
                await probe_sent.wait()  # the probe goes first: some servers pick their era by the first message
                tg.start_soon(self._ping)
            # HTTP answers every POST (a legacy server with an error status): no silence to time out on,
            # so a slow answer under load is waited for instead of read as a legacy server.
            deadline = anyio.current_time() + self.client.timeouts.startup_or_default
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
                    deadline = min(deadline, anyio.current_time() + self.client.timeouts.probe)
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
            return anyio.current_time() + self.client.timeouts.startup_or_default
        if pending.resumed_at is not None:
            return max(deadline, pending.resumed_at + self.client.timeouts.startup_or_default)
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
            raw = await session.send_request(DISCOVER_METHOD, params, sent=probe_sent, request_id=self.discover_id)
            await self.events.send(("discover", raw))
        except (ConnectionClosed, AuthError):
            raise  # a server we may not use tells us nothing about its era: no fallback
        except McpRuntimeError as exc:
            await self.events.send(("discover-error", exc))

    async def _ping(self) -> None:
        try:
            await self.client.session.send_request("ping", None, timeout=self.client.timeouts.startup_or_default)
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
