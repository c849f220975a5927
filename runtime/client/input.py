"""The client's side of input: answering the server's questions, in either era.

One path for both eras: a handshake-era server's requests (roots, sampling, elicitation) and a
modern server's input requests (in an `InputRequiredResult`) are answered by the same
handlers, validated on the way in and out. `drive` is the multi-round-trip loop: fulfil the
input requests concurrently, echo `requestState` byte for byte, retry with a new id, up to a
configured number of rounds.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import ValidationError

from ..core.worker import call, gather
from ..protocol import wire
from ..protocol.capabilities import gate_allows, has_capability
from ..protocol.elicitation import apply_elicitation
from ..protocol.errors import (
    ElicitationError,
    InputRoundsExceeded,
    InvalidParams,
    LocalProtocolError,
    MethodNotFound,
    MissingInputHandler,
    RemoteProtocolError,
    validation_detail,
)

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from ..protocol.tables import VersionRegistry
    from .options import InputHandlers


def check_callback(name: str, fn: Callable[..., Any] | None, arity: int) -> None:
    """A callback must take exactly `arity` positional arguments: checked when it is registered."""
    if fn is None:
        return
    if not callable(fn):
        raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
    try:
        inspect.signature(fn).bind(*([None] * arity))
    except TypeError:
        raise TypeError(f"{name} must accept {arity} positional argument(s); {fn!r} does not") from None
    except ValueError:  # no signature (some builtins): cannot check
        pass


def root(value: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(value, str):
        return {"uri": value}
    if "uri" not in value:
        raise ValueError(f"a root needs a uri: {value!r}")
    return dict(value)


def needs_input(result: Any) -> bool:
    return bool(wire.field(result, "result_type") == "input_required")


class InputSide(Protocol):
    """What answering input needs of the client: its tables, the negotiated version, what it declares."""

    registry: VersionRegistry

    @property
    def protocol_version(self) -> str: ...

    def capabilities(self, version: str | None = None) -> dict[str, Any]: ...


class InputAnswerer:
    """The handlers behind roots, sampling and elicitation (`InputHandlers`), and the
    multi-round-trip driver."""

    def __init__(self, client: InputSide, handlers: InputHandlers, max_rounds: int) -> None:
        check_callback("InputHandlers.sampling", handlers.sampling, 1)
        check_callback("InputHandlers.elicitation", handlers.elicitation, 1)
        self.client = client
        self.roots: list[dict[str, Any]] | None = None if handlers.roots is None else [root(r) for r in handlers.roots]
        self.sampling_handler = handlers.sampling
        self.sampling_tools = handlers.sampling_tools
        self.elicitation_handler = handlers.elicitation
        self.elicitation_modes = tuple(handlers.elicitation_modes)
        self.drives = handlers.drive
        self.state_only_pause = handlers.state_only_pause
        self.max_rounds = max_rounds
        unknown_modes = set(self.elicitation_modes) - {"form", "url"}
        if unknown_modes:
            raise ValueError(f"unknown elicitation modes {sorted(unknown_modes)}; use 'form' and/or 'url'")
        self.handlers: dict[str, Callable[[Any], Awaitable[Any] | Any]] = {
            "ping": lambda params: {},
            "roots/list": self._roots,
            "sampling/createMessage": self._sampling,
            "elicitation/create": self._elicitation,
        }

    def capabilities(self, table: Mapping[str, MethodSpec]) -> dict[str, Any]:
        """What these handlers let the client declare."""
        caps: dict[str, Any] = {}
        if self.roots is not None:
            notify = table.get("notifications/roots/list_changed")
            caps["roots"] = {"listChanged": True} if notify is not None and notify.direction.allows("client") else {}
        if self.sampling_handler is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation_handler is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        return caps

    async def answer(self, spec: MethodSpec, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run this client's handler for a server request or an input request: validate the
        params, call the handler, validate what it returns."""
        try:
            parsed = spec.parse_params(params)
        except ValidationError as exc:
            raise InvalidParams(f"invalid params for {spec.method}: {validation_detail(exc)}") from None
        value = wire.to_wire(await call(self.handlers[spec.method], parsed))
        try:
            spec.parse_result(value)
        except (ValidationError, ValueError) as exc:
            detail = validation_detail(exc) if isinstance(exc, ValidationError) else str(exc)
            raise LocalProtocolError(f"the {spec.method} handler returned an invalid result: {detail}") from None
        result: dict[str, Any] = value
        return result

    async def fulfil(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Answer every input request concurrently with this client's handlers."""
        answers: dict[str, Any] = {}
        table = self.client.registry.methods(self.client.protocol_version)
        declared = self.client.capabilities()

        async def answer(key: str, request: Any) -> None:
            request = wire.to_wire(request)
            method = request.get("method") if isinstance(request, dict) else None
            spec = table.get(method) if isinstance(method, str) else None
            if spec is None:
                raise RemoteProtocolError(f"input request {key!r}: unknown kind {method!r}")
            params = request.get("params")
            if spec.capability is not None and not gate_allows(declared, spec.capability, params):
                raise RemoteProtocolError(
                    f"input request {key!r}: the server asked for {method}, which this client did not declare "
                    f"({spec.capability.path_for(params)})"
                )
            if method not in self.handlers:
                raise MissingInputHandler(f"input request {key!r}: no handler for {method}")
            answers[key] = await self.answer(spec, params)

        await gather([functools.partial(answer, key, request) for key, request in requests.items()])
        return answers

    async def drive(
        self,
        spec: MethodSpec,
        body: dict[str, Any] | None,
        result: Any,
        send: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Fulfil input requests and retry until the server answers for real (or the round limit)."""
        original = copy.deepcopy(body) or {}
        rounds = 0
        while needs_input(result):
            rounds += 1
            if rounds > self.max_rounds:
                raise InputRoundsExceeded(
                    f"{spec.method}: the server still asks for input after {self.max_rounds} rounds"
                )
            requests = result.input_requests.root if hasattr(result.input_requests, "root") else result.input_requests
            if requests:
                responses = await self.fulfil(requests)
            else:
                responses = {}
                await anyio.sleep(self.state_only_pause)
            result = await send(retry_params(original, result, responses))
        return result

    # -- the handlers ---------------------------------------------------------------------------

    async def _roots(self, params: Any) -> dict[str, Any]:
        if self.roots is None:
            raise MethodNotFound("this client has no roots")
        return {"roots": list(self.roots)}

    async def _sampling(self, params: Any) -> Any:
        if self.sampling_handler is None:
            raise MissingInputHandler("no sampling handler")
        if (wire.field(params, "tools") or wire.field(params, "tool_choice")) and not has_capability(
            self.client.capabilities(), "sampling.tools"
        ):
            raise InvalidParams(
                "tools in a sampling request need the sampling.tools capability, which this client did not declare"
            )
        return await call(self.sampling_handler, params)

    async def _elicitation(self, params: Any) -> Any:
        if self.elicitation_handler is None:
            raise MissingInputHandler("no elicitation handler")
        mode = wire.field(params, "mode") or "form"
        if mode not in self.elicitation_modes:
            raise InvalidParams(f"elicitation mode {mode!r} was not declared by this client")
        value = wire.to_wire(await call(self.elicitation_handler, params))
        if not isinstance(value, dict):
            raise ElicitationError(f"the elicitation handler returned {type(value).__name__}, not an ElicitResult")
        content = value.get("content")
        if content is not None and not isinstance(content, dict):
            raise ElicitationError(
                f"the elicitation handler returned content of type {type(content).__name__}, not an object"
            )
        if mode == "url":
            if content:
                raise ElicitationError("a URL-mode elicitation carries no form data through the client")
            return value
        if value.get("action") == "accept":
            schema = wire.to_wire(params.requested_schema)
            try:
                value = {**value, "content": apply_elicitation(schema, content)}
            except ValueError as exc:
                raise ElicitationError(f"the elicitation answer does not fit the requested schema: {exc}") from None
        return value


def retry_params(original: Mapping[str, Any], result: Any, responses: Mapping[str, Any]) -> dict[str, Any]:
    """The retry of a request: the original params, the answers, and `requestState` echoed exactly."""
    retry = copy.deepcopy(dict(original))
    if responses:
        retry["inputResponses"] = {k: wire.to_wire(v) for k, v in responses.items()}
    else:
        retry.pop("inputResponses", None)
    if result.request_state is not None:
        retry["requestState"] = result.request_state  # echoed exactly, never inspected
    else:
        retry.pop("requestState", None)
    return retry


__all__ = ["InputAnswerer", "InputSide", "check_callback", "retry_params"]
