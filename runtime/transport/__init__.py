"""Transports: where messages come from and go to (memory, stdio, Streamable HTTP client)."""

from .base import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connector,
    Frame,
    Inbound,
    Oversized,
    ReplyRoute,
    Transport,
    TransportContext,
)
from .http_client import Http, http
from .memory import memory_pair
from .stdio import LineSplitter, Stdio, stdio, stdio_client, stdio_server

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Connector",
    "Frame",
    "Http",
    "Inbound",
    "LineSplitter",
    "Oversized",
    "ReplyRoute",
    "Stdio",
    "Transport",
    "TransportContext",
    "http",
    "memory_pair",
    "stdio",
    "stdio_client",
    "stdio_server",
]
