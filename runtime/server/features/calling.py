"""Calling the functions a server is made of: injected parameters resolved, plain `def`s off the loop.

A handler function (tool, prompt, resource, template, completion) is described once, when it is
registered, as a `Callee`: is it a coroutine function, which parameter takes the request context,
which parameters are injected (`Annotated[T, Depends(provider)]`). Each call then

- resolves the injected parameters, once per provider per call: a provider is a function of the
  request context and of other providers (sync, async, or a generator that yields the value and
  cleans up after the call); `server.dependency_overrides[provider] = other` swaps one (tests);
- runs an `async def` on the event loop, and a plain `def` in a worker thread (`core.worker.run_in_thread`:
  on asyncio the loop's own light hand-off, on trio anyio's; bounded by `ServerLimits.worker_threads`,
  else anyio's default limiter), so a blocking handler never holds up another request.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.worker import run_in_thread
from .common import hints, is_context

if TYPE_CHECKING:
    from anyio import CapacityLimiter

_thread_state = threading.local()


class Depends:
    """Marks a handler parameter as injected: `db: Annotated[Database, Depends(get_db)]`.

    The provider is called for each call (once per call, however many parameters name it) with
    what its own parameters ask for: the request context (a parameter annotated `RequestContext`)
    and other providers (`Annotated[..., Depends(...)]`). It may be sync, async, or a generator
    (sync or async) that yields the value and cleans up once the handler is done. The parameter
    is not part of the tool's input schema, the prompt's arguments or the template's variables.

    Args:
        provider: the function that makes the value.
    """

    __slots__ = ("provider",)

    def __init__(self, provider: Callable[..., Any]) -> None:
        if not callable(provider):
            raise TypeError(f"Depends() takes a function, not {type(provider).__name__}")
        self.provider = provider

    def __repr__(self) -> str:
        return f"Depends({getattr(self.provider, '__qualname__', self.provider)!r})"


def injected_by(annotation: Any) -> Callable[..., Any] | None:
    """The provider an `Annotated[T, Depends(provider)]` annotation names, if any."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    for extra in typing.get_args(annotation)[1:]:
        if isinstance(extra, Depends):
            return extra.provider
    return None


def is_coroutine_function(fn: Callable[..., Any]) -> bool:
    """`async def` functions, also behind `functools.partial` and objects with an async `__call__`."""
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    target = inspect.unwrap(target)
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    return not inspect.isfunction(target) and not inspect.ismethod(target) and inspect.iscoroutinefunction(call)


@dataclass(frozen=True, slots=True)
class Callee:
    """A handler function as the server calls it (see the module docstring)."""

    fn: Callable[..., Any]
    is_async: bool
    context_param: str | None
    dependencies: tuple[tuple[str, Callable[..., Any]], ...]

    @property
    def not_from_client(self) -> frozenset[str]:
        """The parameters the server fills in (the context and the injected ones)."""
        names = {name for name, _ in self.dependencies}
        if self.context_param is not None:
            names.add(self.context_param)
        return frozenset(names)


def describe(fn: Callable[..., Any], found: Mapping[str, Any] | None = None) -> Callee:
    """Read `fn`'s signature: its context parameter and its injected parameters (each provider
    checked now, so a provider the server cannot call fails the registration, not a call)."""
    found = hints(fn) if found is None else found
    context = None
    dependencies: list[tuple[str, Callable[..., Any]]] = []
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = found.get(pname, param.annotation)
        provider = injected_by(annotation)
        if provider is not None:
            dependencies.append((pname, provider))
        elif is_context(annotation):
            context = pname
    for _, provider in dependencies:
        _provider(provider)
    return Callee(fn, is_coroutine_function(fn), context, tuple(dependencies))


_checking: set[Callable[..., Any]] = set()


@functools.lru_cache(maxsize=1024)
def _provider(fn: Callable[..., Any]) -> Callee:
    if fn in _checking:
        raise TypeError(f"the provider {getattr(fn, '__qualname__', fn)} depends on itself")
    _checking.add(fn)
    try:
        callee = describe(fn)
    finally:
        _checking.discard(fn)
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in callee.not_from_client:
            continue
        if param.default is inspect.Parameter.empty and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"the provider {getattr(fn, '__qualname__', fn)} has a parameter {pname!r} that is neither the "
                "request context nor Annotated[..., Depends(...)]"
            )
    return callee


class Resolution:
    """The injected values of one call (each provider runs once), and their clean-ups."""

    def __init__(self, ctx: Any, overrides: Mapping[Callable[..., Any], Callable[..., Any]]) -> None:
        self.ctx = ctx
        self.overrides = overrides
        self.values: dict[Callable[..., Any], Any] = {}
        self.stack = contextlib.AsyncExitStack()
        self._resolving: set[Callable[..., Any]] = set()

    async def fill(self, kwargs: dict[str, Any], dependencies: Iterable[tuple[str, Callable[..., Any]]]) -> None:
        for pname, provider in dependencies:
            kwargs[pname] = await self.value(provider)

    async def value(self, provider: Callable[..., Any]) -> Any:
        if provider in self.values:
            return self.values[provider]
        if provider in self._resolving:
            raise TypeError(f"the provider {getattr(provider, '__qualname__', provider)} depends on itself")
        self._resolving.add(provider)
        try:
            target = self.overrides.get(provider, provider)
            callee = _provider(target)
            kwargs: dict[str, Any] = {}
            if callee.context_param is not None:
                kwargs[callee.context_param] = self.ctx
            await self.fill(kwargs, callee.dependencies)
            value = await self._produce(target, kwargs)
        finally:
            self._resolving.discard(provider)
        self.values[provider] = value
        return value

    async def _produce(self, target: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        unwrapped = inspect.unwrap(target)
        if inspect.isasyncgenfunction(unwrapped):
            return await self.stack.enter_async_context(contextlib.asynccontextmanager(target)(**kwargs))
        if inspect.isgeneratorfunction(unwrapped):
            return self.stack.enter_context(contextlib.contextmanager(target)(**kwargs))
        value = target(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value


def invoke(
    callee: Callee,
    kwargs: dict[str, Any],
    ctx: Any,
    *,
    overrides: Mapping[Callable[..., Any], Callable[..., Any]],
    limiter: CapacityLimiter | None,
) -> Awaitable[Any]:
    """Call a handler: the context and the injected parameters filled in, a plain `def` in a worker
    thread. (A plain function returning what to await: an `async def` handler without injected
    parameters is awaited with no frame of ours around it.)"""
    if callee.context_param is not None:
        kwargs[callee.context_param] = ctx
    if not callee.dependencies:
        return run(callee, kwargs, limiter)
    return _injected(callee, kwargs, ctx, overrides, limiter)


async def _injected(
    callee: Callee,
    kwargs: dict[str, Any],
    ctx: Any,
    overrides: Mapping[Callable[..., Any], Callable[..., Any]],
    limiter: CapacityLimiter | None,
) -> Any:
    resolution = Resolution(ctx, overrides)
    async with resolution.stack:
        await resolution.fill(kwargs, callee.dependencies)
        return await run(callee, kwargs, limiter)


def run(callee: Callee, kwargs: Mapping[str, Any], limiter: CapacityLimiter | None) -> Awaitable[Any]:
    """The handler's own coroutine (`async def`), or its call in a worker thread (plain `def`)."""
    if callee.is_async:
        awaitable: Awaitable[Any] = callee.fn(**kwargs)
        return awaitable
    return _in_thread(callee.fn, kwargs, limiter)


async def _in_thread(fn: Callable[..., Any], kwargs: Mapping[str, Any], limiter: CapacityLimiter | None) -> Any:
    value = await run_in_thread(_in_worker, fn, kwargs, limiter=limiter)
    if inspect.isawaitable(value):  # a plain function that returned an awaitable: awaited on the loop
        value = await value
    return value


def _in_worker(fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    _thread_state.active = True
    try:
        return fn(**kwargs)
    finally:
        _thread_state.active = False


async def call_positional(callee: Callee, args: tuple[Any, ...], limiter: CapacityLimiter | None) -> Any:
    """Call a handler that takes positional arguments (the completion handler), off the loop when plain."""
    if callee.is_async:
        return await callee.fn(*args)
    return await run(Callee(functools.partial(callee.fn, *args), False, None, ()), {}, limiter)


def in_handler_thread() -> bool:
    """Is this a worker thread running a plain `def` handler (whose calls into the server must hop
    back to the event loop)?"""
    return bool(getattr(_thread_state, "active", False))
