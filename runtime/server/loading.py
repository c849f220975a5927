"""Loading a module that defines a `Server`, to serve it some other way (`mcpgen serve`, workers).

A quick-start server file ends with `server.run_stdio()`, so importing it would serve stdio right
there (and, reading a terminal, hang). While a target is loaded (`loading()`), starting to serve
(`run_stdio`, `run_http`) stops the module there instead (`StartedWhileLoading`): what it defined
until then, its server included, is what the loader gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_LOADING: ContextVar[bool] = ContextVar("mcpgen_loading_a_server", default=False)


class StartedWhileLoading(BaseException):  # not an Exception: module code's `except Exception` lets it through
    """A module loaded for its `Server` started serving at import; `how` names the call."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


def not_while_loading(how: str) -> None:
    """Called by the blocking serve methods: stop a module being loaded from serving by itself."""
    if _LOADING.get():
        raise StartedWhileLoading(how)


@contextmanager
def loading() -> Iterator[None]:
    """While the block runs, a module that starts serving stops there (see the module docstring)."""
    token = _LOADING.set(True)
    try:
        yield
    finally:
        _LOADING.reset(token)
