"""mcpgen's runtime: sessions, transports and version negotiation over the generated tables.

    from mcpgen.runtime import Server, Client, RequestContext

The package is layered, lowest first: `protocol` (the rules, pure), `core` (the transport
interface, the session, the pipes), then `client` and `server` side by side (neither imports the
other), with `auth` split the same way (`auth.shared`, `auth.client`, `auth.server`), and on top
the command line (`cli`) and this facade. Importing it registers nothing and starts nothing.
"""

from .client import (
    Client,
    ClientChecks,
    ClientHooks,
    ClientLimits,
    Event,
    InputHandlers,
    Subscription,
    TaskCancelled,
    TaskState,
    Timeouts,
    ToolTask,
)
from .client.http import http
from .core.memory import memory_pair
from .core.stdio import stdio, stdio_client, stdio_server
from .core.transport import Connector, Transport, TransportContext
from .protocol import wire
from .protocol.errors import (
    AuthError,
    AuthorizationRequired,
    CapabilityError,
    ConnectionClosed,
    ElicitationError,
    EndpointNotFound,
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
from .protocol.input_requests import InputRequired, elicit, elicit_url, list_roots, sample
from .protocol.tables import Protocol, VersionRegistry
from .server import Caching, Elicited, RequestContext, Sealing, Server, ServerLimits, TaskOptions
from .server.features import Context, mcp_header

__all__ = [
    "AuthError",
    "AuthorizationRequired",
    "Caching",
    "CapabilityError",
    "Client",
    "ClientChecks",
    "ClientHooks",
    "ClientLimits",
    "ConnectionClosed",
    "Connector",
    "Context",
    "ElicitationError",
    "Elicited",
    "EndpointNotFound",
    "Event",
    "HeaderMismatch",
    "InputError",
    "InputHandlers",
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
    "Sealing",
    "Server",
    "ServerLimits",
    "SessionExpired",
    "StructuredOutputError",
    "Subscription",
    "TaskCancelled",
    "TaskOptions",
    "TaskState",
    "Timeouts",
    "ToolTask",
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
    "wire",
]
