"""Transports: where messages come from and go to (memory, stdio; Streamable HTTP in `http`)."""

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
from .memory import memory_pair
from .stdio import LineSplitter, Stdio, stdio, stdio_client, stdio_server

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Connector",
    "Frame",
    "Inbound",
    "LineSplitter",
    "Oversized",
    "ReplyRoute",
    "Stdio",
    "Transport",
    "TransportContext",
    "memory_pair",
    "stdio",
    "stdio_client",
    "stdio_server",
]
