"""Three middleware a server usually wants, written with the public middleware API (and examples of it).

    server = Server("demo", middleware=[RequestLogging(), RateLimit(20, per=1.0), Timing()])

- `RequestLogging`: one structured log record per request (method, target, era, version,
  principal, request id, outcome, duration), to a `logging` logger or a function of your own;
- `RateLimit`: a token bucket per principal (the authenticated caller; one shared bucket for
  callers without authentication): over the limit, the request is refused with -31429
  (`RateLimited`; a session refusing work past its own bounds answers -31503) and a `retryAfter`
  (seconds) in the error's data;
- `Timing`: how long each method (and each tool, prompt or resource) takes: count, total, max,
  kept in `timing.stats` or handed to a function of your own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import anyio

from ...protocol.errors import RATE_LIMITED, McpError, RateLimited
from .middleware import CallNext, Middleware, RequestInfo

__all__ = ["RATE_LIMITED", "RateLimit", "RateLimited", "RequestLogging", "Timing", "TimingStats"]

Clock = Callable[[], float]


def _clock() -> float:
    return anyio.current_time()


def _outcome(exc: BaseException | None, result: Any) -> str:
    if exc is None:
        is_error = result.get("isError") if isinstance(result, dict) else getattr(result, "is_error", None)
        return "tool_error" if is_error is True else "ok"
    if isinstance(exc, McpError):
        return str(exc.code)
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    return type(exc).__qualname__


def _label(request: RequestInfo) -> str:
    target = request.target if request.method in ("tools/call", "prompts/get") else None
    return f"{request.method} {target}" if target else request.method


class RequestLogging(Middleware):
    """One structured record per request: `logger.log(level, "...", extra={"mcp": record})`, or
    `emit(record)` when given. The record: `method`, `target`, `era`, `version`, `principal`,
    `request_id`, `outcome` (`ok`, `tool_error`, an error code, `cancelled`, or an exception type),
    `duration_ms`.

    Args:
        logger: where records go (default: the `mcpgen.requests` logger).
        level: the records' logging level.
        emit: a function that takes each record instead of the logger.
        clock: the clock durations are read from (seconds; default: the event loop's).
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        emit: Callable[[dict[str, Any]], None] | None = None,
        clock: Clock = _clock,
    ) -> None:
        self.logger = logger or logging.getLogger("mcpgen.requests")
        self.level = level
        self.emit = emit
        self.clock = clock

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        """Log one record for the `request` once `call_next` has answered it (or failed)."""
        started = self.clock()
        result: Any = None
        failure: BaseException | None = None
        try:
            result = await call_next()
            return result
        except BaseException as exc:
            failure = exc
            raise
        finally:
            record = {
                "method": request.method,
                "target": request.target,
                "era": request.era,
                "version": request.version,
                "principal": request.principal_id,
                "request_id": request.request_id,
                "outcome": _outcome(failure, result),
                "duration_ms": round((self.clock() - started) * 1000, 3),
            }
            if self.emit is not None:
                self.emit(record)
            elif self.logger.isEnabledFor(self.level):
                self.logger.log(
                    self.level,
                    "%s %s -> %s in %.1f ms",
                    _label(request),
                    record["principal"] or "-",
                    record["outcome"],
                    record["duration_ms"],
                    extra={"mcp": record},
                )


class RateLimit(Middleware):
    """At most `rate` requests per `per` seconds per principal, in bursts of up to `burst`
    (default: `rate`), as a token bucket. `exempt` methods are never limited (by default the ones
    that set up a connection). Callers without authentication share one bucket; `key(request)`
    picks another key (a session, a client id...).

    Args:
        rate: requests allowed per `per` seconds.
        per: the period of `rate`, in seconds.
        burst: the bucket's size (default: `rate`).
        exempt: methods never limited.
        key: the bucket a request counts against (default: its principal's id).
        clock: the clock the buckets refill by (seconds; default: the event loop's).
        max_keys: the most buckets kept; past it, full ones (else half of them) are forgotten.
    """

    def __init__(  # noqa: PLR0913 - every keyword is a documented option
        self,
        rate: float,
        *,
        per: float = 1.0,
        burst: float | None = None,
        exempt: Collection[str] = ("initialize", "ping", "server/discover"),
        key: Callable[[RequestInfo], str | None] | None = None,
        clock: Clock = _clock,
        max_keys: int = 100_000,
    ) -> None:
        if rate <= 0 or per <= 0:
            raise ValueError("rate and per must be positive")
        self.refill = rate / per  # tokens per second
        self.capacity = float(burst if burst is not None else rate)
        self.exempt = frozenset(exempt)
        self.key = key or (lambda request: request.principal_id)
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str | None, tuple[float, float]] = {}  # key -> (tokens, when)

    def _take(self, key: str | None) -> float:
        """Take a token for `key`: 0 when there was one, else how long until there is."""
        now = self.clock()
        tokens, when = self._buckets.get(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - when) * self.refill)
        if tokens >= 1:
            self._remember(key, (tokens - 1, now))
            return 0.0
        self._remember(key, (tokens, now))
        return (1 - tokens) / self.refill

    def _remember(self, key: str | None, bucket: tuple[float, float]) -> None:
        if key not in self._buckets and len(self._buckets) >= self.max_keys:
            now = self.clock()
            full = [k for k, (t, w) in self._buckets.items() if t + (now - w) * self.refill >= self.capacity]
            for stale in full or list(self._buckets)[: len(self._buckets) // 2]:
                del self._buckets[stale]
        self._buckets[key] = bucket

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        """Take a token for the `request` and `call_next`, or refuse it (`RateLimited`) when none is left."""
        if request.method not in self.exempt:
            wait = self._take(self.key(request))
            if wait > 0:
                raise RateLimited(wait)
        return await call_next()


@dataclass
class TimingStats:
    """How long one kind of request took: `count` of them, `total` and `max` seconds."""

    count: int = 0
    total: float = 0.0
    max: float = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


class Timing(Middleware):
    """Times every request, by method (and by tool and prompt: `tools/call add`), into
    `self.stats` (a `TimingStats` per label), or hands each measure to `record(label, seconds)`.

    Args:
        record: a function that takes each measure instead of `stats`.
        clock: the clock durations are read from (seconds; default: the event loop's).
    """

    def __init__(self, record: Callable[[str, float], None] | None = None, *, clock: Clock = _clock) -> None:
        self.stats: dict[str, TimingStats] = {}
        self.record = record
        self.clock = clock

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        """Time the `request` while `call_next` serves it."""
        started = self.clock()
        try:
            return await call_next()
        finally:
            self._add(_label(request), self.clock() - started)

    def _add(self, label: str, seconds: float) -> None:
        if self.record is not None:
            self.record(label, seconds)
            return
        stats = self.stats.setdefault(label, TimingStats())
        stats.count += 1
        stats.total += seconds
        stats.max = max(stats.max, seconds)
