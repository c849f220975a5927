"""What a client learns when a handler fails: what the handler meant to say, and nothing else.

- `ToolError("...")` raised by a tool: its message is the text of the tool's error result
  (`isError`), for the model to read; nothing else of it is sent.
- `NotFound("...")` raised by a resource or prompt handler: the protocol's error for a missing
  resource (-32002 with the URI in the handshake era, -32602 with the URI in the modern era) or
  prompt (-32602); raised by a tool, its message is the tool's error result.
- An `McpError` passes through with its code, message and data (the handler chose them).
- A `RemoteProtocolError` (the client's own answer broke the protocol, e.g. an answer to the
  server's request that could not be read) passes through with its message: it describes what the
  client sent, not the server.
- Anything else is unexpected: the client gets a generic message with an error id (-32603
  `Internal error (error id ...)` with `data.errorId`, or a tool error result saying the same),
  and the server's log gets the id with the traceback. File paths, SQL and secrets in exception
  messages stay on the server. `Server(diagnostics=Diagnostics(error_details=True))` sends the
  exception's type, message and traceback too (for development).
"""

from __future__ import annotations

import logging
import secrets
import traceback

from ..protocol.errors import InternalError, RemoteProtocolError

log = logging.getLogger("mcpgen.runtime.server")


class ToolError(Exception):
    """Raised by a tool: the message is the tool's error result, meant for the model."""


class NotFound(Exception):
    """Raised by a resource or prompt handler: what the request names does not exist (the
    protocol's not-found error); raised by a tool, its message is the tool's error result."""


def error_id() -> str:
    return secrets.token_hex(6)


class ErrorReporter:
    """Turns unexpected exceptions into what the client may see, logging each with an id."""

    def __init__(self, details: bool = False) -> None:
        self.details = details

    def _log(self, exc: BaseException, what: str) -> str:
        found = error_id()
        log.error("%s failed (error id %s)", what, found, exc_info=(type(exc), exc, exc.__traceback__))
        return found

    def internal(self, exc: BaseException, what: str) -> InternalError:
        """The -32603 error for an unexpected exception of `what` (logged with the traceback)."""
        if isinstance(exc, RemoteProtocolError):  # about the client's own message: nothing to hide
            return InternalError(str(exc))
        found = self._log(exc, what)
        if not self.details:
            return InternalError(f"Internal error (error id {found})", data={"errorId": found})
        return InternalError(
            f"Internal error: {type(exc).__name__}: {exc} (error id {found})",
            data={"errorId": found, "type": type(exc).__qualname__, "traceback": _traceback(exc)},
        )

    def tool_failure(self, exc: BaseException, tool: str) -> str:
        """The text of a tool's error result for an unexpected exception (logged with the traceback)."""
        if isinstance(exc, RemoteProtocolError):  # about the client's own message: nothing to hide
            return str(exc)
        found = self._log(exc, f"tool {tool}")
        if not self.details:
            return f"The tool {tool} failed (error id {found})."
        return f"{type(exc).__name__}: {exc} (error id {found})\n\n{_traceback(exc)}"


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
