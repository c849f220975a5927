"""The transport interface: what a transport hands the session, what it takes, and where replies go.

A transport delivers `Inbound` items and takes `Outgoing` messages. A message in transit is a
`Frame`: its encoded bytes, plus what is already known about it, so nothing is encoded or decoded
twice. An `Outgoing` frame carries the JSON-RPC object it was encoded from (a transport that needs
to look inside, such as the HTTP client, reads that instead of parsing the bytes; whether it is
an error reply is known without reading bytes); an inbound frame carries the decoded message when
the transport had to decode it already (the HTTP server routes each POST by its body).

Each inbound message carries a `TransportContext`: the transport's kind, the request headers when
the transport has them, the authenticated principal, what the transport can do for it (send
server-to-client requests related to it; whether each request is its own exchange that the peer
always answers), and the `ReplyRoute` its answer (and the notifications related to it) must take.
Duplex pipes (memory, stdio) give every message the same context and reply on their one outgoing
stream; Streamable HTTP gives each POST a route of its own. Everything a route can do is declared
on `ReplyRoute` (with a default where a route cannot), never probed.

Besides frames, a transport may deliver `Oversized` (a message over the size limit was dropped),
`Failure` (a request of ours can get no answer) and `Authorizing` (a request of ours is held up by
an authorization, so its timeout stops).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

if TYPE_CHECKING:
    from ..protocol import wire

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
HEAD_BYTES = 1024  # how much of an oversized message is kept to find its id


@dataclass(slots=True)
class Frame:
    """One message in transit: its bytes, its context (`None`: the transport's default), and the
    decoded message when the transport that delivers it decoded it already."""

    data: bytes
    context: TransportContext | None = None
    decoded: wire.Message | None = None


@dataclass(slots=True)
class Outgoing(Frame):
    """A message the session sends: the JSON-RPC object and its encoding (made once)."""

    message: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        """Is this an error response?"""
        return "error" in self.message


class ReplyRoute:
    """Where the answer to one request goes, with the messages related to it (progress, log
    messages, and on a handshake-era HTTP session the server's requests). `final` marks the
    response itself, after which the route takes nothing more.

    A route that is one exchange with the peer (an HTTP response) learns when its request is over
    (`request_ended`), also when it ended without a response; one that can end its connection
    before the response (an SSE stream the client resumes) does so on `close_connection`.
    """

    async def send(self, item: Outgoing, *, final: bool) -> None:
        raise NotImplementedError

    def request_ended(self) -> None:
        """The request this route answers is over (answered, refused or cancelled)."""

    async def refuse_ended(self, error: Outgoing) -> None:
        """Answer a request its session ended before serving (`error` says so) as the transport
        answers one coming after the end; by default with that error, as the response."""
        await self.send(error, final=True)

    async def close_connection(self) -> bool:
        """End the connection the answer travels on before the answer, so the client resumes it
        later (SSE polling); False when this route cannot."""
        return False


@dataclass(slots=True, init=False, unsafe_hash=True)
class TransportContext:
    """What the transport knows about one inbound message, and what it can do for it.

    Immutable, as a frozen dataclass is (assigning or deleting a field raises
    `dataclasses.FrozenInstanceError`; `dataclasses.replace` makes a changed copy), but built
    through the slots' own setters: an HTTP server makes one per POST, and a frozen dataclass's
    `__init__` (one `object.__setattr__` call per field) cost three times as much.
    """

    kind: str
    """The transport's kind: `stdio`, `memory`, `http`, ..."""
    headers: Mapping[str, str] | None = None  # lower-case names; None when the transport has no headers
    """The message's headers, names in lower case (None when the transport has no headers)."""
    auth: Any = None  # the authenticated principal (set by an authenticating transport)
    """The authenticated principal (set by an authenticating transport; handlers see it as `ctx.auth`)."""
    can_send_request: bool = True  # may the server send requests related to this message
    """Whether the server may send requests related to this message (e.g. elicitation)."""
    reply: ReplyRoute | None = None  # None: the transport's own outgoing stream
    """Where the answer to this message goes (None: the transport's own outgoing stream)."""
    request_scoped: bool = False
    """Is each request its own exchange that the peer always answers (an HTTP POST), so a request
    is never silently dropped and no liveness check is needed?"""

    def __init__(  # noqa: PLR0913 (the fields, as the dataclass would take them)
        self,
        kind: str,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        can_send_request: bool = True,
        reply: ReplyRoute | None = None,
        request_scoped: bool = False,
    ) -> None:
        _set_kind(self, kind)
        _set_headers(self, headers)
        _set_auth(self, auth)
        _set_can_send_request(self, can_send_request)
        _set_reply(self, reply)
        _set_request_scoped(self, request_scoped)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _CONTEXT_FIELDS)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(_CONTEXT_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)


# The slots' setters (they bypass `__setattr__`, which refuses changes).
_SLOTS = vars(TransportContext)
_set_kind = _SLOTS["kind"].__set__
_set_headers = _SLOTS["headers"].__set__
_set_auth = _SLOTS["auth"].__set__
_set_can_send_request = _SLOTS["can_send_request"].__set__
_set_reply = _SLOTS["reply"].__set__
_set_request_scoped = _SLOTS["request_scoped"].__set__
_CONTEXT_FIELDS = tuple(each.name for each in fields(TransportContext))


@dataclass(frozen=True, slots=True)
class Oversized:
    """A message longer than the limit arrived and was discarded; `head` keeps its first bytes
    (enough to read the id of a request or response, so it can be answered or failed)."""

    size_at_least: int
    limit: int
    head: bytes = b""
    context: TransportContext | None = None


@dataclass(frozen=True, slots=True)
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

Inbound: TypeAlias = "Frame | Oversized | Failure | Authorizing"


@dataclass
class Transport:
    """One end of a connection: `Inbound` items in, `Outgoing` messages out."""

    receive: ObjectReceiveStream[Inbound]
    """Where decoded messages (and `Oversized` or `Failure` notices) arrive."""
    send: ObjectSendStream[Outgoing]
    """Where messages to the peer go."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """The largest message the transport accepts; longer ones arrive as `Oversized`."""
    context: TransportContext = field(default_factory=lambda: TransportContext("memory"))
    """What the transport tells about the messages it delivers (the default for each message)."""

    async def aclose(self) -> None:
        """Close both streams: the peer sees the end of the connection."""
        await self.send.aclose()
        await self.receive.aclose()


@runtime_checkable
class Connector(Protocol):
    """Something a client connects through: `connect()` opens a transport for the connection's
    lifetime (`stdio([...])`, `http(url)`)."""

    def connect(self) -> AbstractAsyncContextManager[Transport]:
        """Open the connection: a context manager holding its `Transport` while the client uses it."""
        ...


@runtime_checkable
class Servable(Protocol):
    """Anything that serves a transport until it closes (a `Server`): what a client reaches in
    this process through a memory pair (`memory.InProcess`), without knowing the server's type."""

    async def serve(self, transport: Transport) -> None: ...
