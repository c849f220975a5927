"""What a server wraps around its handlers: middleware (every request, every tool call) and the
lifespan (what is opened once and shared), with three ready-made middleware (request logging,
a per-principal rate limit, timing)."""

from .lifespan import Lifespan, LifespanNotRunning, LifespanRunner, State
from .middleware import (
    AnyMiddleware,
    CallNext,
    Chains,
    Middleware,
    RequestHook,
    RequestInfo,
    ToolCall,
    ToolHook,
    run_chain,
)
from .standard import RateLimit, RateLimited, RequestLogging, Timing, TimingStats

__all__ = [
    "AnyMiddleware",
    "CallNext",
    "Chains",
    "Lifespan",
    "LifespanNotRunning",
    "LifespanRunner",
    "Middleware",
    "RateLimit",
    "RateLimited",
    "RequestHook",
    "RequestInfo",
    "RequestLogging",
    "State",
    "Timing",
    "TimingStats",
    "ToolCall",
    "ToolHook",
    "run_chain",
]
