"""Two connected transports in one process (tests, embedding), and a server reached that way."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from .pipe import pipe
from .transport import DEFAULT_MAX_MESSAGE_BYTES, Servable, Transport, TransportContext


def memory_pair(
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, buffer: float = math.inf
) -> tuple[Transport, Transport]:
    """Two connected transports (client end, server end), in process. `buffer` bounds how many
    messages each direction holds before the sender waits (default: unbounded). What one end sends
    the other receives as it was encoded (the receiver decodes the bytes, as over a pipe);
    `max_message_bytes` is the largest message either end accepts."""
    a_send, b_receive = pipe(buffer)
    b_send, a_receive = pipe(buffer)
    context = TransportContext("memory")
    return (
        Transport(a_receive, a_send, max_message_bytes, context),
        Transport(b_receive, b_send, max_message_bytes, context),
    )


@dataclass(frozen=True)
class InProcess:
    """A server in this process, reached through a memory pair: `Client(server)`. The server
    serves the connection on a task of its own for as long as the client is connected."""

    server: Servable
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Transport]:
        client_end, server_end = memory_pair(self.max_message_bytes)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.server.serve, server_end)
            try:
                yield client_end
            finally:
                await client_end.aclose()  # the server's session ends, and with it its task
