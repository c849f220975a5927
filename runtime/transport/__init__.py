"""Deprecated: `mcpgen.runtime.transport` moved; import from
`mcpgen.runtime (or mcpgen.runtime.core.transport)`. Kept for one release."""

import warnings

from ..client.http.connector import Http, http
from ..core.memory import memory_pair
from ..core.stdio import LineSplitter, Stdio, stdio, stdio_client, stdio_server
from ..core.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connector,
    Frame,
    Inbound,
    Oversized,
    ReplyRoute,
    Transport,
    TransportContext,
)

warnings.warn(
    "mcpgen.runtime.transport is deprecated; import from mcpgen.runtime (or mcpgen.runtime.core.transport)",
    DeprecationWarning,
    stacklevel=2,
)

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
