"""What differs between protocol eras, in one object per era.

An era is a family of protocol versions that work alike on the wire: the handshake era
(`initialize`, server->client requests) and the modern era (per-request `_meta`,
`server/discover`, `InputRequiredResult`). Everything the runtime does differently by era is a
method of `Era`; client and server code ask the era of the version in use and never branch on
era names. The generated tables say which era a version belongs to; adding an era means adding
one subclass (in a module of its own) and registering it here.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..client import Client
    from ..client.subscriptions import ListenRequest, Subscription
    from ..errors import McpError
    from ..inbound import Call, Rejection, Router
    from ..mrtr import InputRequired
    from ..server import Server
    from ..server.context import RequestContext
    from ..server.session import ServerSession
    from ..server.subscriptions import Change
    from ..session import IncomingRequest


@dataclass(slots=True)
class ClientView:
    """What the server knows of the client for one request."""

    capabilities: dict[str, Any]
    info: dict[str, Any] | None = None
    log_level: str | None = None


class Era(abc.ABC):
    """The behaviour of one protocol era, for both sides."""

    name: ClassVar[str]
    logs_without_level: ClassVar[bool]
    """May a server send log messages when the client named no level?"""
    answers_server_requests: ClassVar[bool]
    """Does a client of this era answer server->client requests?"""
    client_capabilities_at: ClassVar[tuple[str, tuple[str, ...]]]
    """Where the client's capabilities travel: a method and the path (wire names) in its params."""
    server_capabilities_at: ClassVar[tuple[str, tuple[str, ...]]]
    """Where the server's capabilities travel: a method and the path (wire names) in its result."""

    # -- server side ------------------------------------------------------------------------------

    @abc.abstractmethod
    def claim(self, call: Call, router: Router) -> str | Rejection | None:
        """The version this era serves `call` with, a rejection, or None if the call is not of this era."""

    @abc.abstractmethod
    def client_view(self, request: IncomingRequest, session: ServerSession) -> ClientView:
        """The client's capabilities, info and log level, as this era conveys them."""

    @abc.abstractmethod
    def resource_not_found(self, uri: str) -> McpError:
        """The error for reading a resource that does not exist."""

    def stamp(self, spec: MethodSpec, result: dict[str, Any], server: Server) -> dict[str, Any]:
        """Fields this era adds to every result of `spec` (none by default)."""
        return result

    @abc.abstractmethod
    def open_input(self, ctx: RequestContext, spec: MethodSpec) -> None:
        """Read the answers a request carries to an earlier round's input requests."""

    @abc.abstractmethod
    async def ask_for_input(self, ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any] | None:
        """Obtain the input a handler asked for: either the result to answer with now (the client
        retries later), or None once the answers are in `ctx` (the handler runs again)."""

    @abc.abstractmethod
    def deliver_change(self, server: Server, change: Change) -> None:
        """Send a change notification to the clients of this era that asked for it."""

    # -- client side ------------------------------------------------------------------------------

    def decorate(self, client: Client, version: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The params of an outgoing request as this era sends them (unchanged by default)."""
        return dict(params) if params is not None else None

    @abc.abstractmethod
    async def adopted(self, client: Client) -> None:
        """Finish connecting once the version is agreed."""

    @abc.abstractmethod
    async def set_log_level(self, client: Client, level: str) -> None:
        """Ask the server for log messages from `level` up."""

    @abc.abstractmethod
    async def roots_changed(self, client: Client) -> None:
        """Tell the server the client's roots changed, where this era can."""

    @abc.abstractmethod
    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        """Receive change notifications (see `Client.listen`)."""


ERAS: dict[str, Era] = {}


def register(era: Era) -> Era:
    """Make `era` known by its name (the name the generated tables give its versions)."""
    ERAS[era.name] = era
    return era


def era_named(name: str) -> Era:
    try:
        return ERAS[name]
    except KeyError:
        raise LookupError(f"no era object for {name!r}; known: {sorted(ERAS)}") from None


def newest_first() -> tuple[Era, ...]:
    """Every registered era, the most recently registered (newest) first."""
    return tuple(reversed(ERAS.values()))
