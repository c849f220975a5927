"""The runtime's error hierarchy.

`McpRuntimeError` is the root of every error the runtime raises to a user.

- `McpError` is a JSON-RPC error (code, message, data): raised by a handler it becomes the
  error response; received from the peer it is raised to the caller, as the subclass of its code.
  JSON-RPC's own codes are constants here; the codes MCP adds come from the generated tables
  (`versions.ERROR_CODES`, keyed by the schema def that fixes each one), never from numbers
  written down a second time.
- `ProtocolError` is a violation of the protocol that never crosses the wire as such:
  `RemoteProtocolError` when the peer broke it (an invalid result, an unknown input kind, a
  server that never stops paginating), `LocalProtocolError` when our own side did (a handler
  that returned an invalid result, a message over our own size limit).
- The rest never cross the wire either: timeouts, a closed connection, a failed negotiation,
  a failed authorization (`AuthError`), a call the peer's capabilities do not allow, input the
  client could not provide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ValidationError

try:
    from mcpgen.generated import versions as _tree
except ModuleNotFoundError as _missing:  # importing the runtime without a tree: say what to run
    if _missing.name not in ("mcpgen.generated", "mcpgen.generated.versions"):
        raise
    raise ModuleNotFoundError(
        "mcpgen's generated tree is missing: run `mcpgen sync && mcpgen generate` "
        "(or install a built mcpgen wheel, which ships it)",
        name=_missing.name,
    ) from None

# JSON-RPC 2.0's own error codes (they are not MCP's to define).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
JSONRPC_CODES = frozenset({PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR})

# mcpgen's own codes, for refusals no MCP schema fixes a code for. They lie outside JSON-RPC's
# reserved range (-32768 to -32000), where the 2026-07-28 text asks such codes to go: its -32000 to
# -32019 is a legacy range new implementations should not use, whose codes receivers must not read
# a meaning into (and the official Python SDK's own "connection closed" is -32000). The last three
# digits recall the HTTP status of the same refusal.
SERVER_OVERLOADED = -31503
"""A session had as many requests running and waiting as it takes (`data`: `maxInFlight`, `maxBacklog`)."""
RATE_LIMITED = -31429
"""The caller made more requests than its rate allows (`data.retryAfter`, in seconds)."""


def schema_error_codes() -> dict[str, int]:
    """Every error code the generated tree's schemas fix, by def name (newest version wins)."""
    codes: dict[str, int] = {}
    for version in _tree.SUPPORTED:
        codes.update(_tree.ERROR_CODES.get(version, {}))
    return codes


def later_error_codes() -> frozenset[int]:
    """The codes that schemas after the tree's oldest version fix (beyond JSON-RPC's own): an answer
    with one of them identifies a peer of a later revision (the modern era, today)."""
    if not _tree.SUPPORTED:
        return frozenset()
    oldest = set(_tree.ERROR_CODES.get(_tree.SUPPORTED[0], {}).values())
    later = {c for v in _tree.SUPPORTED[1:] for c in _tree.ERROR_CODES.get(v, {}).values()}
    return frozenset(later - oldest - JSONRPC_CODES)


_SCHEMA_CODES = schema_error_codes()
LATER_ERROR_CODES = later_error_codes()


class McpRuntimeError(Exception):
    """Base of every error the runtime raises."""


class McpError(McpRuntimeError):
    """A JSON-RPC error: `code`, `message` and optional `data`."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        """Make the error a handler raises (the runtime sends it as the JSON-RPC error) or a caller receives.

        Args:
            message: the error's message, for people.
            code: the JSON-RPC code (default: the class's own, e.g. -32602 for `InvalidParams`).
            data: anything JSON-representable the peer may use (e.g. `supported` versions).
        """
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_error(cls, error: object) -> McpError:
        """The most specific `McpError` subclass for `error`, an error object received from a peer
        (a malformed one becomes an `InternalError`-coded `McpError` describing it)."""
        if not isinstance(error, Mapping):
            return McpError(f"malformed error object: {error!r}", code=INTERNAL_ERROR)
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = repr(message)
        kind = _BY_CODE.get(code, McpError)
        err = McpError.__new__(kind)
        McpError.__init__(err, message, code=code, data=error.get("data"))
        return err

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"


class ParseError(McpError):
    """The message was not valid JSON (-32700)."""

    code = PARSE_ERROR


class InvalidRequest(McpError):
    """The message is not a valid JSON-RPC request, or not one the peer accepts now (-32600)."""

    code = INVALID_REQUEST


class MethodNotFound(McpError):
    """The peer does not have the method, or does not serve it on this version (-32601)."""

    code = METHOD_NOT_FOUND


class InvalidParams(McpError):
    """The params do not validate against the method's table, or a handler refused them (-32602)."""

    code = INVALID_PARAMS


class InternalError(McpError):
    """The peer failed while serving the request (-32603); a handler's unexpected exception is sent as one."""

    code = INTERNAL_ERROR


class SchemaDefinedError(McpError):
    """An error whose code an MCP schema fixes: the class names the def, the tables give the code."""

    schema_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found = _SCHEMA_CODES.get(cls.schema_name)
        if found is not None:
            cls.code = found

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        """Make the error (as `McpError`: `message`, `code`, `data`); the code defaults to the
        one the generated tables give the schema's error def.

        Raises:
            LookupError: no code was given and no protocol version of the tree defines the error.
        """
        if code is None and self.schema_name not in _SCHEMA_CODES:
            raise LookupError(f"no protocol version of this generated tree defines {self.schema_name}")
        super().__init__(message, code=code, data=data)


class UnsupportedProtocolVersion(SchemaDefinedError):
    """The peer does not serve the requested version; `data` has `supported` and `requested`."""

    schema_name = "UnsupportedProtocolVersionError"

    @property
    def supported(self) -> list[str]:
        """The versions the peer said it supports (`data.supported`; empty if it did not say)."""
        found = self.data.get("supported") if isinstance(self.data, dict) else None
        return [v for v in found if isinstance(v, str)] if isinstance(found, list) else []


class MissingClientCapability(SchemaDefinedError):
    """Serving the request needs a client capability the request did not declare
    (`data.requiredCapabilities`)."""

    schema_name = "MissingRequiredClientCapabilityError"


class HeaderMismatch(SchemaDefinedError):
    """An HTTP routing header disagrees with the body, is missing, or is malformed."""

    schema_name = "HeaderMismatchError"


class UrlElicitationRequired(SchemaDefinedError):
    """The request needs the user to complete a URL elicitation first (handshake era)."""

    schema_name = "URLElicitationRequiredError"


class ServerOverloaded(McpError):
    """The peer had as many requests running and waiting for room as it takes (-31503; `data`:
    `maxInFlight`, `maxBacklog`): the request was not served; send it again once answers arrive."""

    code = SERVER_OVERLOADED


class RateLimited(McpError):
    """The caller made more requests than its rate allows (-31429; `data.retryAfter`, in seconds):
    the request was not served; send it again after that."""

    code = RATE_LIMITED

    def __init__(self, retry_after: float) -> None:
        """Refuse a request of a caller over its rate, for `retry_after` seconds (a middleware raises it)."""
        super().__init__(
            f"rate limit exceeded; retry in {retry_after:.2f} s", data={"retryAfter": round(retry_after, 3)}
        )

    @property
    def retry_after(self) -> float | None:
        """Seconds until the caller may try again (`data.retryAfter`; None if the peer did not say)."""
        found = self.data.get("retryAfter") if isinstance(self.data, dict) else None
        return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else None


_BY_CODE: dict[int, type[McpError]] = {
    **{cls.code: cls for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError)},
    ServerOverloaded.code: ServerOverloaded,
    RateLimited.code: RateLimited,
    **{
        cls.code: cls
        for cls in (UnsupportedProtocolVersion, MissingClientCapability, HeaderMismatch, UrlElicitationRequired)
        if cls.schema_name in _SCHEMA_CODES
    },
}


class RequestTimeout(McpRuntimeError, TimeoutError):
    """No response within the request's timeout (the peer was told to cancel it)."""


class ConnectionClosed(McpRuntimeError):
    """The transport closed while a request was pending, or before a call was made."""


class SessionExpired(ConnectionClosed):
    """Streamable HTTP, handshake era: the server no longer knows our session (HTTP 404); the
    client starts a new session and retries the call once."""


class EndpointNotFound(ConnectionClosed):
    """Streamable HTTP: the URL answered 404 without a JSON-RPC error, outside any session: no MCP
    endpoint is there (a wrong path). No version negotiation is tried against it."""


class ResponseStreamLost(ConnectionClosed):
    """Streamable HTTP, modern era: the response stream of a request broke before its answer, and
    such streams cannot be resumed; the client issues the request again (once) with a new id."""


class NegotiationError(McpRuntimeError):
    """No protocol version both sides support, or the peer broke the handshake."""


class AuthError(McpRuntimeError):
    """Authorization failed: the server asked for credentials (HTTP 401, or 403 for more scope) and
    the client's authorization flow could not obtain acceptable ones, or found the server's metadata
    unsafe to use. The subclasses (in `mcpgen.runtime.auth`) say which step failed. Raised to the
    caller as it is: a negotiating client never reads it as "an older server"."""


class AuthorizationRequired(AuthError):
    """Streamable HTTP: the server refused a request for want of authorization (HTTP 401), or of
    scope (403 `insufficient_scope`), and the client had no authorization flow that could fix it.
    `status` is the HTTP status, `challenge` the `WWW-Authenticate` header (if any), and the
    `message` says it for people."""

    def __init__(self, message: str, *, status: int, challenge: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.challenge = challenge


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
    """Something the protocol does not allow (see `RemoteProtocolError`, `LocalProtocolError`)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol does not allow (a bad result, an unknown input kind)."""


class LocalProtocolError(ProtocolError):
    """Our own side would break the protocol (a handler's invalid result, an oversized message)."""


class MessageTooLarge(LocalProtocolError):
    """An outgoing message over the size limit: it was not sent."""


class PaginationError(RemoteProtocolError):
    """The server kept returning pages past the configured limit (or repeated a cursor)."""


class StructuredOutputError(RemoteProtocolError):
    """A tool result whose `structuredContent` does not conform to the tool's `outputSchema`."""


def http_status(code: int) -> int:
    """The HTTP status a JSON-RPC error maps to on Streamable HTTP (200 for codes without one)."""
    if code == METHOD_NOT_FOUND:
        return 404
    if code in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS) or code in LATER_ERROR_CODES:
        return 400
    return 200


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_CODES",
    "LATER_ERROR_CODES",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "SERVER_OVERLOADED",
    "CapabilityError",
    "ConnectionClosed",
    "ElicitationError",
    "HeaderMismatch",
    "InputError",
    "InputRoundsExceeded",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LocalProtocolError",
    "McpError",
    "McpRuntimeError",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingClientCapability",
    "MissingInputHandler",
    "NegotiationError",
    "PaginationError",
    "ParseError",
    "ProtocolError",
    "RateLimited",
    "RemoteProtocolError",
    "RequestTimeout",
    "ResponseStreamLost",
    "SchemaDefinedError",
    "ServerOverloaded",
    "SessionExpired",
    "StructuredOutputError",
    "UnsupportedProtocolVersion",
    "UrlElicitationRequired",
    "http_status",
    "later_error_codes",
    "schema_error_codes",
]


def validation_detail(exc: ValidationError, limit: int = 5) -> str:
    """A one-line summary of a pydantic validation error (field path and message)."""
    parts = []
    for error in exc.errors(include_url=False)[:limit]:
        location = ".".join(str(p) for p in error.get("loc", ())) or "(root)"
        parts.append(f"{location}: {error.get('msg')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)
