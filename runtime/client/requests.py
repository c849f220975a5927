"""The client's request pipeline: check a call against the negotiated table, send it, read the
result, drive multi-round-trip input, and send it once more when the server ended the session or
refused the version (`Client.request` is this, for the `Client` it belongs to)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import BaseModel, ValidationError

from ..core.correlation import ProgressCallback
from ..core.session import DEFAULT, Timeout
from ..protocol import wire
from ..protocol.capabilities import gate_allows, missing_paths
from ..protocol.errors import (
    CapabilityError,
    InputError,
    InvalidParams,
    McpError,
    RemoteProtocolError,
    ResponseStreamLost,
    SessionExpired,
    UnsupportedProtocolVersion,
    validation_detail,
)
from ..protocol.keys import CLIENT_CAPABILITIES_KEY, REQUEST
from .input import needs_input, retry_params

if TYPE_CHECKING:
    from ..protocol.tables import VersionRegistry
    from .eras import EraSpeaking
    from .input import InputAnswerer
    from .session import ClientSession

log = logging.getLogger("mcpgen.runtime.client")


class PipelineHost(Protocol):
    """What the request pipeline needs of its client."""

    registry: VersionRegistry
    versions: tuple[str, ...]
    server_capabilities: dict[str, Any] | None
    inputs: InputAnswerer
    extensions: dict[str, dict[str, Any]]

    @property
    def session(self) -> ClientSession: ...

    @property
    def protocol_version(self) -> str: ...

    @property
    def speaks(self) -> EraSpeaking: ...

    def request_meta(self, version: str) -> dict[str, Any]: ...

    async def connect_session(self) -> None: ...


class RequestPipeline:
    """The request pipeline of one client."""

    def __init__(self, client: PipelineHost) -> None:
        self.client = client
        self._renewal: anyio.Lock | None = None  # made when a session is first renewed
        self._sessions = 0  # how many sessions this connection has had (a new one after SessionExpired)
        # The rows found ours to send, by version, method and the extensions declared then (the
        # methods this client sends: a few).
        self._specs: dict[tuple[str, str, frozenset[str]], Any] = {}
        self._start_deadline: float | None = None  # see `starting`

    def starting(self, deadline: float | None) -> None:
        """Connecting heard nothing from the server (a modern pin sends nothing): its start (a
        spawned process's imports) may still be under way, and is not a slow answer. Until the
        server answers anything, a call with the default timeout may take until `deadline` (the
        start-up deadline) where that is later than the request timeout. None: it has answered."""
        self._start_deadline = deadline

    def _default_timeout(self, deadline: float) -> float | None:
        """The default timeout of a call made before the server answered anything."""
        limit = self.client.session.request_timeout
        return None if limit is None else max(limit, deadline - anyio.current_time())

    def spec(self, method: str) -> Any:
        """The table row of `method` for the negotiated version (with the extensions this client
        declares in force), checked as ours to send."""
        version = self.client.protocol_version
        key = (version, method, frozenset(self.client.extensions))
        found = self._specs.get(key)
        if found is not None:
            return found  # (a deprecated one was warned about the first time)
        spec = self.client.registry.table(version, key[2]).get(method)
        if spec is None:
            raise CapabilityError(f"{method} is not a method of protocol {version}")
        if spec.kind != REQUEST or not spec.direction.allows("client"):
            raise CapabilityError(f"{method} is not a request a client sends in protocol {version}")
        if spec.deprecated:
            _warn_deprecated(version, method, spec.deprecation_reason)
        self._specs[key] = spec
        return spec

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | BaseModel | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
    ) -> Any:
        """`Client.request` (see there)."""
        sessions = self._sessions
        try:
            return await self._request(method, params, timeout, progress, resolve_input)
        except SessionExpired:
            await self._new_session(sessions)
        except UnsupportedProtocolVersion as exc:
            if not self._switch_version(exc):
                raise
        return await self._request(method, params, timeout, progress, resolve_input)

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any] | BaseModel | None,
        timeout: Timeout,
        progress: ProgressCallback | None,
        resolve_input: bool,
    ) -> Any:
        spec = self.spec(method)
        body = self.client.speaks.params_for(self.client, self.client.protocol_version, wire.to_wire(params))
        self._check_gate(spec, body)
        if body is not None or spec.params_required:
            try:
                self._check_params(spec, body)
            except (ValidationError, ValueError) as exc:
                detail = validation_detail(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InvalidParams(f"invalid params for {method}: {detail}") from None

        result = await self._send(spec, body, timeout, progress)
        if spec.may_require_input and resolve_input and needs_input(result):
            if not self.client.inputs.drives:
                raise InputError(
                    f"{method}: the server asks for input and this client's driver is off "
                    "(InputHandlers(drive=False)); call with resolve_input=False to answer it yourself (see retry())"
                )

            async def send(retry_body: dict[str, Any] | None) -> Any:
                return await self._send(spec, retry_body, timeout, progress)

            result = await self.client.inputs.drive(spec, body, result, send)
        return result

    def _check_params(self, spec: Any, body: dict[str, Any] | None) -> None:
        """Validate the params of a request (ValidationError/ValueError when they are not valid),
        its `_meta` included: the client's own (built anew for each call from settings that may
        have changed in place, `client_info`), a caller's or a request hook's."""
        spec.parse_params(body)

    async def _new_session(self, sessions: int) -> None:
        """The server ended the session: negotiate a new one (once, however many calls noticed)."""
        if self._renewal is None:
            self._renewal = anyio.Lock()
        async with self._renewal:
            if self._sessions != sessions:
                return  # another call renewed it already
            log.info("the server ended the session; starting a new one")
            await self.client.connect_session()
            self._sessions += 1

    def _switch_version(self, refusal: UnsupportedProtocolVersion) -> bool:
        """Adopt the newest version the refusal lists that we support, if it is of the same era."""
        current = self.client.protocol_version
        choice = self.client.registry.newest_mutual(refusal.supported, self.client.versions)
        if choice is None or self.client.registry.era(choice) != self.client.registry.era(current):
            return False
        log.info("the server refused protocol %s; using %s", current, choice)
        self.client.session.version = choice
        return True

    def _check_gate(self, spec: Any, body: Mapping[str, Any] | None) -> None:
        gate = spec.capability
        if gate is None or gate.side not in ("server", "receiver", "both"):
            return
        if gate.side == "both":  # ours to declare too (an extension's method): in this request's capabilities
            meta = (body or {}).get("_meta")
            declared = meta.get(CLIENT_CAPABILITIES_KEY) if isinstance(meta, Mapping) else None
            if not gate_allows(declared if isinstance(declared, Mapping) else None, gate, body):
                raise CapabilityError(f"{spec.method} needs this client to declare {gate.path}")
        if self.client.server_capabilities is None:
            return
        if not gate_allows(self.client.server_capabilities, gate, body):
            missing = missing_paths(self.client.server_capabilities, gate, body)
            raise CapabilityError(
                f"the server does not offer {', '.join(missing) or gate.path} (needed for {spec.method})"
            )

    async def _send(
        self, spec: Any, body: dict[str, Any] | None, timeout: Timeout, progress: ProgressCallback | None
    ) -> Any:
        starting = self._start_deadline
        if starting is not None and timeout is DEFAULT:
            timeout = self._default_timeout(starting)
        try:
            raw = await self.client.session.send_request(spec.method, body, timeout=timeout, on_progress=progress)
        except ResponseStreamLost as exc:  # the request is lost with its stream: issue it again, with a new id
            # (HTTP only, where the start-up window never opens: see `Client.connect_session`)
            log.info("%s; sending %s again", exc, spec.method)
            raw = await self.client.session.send_request(spec.method, body, timeout=timeout, on_progress=progress)
        except (McpError, RemoteProtocolError):
            self._start_deadline = None  # an error, even an unreadable answer, is an answer: the server is up
            raise
        self._start_deadline = None
        try:
            return spec.parse_result(raw)
        except (ValidationError, ValueError) as exc:
            detail = validation_detail(exc) if isinstance(exc, ValidationError) else str(exc)
            raise RemoteProtocolError(f"the server sent an invalid {spec.method} result: {detail}") from exc

    async def retry(
        self, method: str, params: Mapping[str, Any] | None, result: Any, responses: Mapping[str, Any]
    ) -> Any:
        """With the driver off: send the retry of `method` for an `InputRequiredResult`, with your own answers."""
        spec = self.spec(method)
        body = self.client.speaks.params_for(self.client, self.client.protocol_version, params) or {}
        return await self._send(spec, retry_params(body, result, responses), DEFAULT, None)


_warned: set[tuple[str, str]] = set()


def _warn_deprecated(version: str, method: str, reason: str | None) -> None:
    if (version, method) not in _warned:
        _warned.add((version, method))
        log.warning("%s is deprecated in protocol %s%s", method, version, f": {reason}" if reason else "")
