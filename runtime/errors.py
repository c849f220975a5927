"""The runtime's error hierarchy.

`McpRuntimeError` is the root. `McpError` is a JSON-RPC error (code, message, data): raised by a
handler it becomes the error response; received from the peer it is raised to the caller.
The other errors never cross the wire: timeouts, a closed connection, a failed negotiation, a
call the peer's capabilities do not allow.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND_LEGACY = -32002
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# Codes that identify a modern (2026-07-28+) server when they answer a probe (digest §1.3).
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


class McpRuntimeError(Exception):
    """Base of every error the runtime raises."""


class McpError(McpRuntimeError):
    """A JSON-RPC error: `code`, `message` and optional `data`."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_error(cls, error: Any) -> McpError:
        """The most specific `McpError` subclass for an error object received from a peer."""
        if not isinstance(error, dict):
            return McpError(f"malformed error object: {error!r}", code=INTERNAL_ERROR)
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = repr(message)
        kind = _BY_CODE.get(code, McpError)
        err = kind(message, data=error.get("data"))
        err.code = code
        return err

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"


class ParseError(McpError):
    code = PARSE_ERROR


class InvalidRequest(McpError):
    code = INVALID_REQUEST


class MethodNotFound(McpError):
    code = METHOD_NOT_FOUND


class InvalidParams(McpError):
    code = INVALID_PARAMS


class InternalError(McpError):
    code = INTERNAL_ERROR


class UnsupportedProtocolVersion(McpError):
    """-32022: the peer does not serve the requested version; `data` has `supported` and `requested`."""

    code = UNSUPPORTED_PROTOCOL_VERSION

    @property
    def supported(self) -> list[str]:
        found = self.data.get("supported") if isinstance(self.data, dict) else None
        return [v for v in found if isinstance(v, str)] if isinstance(found, list) else []


class MissingClientCapability(McpError):
    """-32021: serving the request needs a client capability the request did not declare."""

    code = MISSING_CLIENT_CAPABILITY


class HeaderMismatch(McpError):
    code = HEADER_MISMATCH


_BY_CODE: dict[int, type[McpError]] = {
    cls.code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        UnsupportedProtocolVersion,
        MissingClientCapability,
        HeaderMismatch,
    )
}


class RequestTimeout(McpRuntimeError, TimeoutError):
    """No response within the request's timeout (the request was cancelled at the peer)."""


class ConnectionClosed(McpRuntimeError):
    """The transport closed while a request was pending, or before a call was made."""


class NegotiationError(McpRuntimeError):
    """No protocol version both sides support, or the peer broke the handshake."""


class CapabilityError(McpRuntimeError):
    """A call the peer's (or our own) capabilities do not allow; nothing was sent."""


class InputError(McpRuntimeError):
    """The client could not provide the input a server asked for (multi-round-trip requests)."""


class MissingInputHandler(InputError):
    """The server asked for a kind of input (elicitation, sampling, roots) this client has no handler for."""


class InputRoundsExceeded(InputError):
    """The server kept asking for input past the configured number of rounds."""


class ElicitationError(InputError):
    """An elicitation answer that does not fit the requested schema, or form data in URL mode."""


class ProtocolError(McpRuntimeError):
    """The peer sent something the protocol does not allow (a wrong-direction method, a bad result)."""
