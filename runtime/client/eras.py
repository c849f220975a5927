"""How the client speaks each era: what each request carries, how connecting finishes, how logging,
roots changes and change notifications work. One strategy per era.

The protocol's rules for an era are `protocol.eras.EraRules`; what the client does with them is
here, one `EraSpeaking` per rules class (see `server.eras` for the server's side).
"""

from __future__ import annotations

import abc
import weakref
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ..core.session import Timeout
from ..protocol.capabilities import has_capability
from ..protocol.eras import LIVENESS_METHOD, EraRules, Eras, HandshakeRules, ModernRules, strategies
from ..protocol.negotiation import DISCOVER_METHOD
from ..protocol.tables import VersionRegistry
from .subscriptions import ListenRequest, Subscription, listen_stream, pushed_subscription

if TYPE_CHECKING:
    from . import Client


class MetaSource(Protocol):
    """What an era needs to decorate a request: the `_meta` the client sends with it."""

    def request_meta(self, version: str) -> dict[str, Any]: ...


class EraSpeaking(abc.ABC):
    """The client's behaviour for one era."""

    def __init__(self, rules: EraRules) -> None:
        self.rules = rules

    def params_for(self, client: MetaSource, version: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The params of an outgoing request as this era sends them (unchanged by default)."""
        return dict(params) if params is not None else None

    @abc.abstractmethod
    async def finish_connecting(self, client: Client) -> None:
        """What is left to do once the version is agreed."""

    @abc.abstractmethod
    async def set_log_level(self, client: Client, level: str) -> None:
        """Ask the server for log messages from `level` up."""

    @abc.abstractmethod
    async def ping(self, client: Client, timeout: Timeout) -> None:
        """Check that the server is alive with the request this era offers for it."""

    @abc.abstractmethod
    async def roots_changed(self, client: Client) -> None:
        """Tell the server the client's roots changed, where this era can."""

    @abc.abstractmethod
    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        """Receive change notifications (see `Client.listen`)."""


class HandshakeSpeaking(EraSpeaking):
    """`notifications/initialized` completes the handshake; the log level is set for the session;
    roots changes are announced; changes are pushed (plus `resources/subscribe`)."""

    async def finish_connecting(self, client: Client) -> None:
        """The handshake completed: say so, then ask for log messages if the client wants them."""
        await client.session.send_notification("notifications/initialized")
        if client.log_level is not None and has_capability(client.server_capabilities, "logging"):
            await self.set_log_level(client, client.log_level)

    async def set_log_level(self, client: Client, level: str) -> None:
        await client.request("logging/setLevel", {"level": level})

    async def ping(self, client: Client, timeout: Timeout) -> None:
        await client.request(LIVENESS_METHOD, timeout=timeout)

    async def roots_changed(self, client: Client) -> None:
        if has_capability(client.capabilities(), "roots.listChanged"):
            await client.session.send_notification("notifications/roots/list_changed")

    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        return pushed_subscription(client, request)


class ModernSpeaking(EraSpeaking):
    """Every request carries the version, the client's capabilities and info (and the log level)
    in `_meta`; nothing is sent to finish connecting; changes arrive on `subscriptions/listen`."""

    def params_for(self, client: MetaSource, version: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        body = dict(params or {})
        extra = body.get("_meta")
        body["_meta"] = {**client.request_meta(version), **(extra if isinstance(extra, dict) else {})}
        return body

    async def finish_connecting(self, client: Client) -> None:
        """Nothing more to send: there is no handshake to complete."""

    async def set_log_level(self, client: Client, level: str) -> None:
        """Nothing to send: every later request carries the level."""

    async def ping(self, client: Client, timeout: Timeout) -> None:
        """No `ping` in this era: `server/discover` is the request every server of it answers."""
        await client.request(DISCOVER_METHOD, timeout=timeout)

    async def roots_changed(self, client: Client) -> None:
        """Nothing to send: the server asks for roots when it needs them."""

    def listen(self, client: Client, request: ListenRequest) -> AbstractAsyncContextManager[Subscription]:
        return listen_stream(client, request)


STRATEGIES: dict[type[EraRules], type[EraSpeaking]] = {HandshakeRules: HandshakeSpeaking, ModernRules: ModernSpeaking}
"""The client's strategy for each era's rules."""


def speaking(eras: Eras) -> dict[str, EraSpeaking]:
    """The client's strategy for each era of a tree, by the era's name."""
    return strategies(eras, STRATEGIES, "client")


_shared: weakref.WeakKeyDictionary[VersionRegistry, tuple[Eras, dict[str, EraSpeaking]]] = weakref.WeakKeyDictionary()
_default: list[VersionRegistry] = []  # the registry of mcpgen's own tree, once made


def tables_for(registry: VersionRegistry | None) -> tuple[VersionRegistry, Eras, dict[str, EraSpeaking]]:
    """The registry a client speaks with (None: mcpgen's own tree), its eras and the client's
    strategy for each: made once per registry and shared by its clients (none of them holds
    state of a client)."""
    if registry is None:
        if not _default:
            _default.append(VersionRegistry())
        registry = _default[0]
    shared = _shared.get(registry)
    if shared is None:
        eras = Eras(registry)
        shared = _shared[registry] = (eras, speaking(eras))
    return registry, *shared
