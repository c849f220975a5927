"""What a transport hands the session: messages with their transport context, and where replies go.

A transport produces `Inbound` items (one JSON-RPC message each) and takes outgoing bytes. Each
inbound message carries a `TransportContext`: the transport's kind, the request headers when the
transport has them, the authenticated principal (if the transport authenticates), whether the
server may send server-to-client requests related to this message, and the `ReplyRoute` its
answer (and the notifications related to it) must take. Duplex pipes (memory, stdio) give every
message the same context and reply on their one outgoing stream; Streamable HTTP gives each POST
a route of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class ReplyRoute(Protocol):
    """Where the answer to one request goes, with the messages related to it (progress, log
    messages, and on a handshake-era HTTP session the server's requests). `final` marks the
    response itself, after which the route takes nothing more."""

    async def send(self, data: bytes, *, final: bool) -> None: ...


@dataclass(frozen=True)
class TransportContext:
    """What the transport knows about one inbound message."""

    kind: str
    headers: Mapping[str, str] | None = None  # lower-case names; None when the transport has no headers
    auth: Any = None  # the authenticated principal (set by an authenticating transport)
    can_send_request: bool = True  # may the server send requests related to this message
    reply: ReplyRoute | None = None  # None: the transport's own outgoing stream


@dataclass(frozen=True)
class Frame:
    """One inbound message with its context (`None`: the transport's default context)."""

    data: bytes
    context: TransportContext | None = None


@dataclass(frozen=True)
class Oversized:
    """A message longer than the limit arrived and was discarded; `head` keeps its first bytes
    (enough to read the id of a request or response, so it can be answered or failed)."""

    size_at_least: int
    limit: int
    head: bytes = b""
    context: TransportContext | None = None


@dataclass(frozen=True)
class Failure:
    """The transport could not get an answer to our request `request_id` (a request-scoped
    transport: an HTTP error, a broken response stream, an expired session): the call fails
    with `error` instead of waiting for a response that will never come."""

    request_id: str | int
    error: Exception


@dataclass(frozen=True)
class Authorizing:
    """Our request `request_id` is held up by an authorization (a user signing in at the
    authorization server, tokens being fetched), not by the peer: its timeout stops while
    `active`, and starts again in full when the authorization ends. The session sets `applied`
    once it has done so."""

    request_id: str | int
    active: bool
    applied: anyio.Event = field(default_factory=anyio.Event, compare=False)


# The key of an httpx request extension under which the HTTP transport hands an authorization flow
# `async callback(active: bool)`, called when the flow starts and ends authorizing that request.
AUTHORIZING_EXTENSION = "mcpgen.authorizing"

Inbound: TypeAlias = "bytes | Frame | Oversized | Failure | Authorizing"
HEAD_BYTES = 1024  # how much of an oversized message is kept to find its id


@dataclass
class Transport:
    """One end of a connection: messages in (`Inbound`), bytes out."""

    receive: ObjectReceiveStream[Inbound]
    send: ObjectSendStream[bytes]
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    context: TransportContext = field(default_factory=lambda: TransportContext("memory"))

    async def aclose(self) -> None:
        await self.send.aclose()
        await self.receive.aclose()


@runtime_checkable
class Connector(Protocol):
    """Something a client connects through: `connect()` opens a transport for the connection's
    lifetime (`stdio([...])`, `http(url)`)."""

    def connect(self) -> AbstractAsyncContextManager[Transport]: ...
