"""The server's lifespan: what it opens once and shares with every handler.

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[AppState]:
        async with Pool(DSN) as pool:
            yield AppState(pool)

    server = Server("demo", lifespan=lifespan)        # a Server[AppState]

    @server.tool()
    async def count(ctx: RequestContext[AppState]) -> int:
        return await ctx.lifespan.pool.fetchval("select count(*) from t")

The lifespan runs once per process for as long as the server serves: around `run_stdio()`, the
connections `serve()` serves in this process (the first one starts it, the last one out stops
it, so memory clients share one), and the HTTP app's ASGI lifespan (`run_http`, `mcpgen serve`,
the worker factory, and the app mounted in Starlette or FastAPI with `lifespan=app.lifespan`).
`async with server.running():` holds it explicitly (tests, embedding).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic

import anyio
from typing_extensions import TypeVar

State = TypeVar("State", default=Any)
"""The type of what a server's lifespan yields (`Server[AppState]`, `RequestContext[AppState]`;
unparameterised, `Any`)."""

Lifespan = Callable[[Any], AbstractAsyncContextManager[State]]
"""`lifespan(server) -> async context manager yielding the state` (e.g. an `@asynccontextmanager`)."""


class LifespanNotRunning(RuntimeError):
    """A handler asked for the lifespan's state while the lifespan was not running."""


class LifespanRunner(Generic[State]):
    """Runs one server's lifespan for as long as anyone holds it (see the module docstring).

    The first holder enters the lifespan in its own task and is the one that leaves it, once the
    last holder is done (a holder that joins while it starts or stops waits for that first)."""

    def __init__(self, server: Any, lifespan: Lifespan[State] | None) -> None:
        self._server = server
        self._lifespan = lifespan
        self._state: Any = None
        self._phase = "idle"  # idle, starting, running, stopping
        self._holders = 0
        self._changed: anyio.Event | None = None
        self._released: anyio.Event | None = None

    @property
    def configured(self) -> bool:
        return self._lifespan is not None

    @property
    def running(self) -> bool:
        return self._phase == "running"

    @property
    def state(self) -> State:
        """What the lifespan yielded (`LifespanNotRunning` when it is not running)."""
        if self._lifespan is None:
            return self._state  # type: ignore[no-any-return]  # None: the default state type
        if self._phase != "running":
            raise LifespanNotRunning(
                "the server's lifespan is not running: serve the server (serve(), run_stdio(), its HTTP app "
                "with the ASGI lifespan) or hold it with `async with server.running():`"
            )
        return self._state  # type: ignore[no-any-return]

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    async def _wait_for_change(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[State]:
        """Hold the lifespan for the body: start it if nobody holds it, else share it."""
        if self._lifespan is None:
            yield self._state
            return
        while self._phase in ("starting", "stopping"):
            await self._wait_for_change()
        if self._phase == "running":
            self._holders += 1
            try:
                yield self._state
            finally:
                self._holders -= 1
                if self._holders == 0 and self._released is not None:
                    self._released.set()
            return
        async with self._own() as state:
            yield state

    @asynccontextmanager
    async def _own(self) -> AsyncIterator[State]:
        assert self._lifespan is not None
        self._set_phase("starting")
        self._holders = 1
        try:
            async with self._lifespan(self._server) as state:
                self._state = state
                self._set_phase("running")
                try:
                    yield state
                finally:
                    self._holders -= 1
                    if self._holders > 0:  # others still serve with it: the owner leaves it last
                        self._released = anyio.Event()
                        await self._released.wait()
                    self._released = None
                    self._set_phase("stopping")
                    self._state = None
        finally:
            self._holders = 0
            self._set_phase("idle")
