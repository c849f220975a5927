"""mcpgen's runtime: sessions, transports and version negotiation over the generated tables.

from mcpgen.runtime import Server, Client, RequestContext
"""

from .client import Client, Event, Subscription
from .errors import (
    AuthError,
    AuthorizationRequired,
    CapabilityError,
    ConnectionClosed,
    ElicitationError,
    HeaderMismatch,
    InputError,
    InputRoundsExceeded,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    McpError,
    McpRuntimeError,
    MessageTooLarge,
    MethodNotFound,
    MissingClientCapability,
    MissingInputHandler,
    NegotiationError,
    PaginationError,
    ParseError,
    ProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    ResponseStreamLost,
    SessionExpired,
    StructuredOutputError,
    UnsupportedProtocolVersion,
)
from .features import Context, mcp_header
from .mrtr import InputRequired, elicit, elicit_url, list_roots, sample
from .registry import Protocol, VersionRegistry
from .server import Elicited, RequestContext, Server
from .transport import Connector, Transport, TransportContext, http, memory_pair, stdio, stdio_client, stdio_server

# The era objects register themselves; they come last, once the modules they build on are loaded.
from .eras import handshake as _handshake  # noqa: F401  isort: skip
from .eras import modern as _modern  # noqa: F401  isort: skip

__all__ = [
    "AuthError",
    "AuthorizationRequired",
    "CapabilityError",
    "Client",
    "ConnectionClosed",
    "Connector",
    "Context",
    "ElicitationError",
    "Elicited",
    "Event",
    "HeaderMismatch",
    "InputError",
    "InputRequired",
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
    "Protocol",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestContext",
    "RequestTimeout",
    "ResponseStreamLost",
    "Server",
    "SessionExpired",
    "StructuredOutputError",
    "Subscription",
    "Transport",
    "TransportContext",
    "UnsupportedProtocolVersion",
    "VersionRegistry",
    "elicit",
    "elicit_url",
    "http",
    "list_roots",
    "mcp_header",
    "memory_pair",
    "sample",
    "stdio",
    "stdio_client",
    "stdio_server",
]
