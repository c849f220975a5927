"""mcpgen's runtime: sessions, transports and version negotiation over the generated tables.

from mcpgen.runtime import Server, Client, RequestContext
"""

from .client import Client, Event, Subscription
from .errors import (
    CapabilityError,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    McpRuntimeError,
    MethodNotFound,
    MissingClientCapability,
    NegotiationError,
    ParseError,
    ProtocolError,
    RequestTimeout,
    UnsupportedProtocolVersion,
)
from .features import Context
from .protocol import Protocol
from .server import RequestContext, Server
from .transport import Transport, memory_pair, stdio_client, stdio_server

__all__ = [
    "CapabilityError",
    "Client",
    "ConnectionClosed",
    "Context",
    "Event",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "McpError",
    "McpRuntimeError",
    "MethodNotFound",
    "MissingClientCapability",
    "NegotiationError",
    "ParseError",
    "Protocol",
    "ProtocolError",
    "RequestContext",
    "RequestTimeout",
    "Server",
    "Subscription",
    "Transport",
    "UnsupportedProtocolVersion",
    "memory_pair",
    "stdio_client",
    "stdio_server",
]
