"""Two connected transports in one process (tests, embedding)."""

from __future__ import annotations

import math

import anyio

from .base import DEFAULT_MAX_MESSAGE_BYTES, Inbound, Transport, TransportContext


def memory_pair(
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, buffer: float = math.inf
) -> tuple[Transport, Transport]:
    """Two connected transports (client end, server end), in process. `buffer` bounds how many
    messages each direction holds before the sender waits (default: unbounded)."""
    a_send, b_receive = anyio.create_memory_object_stream[Inbound](buffer)
    b_send, a_receive = anyio.create_memory_object_stream[Inbound](buffer)
    context = TransportContext("memory")
    return (
        Transport(a_receive, a_send, max_message_bytes, context),
        Transport(b_receive, b_send, max_message_bytes, context),
    )
