"""Server middleware: code that wraps every inbound request, and every tool call.

    class Audit(Middleware):
        async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
            started = time.monotonic()
            try:
                return await call_next()
            finally:
                log.info("%s took %.3f s", request.method, time.monotonic() - started)

        async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
            if call.name == "wipe" and not is_admin(call.ctx.auth):
                raise ToolError("only admins may wipe")
            return await call_next()

    server = Server("demo", middleware=[Audit(), RateLimit(10, per=1.0)])

- `on_request` runs for every request the router accepted (any method, either era), in the
  request's context: `request.method`, `.params` (the validated params model; what you leave
  there is what the handler gets), `.era`, `.version`, `.principal` (the authenticated caller,
  if any), `.ctx`. It may return a result without calling on (a dict or a result model: it is
  stamped and checked like the handler's), raise an `McpError` (the client gets that error), or
  call on and look at or change what comes back. A request the router refused (an unknown
  method, invalid params, a version the server does not speak) never reaches it.
- `on_tool_call` runs around the tool's own function, after the arguments were checked:
  `call.name`, `.tool`, `.arguments` (the checked values by parameter name: change them to change
  what the function gets), `.ctx`. It may return a value in the function's stead (it becomes the
  result as the function's value would), raise `ToolError` (the model reads its message), or let
  the function's exceptions pass (they become the tool's error result after it, as without
  middleware).
- Order: the first middleware of the list is the outermost: it sees the request first and the
  result last. Each hook is a plain method; a middleware overrides the hooks it needs (a plain
  `async def (request, call_next)` function is a request middleware).
- Cost: a server without middleware runs none of this (one check per request); a middleware
  that overrides only `on_request` costs nothing on tool calls, and the other way round.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ...auth.shared.principal import principal_of

if TYPE_CHECKING:
    from ..context import RequestContext
    from ..features import ToolDef

CallNext = Callable[[], Awaitable[Any]]
"""Runs the rest of the chain (and then the handler or the tool) and returns what it returned."""


@dataclass(slots=True)
class RequestInfo:
    """One inbound request, as request middleware sees it.

    Attributes:
        method: the request's method.
        params: the params model the router validated (None for a method without params); what a
            middleware leaves here is what the handler gets.
        era: `handshake` or `modern` (the era names of the generated tables).
        version: the protocol version the request is served with.
        ctx: the request's context.
    """

    method: str
    params: Any  # the params model the router validated (None for a method without params)
    era: str  # "handshake" or "modern" (the era names of the generated tables)
    version: str  # the protocol version the request is served with
    ctx: RequestContext[Any]

    @property
    def principal(self) -> Any:
        """The authenticated caller (an `AuthInfo` over HTTP with `auth=`), None when the
        transport does not authenticate."""
        return self.ctx.auth

    @property
    def principal_id(self) -> str | None:
        """A stable string for the caller (issuer and subject), None without authentication."""
        return principal_of(self.ctx.auth)

    @property
    def request_id(self) -> str | int:
        """The request's JSON-RPC id."""
        return self.ctx.request_id

    @property
    def target(self) -> str | None:
        """What the request names: the tool or prompt (`name`), or the resource (`uri`)."""
        for key in ("name", "uri"):
            value = getattr(self.params, key, None)
            if isinstance(value, str):
                return value
        return None


@dataclass(slots=True)
class ToolCall:
    """One call of a tool, as tool middleware sees it (after its arguments were checked).

    Attributes:
        name: the tool's name.
        arguments: the checked argument values, by parameter name (change them to change what
            the function gets).
        tool: the tool's definition.
        ctx: the request's context.
    """

    name: str
    arguments: dict[str, Any]  # the checked argument values, by parameter name
    tool: ToolDef
    ctx: RequestContext[Any]

    @property
    def principal(self) -> Any:
        return self.ctx.auth

    @property
    def principal_id(self) -> str | None:
        return principal_of(self.ctx.auth)


class Middleware:
    """The base of server middleware: override `on_request`, `on_tool_call`, or both (see the module docstring)."""

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        """Wrap one inbound request (the default calls on).

        Args:
            request: the request.
            call_next: runs the rest of the chain and the handler, and returns its result.

        Returns:
            The request's result (a dict or a result model).
        """
        return await call_next()

    async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
        """Wrap one tool call (the default calls on).

        Args:
            call: the call, its arguments checked.
            call_next: runs the rest of the chain and the tool's function, and returns its value.

        Returns:
            The tool's value (what its function would return).
        """
        return await call_next()


RequestHook = Callable[[RequestInfo, CallNext], Awaitable[Any]]
ToolHook = Callable[[ToolCall, CallNext], Awaitable[Any]]
AnyMiddleware = Union[Middleware, RequestHook]  # noqa: UP007 - a runtime alias on Python 3.10


class _FunctionMiddleware(Middleware):
    def __init__(self, fn: RequestHook) -> None:
        self.fn = fn

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        return await self.fn(request, call_next)


def _overrides(middleware: Middleware, hook: str) -> bool:
    return getattr(type(middleware), hook) is not getattr(Middleware, hook)


class Chains:
    """The hooks of a server's middleware, by kind, outermost first (empty: nothing runs)."""

    def __init__(self, middleware: Sequence[AnyMiddleware] = ()) -> None:
        self.middleware: list[Middleware] = []
        self.requests: tuple[RequestHook, ...] = ()
        self.tools: tuple[ToolHook, ...] = ()
        for item in middleware:
            self.add(item)

    def add(self, item: AnyMiddleware) -> None:
        """Add a middleware inside the ones already there."""
        if not isinstance(item, Middleware):
            if not callable(item):
                raise TypeError(f"a middleware is a Middleware or an async function, not {type(item).__name__}")
            item = _FunctionMiddleware(item)
        self.middleware.append(item)
        if _overrides(item, "on_request"):
            self.requests = (*self.requests, item.on_request)
        if _overrides(item, "on_tool_call"):
            self.tools = (*self.tools, item.on_tool_call)


async def run_chain(hooks: Sequence[Callable[[Any, CallNext], Awaitable[Any]]], subject: Any, last: CallNext) -> Any:
    """Run `hooks` around `last`, the first outermost."""
    if len(hooks) == 1:  # the usual case: the hook calls on straight into `last`
        return await hooks[0](subject, last)

    async def step(index: int) -> Any:
        if index == len(hooks):
            return await last()
        return await hooks[index](subject, lambda: step(index + 1))

    return await step(0)
