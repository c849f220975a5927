"""Our requests awaiting the peer's answer: ids, pending calls and progress callbacks.

A plain object the session drives: `open` reserves an id (a counter, never reused) and, when a
progress callback is given, a progress token; `answer`/`fail` complete a call; `progress` routes
a `notifications/progress` to its callback; `close` fails every call when the connection ends.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeGuard

import anyio

from ..protocol import wire
from ..protocol.errors import McpError, McpRuntimeError
from .pipe import wake

log = logging.getLogger("mcpgen.runtime.core")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


class Pending:
    """One call waiting for its answer: `settle` wakes the caller's `waiter` (a loop future on
    asyncio, an `anyio.Event` elsewhere; set by the caller before the request is sent)."""

    __slots__ = (
        "authorizing",
        "barrier",
        "deadline",
        "error",
        "limit",
        "method",
        "result",
        "resumed_at",
        "settled",
        "token",
        "waiter",
    )

    def __init__(self, method: str) -> None:
        self.method = method
        self.token: wire.RequestId | None = None
        self.result: Any = None
        self.error: McpRuntimeError | None = None
        self.barrier = 0  # callbacks queued before the answer arrived
        self.deadline: Any = None  # the call's timeout while it runs (anything with a settable `deadline`)
        self.limit: float | None = None  # the timeout in seconds
        self.authorizing = False  # held up by an authorization: the timeout is stopped
        self.resumed_at: float | None = None  # when the last authorization ended
        self.settled = False  # answered or failed
        self.waiter: Any = None

    def settle(self) -> None:
        """The call is answered or failed: wake its caller (once)."""
        if self.settled:
            return
        self.settled = True
        waiter = self.waiter
        if waiter is not None:
            wake(waiter)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Correlation:
    """The pending calls of one session."""

    def __init__(self, side: str) -> None:
        self.side = side
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.pending: dict[wire.RequestId, Pending] = {}
        self._progress: dict[wire.RequestId, ProgressCallback] = {}

    def next_id(self) -> int:
        return next(self._ids)

    def open(self, request_id: wire.RequestId, method: str, on_progress: ProgressCallback | None) -> Pending:
        pending = Pending(method)
        if on_progress is not None:
            pending.token = f"{self.side}-progress-{next(self._tokens)}"
            self._progress[pending.token] = on_progress
        self.pending[request_id] = pending
        return pending

    def discard(self, request_id: wire.RequestId) -> None:
        pending = self.pending.pop(request_id, None)
        if pending is not None and pending.token is not None:
            self._progress.pop(pending.token, None)

    def answer(self, response: wire.Response, barrier: int) -> None:
        """Complete the call `response` answers (a late or unknown answer is ignored)."""
        if response.id is None:
            log.warning("peer reported an error without an id: %s", response.error)
            return
        pending = self.pending.get(response.id)
        if pending is None or pending.settled:
            log.debug("ignored a response to unknown or finished request %r", response.id)
            return
        pending.barrier = barrier
        if response.is_error:
            pending.error = McpError.from_error(response.error)
        else:
            pending.result = response.result
        pending.settle()

    def fail(self, request_id: wire.RequestId, error: McpRuntimeError) -> bool:
        pending = self.pending.get(request_id)
        if pending is None:
            return False
        if pending.settled:
            return False
        pending.error = error
        pending.settle()
        return True

    def authorizing(self, request_id: wire.RequestId, active: bool) -> None:
        """Stop the call's timeout while an authorization holds it up; restart it in full after."""
        pending = self.pending.get(request_id)
        if pending is None or pending.authorizing == active:
            return
        pending.authorizing = active
        now = anyio.current_time()
        if not active:
            pending.resumed_at = now
        if pending.deadline is not None and pending.limit is not None:
            pending.deadline.deadline = math.inf if active else now + pending.limit

    def close(self, error: Callable[[str], McpRuntimeError]) -> None:
        for pending in self.pending.values():
            if not pending.settled:
                pending.error = error(pending.method)
                pending.settle()

    async def progress(self, params: Mapping[str, Any]) -> None:
        token = params.get("progressToken")
        callback = self._progress.get(token) if wire.is_request_id(token) else None
        progress, total, message = params.get("progress"), params.get("total"), params.get("message")
        if callback is None or not is_number(progress):
            return
        try:
            outcome = callback(
                float(progress),
                float(total) if is_number(total) else None,
                message if isinstance(message, str) else None,
            )
            if outcome is not None:
                await outcome
        except Exception:
            log.exception("progress callback failed")
