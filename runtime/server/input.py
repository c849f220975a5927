"""Serving multi-round-trip input on the server: both eras' mechanics, called by the era strategies (`eras`).

- Modern: `input_required_result` seals what was asked (the kinds, the elicitation schemas, the
  handler's state) into `requestState`; `read_input` opens it on the retry and decodes each
  answer by the kind that was asked.
- Handshake era: `ask_client` sends each input request as a server->client
  request, concurrently, and decodes the answers the same way.

Both refuse to ask for a kind of input the client did not declare (-32021, naming the full
capability path) and check elicitation answers against the schema that was asked.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..auth.shared.principal import principal_of
from ..core.worker import gather
from ..protocol import wire
from ..protocol.capabilities import gate_allows, missing_paths, required_capabilities
from ..protocol.elicitation import apply_elicitation
from ..protocol.errors import InternalError, InvalidParams, MissingClientCapability, validation_detail
from ..protocol.input_requests import InputRequired
from ..protocol.keys import NOTIFICATION

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec

    from .context import RequestContext


def check_input_capabilities(ctx: RequestContext, asked: InputRequired) -> None:
    """The server never asks for a kind of input the client did not declare (-32021 otherwise)."""
    table = ctx.server.registry.methods(ctx.protocol_version)
    missing: list[str] = []
    for key, request in asked.requests.items():
        spec = table.get(request["method"])
        if spec is None or not spec.direction.allows("server") or spec.kind == NOTIFICATION:
            raise InternalError(f"input request {key!r}: {request['method']} is not something a server may ask for")
        params = request.get("params")
        if spec.capability is not None and not gate_allows(ctx.client_capabilities, spec.capability, params):
            missing.extend(missing_paths(ctx.client_capabilities, spec.capability, params))
    if missing:
        paths = sorted(set(missing))
        raise MissingClientCapability(
            f"the client did not declare the capabilities this request needs: {', '.join(paths)}",
            data={"requiredCapabilities": required_capabilities(paths)},
        )


def input_required_result(ctx: RequestContext, spec: MethodSpec, asked: InputRequired) -> dict[str, Any]:
    """A modern `InputRequiredResult`: the input requests, and the sealed state of this round."""
    body = {
        "s": asked.state,
        "k": {key: r["method"] for key, r in asked.requests.items()},
        "q": {
            key: r["params"]["requestedSchema"]
            for key, r in asked.requests.items()
            if r["method"] == "elicitation/create" and "requestedSchema" in (r.get("params") or {})
        },
    }
    state = ctx.server.sealer.seal(body, spec.method, ctx.request.params, principal_of(ctx.auth))
    result: dict[str, Any] = {"resultType": "input_required", "requestState": state}
    if asked.requests:
        result["inputRequests"] = asked.requests
    return result


def read_input(ctx: RequestContext, spec: MethodSpec) -> None:
    """Open a retry's `requestState` and decode its `inputResponses` by the kinds asked for."""
    params = ctx.request.params or {}
    token = params.get("requestState")
    responses = params.get("inputResponses")
    if token is None and responses is None:  # a first call: nothing to read
        return
    if token is None:
        # Answers without a state: nothing says what was asked, so each is read by its shape
        # (an answer that is no kind of input response is refused).
        if responses is not None and not isinstance(responses, Mapping):
            raise InvalidParams("inputResponses must be an object")
        for key, value in (responses or {}).items():
            ctx.input_responses[key] = decode_by_shape(ctx, key, value)
        return
    body = ctx.server.sealer.open(token, spec.method, params, principal_of(ctx.auth))
    ctx.state = body.get("s")
    kinds = body.get("k") or {}
    schemas = body.get("q") or {}
    table = ctx.server.registry.methods(ctx.protocol_version)
    if responses is not None and not isinstance(responses, Mapping):
        raise InvalidParams("inputResponses must be an object")
    for key, value in (responses or {}).items():
        kind = kinds.get(key)
        if kind is None or kind not in table:
            continue  # an answer to nothing we asked: ignored
        ctx.input_responses[key] = decode_answer(table[kind], key, value, schemas.get(key))


def decode_by_shape(ctx: RequestContext, key: str, value: Any) -> Any:
    """An input response whose kind is unknown, as the result model of the first kind it fits."""
    for spec in ctx.server.registry.methods(ctx.protocol_version).values():
        if spec.kind == NOTIFICATION or not spec.direction.allows("server") or spec.direction.allows("client"):
            continue
        try:
            return spec.parse_result(wire.to_wire(value))
        except (ValidationError, ValueError):
            continue
    raise InvalidParams(f"invalid input response {key!r}: not an answer to any input request")


def decode_answer(spec: MethodSpec, key: str, value: Any, schema: Any) -> Any:
    """An input response as the model of its kind; an accepted elicitation checked against its schema."""
    value = wire.to_wire(value)
    try:
        answer = spec.parse_result(value)
    except (ValidationError, ValueError) as exc:
        detail = validation_detail(exc) if isinstance(exc, ValidationError) else str(exc)
        raise InvalidParams(f"invalid input response {key!r}: {detail}") from None
    if isinstance(schema, dict) and getattr(answer, "action", None) == "accept":
        try:
            content = apply_elicitation(schema, getattr(answer, "content", None))
        except ValueError as exc:
            raise InvalidParams(f"input response {key!r} does not fit the requested schema: {exc}") from None
        answer = spec.parse_result({**value, "content": content})
    return answer


async def ask_client(ctx: RequestContext, asked: InputRequired) -> dict[str, Any]:
    """The handshake era: each input request goes out as a server->client request, concurrently,
    on the route of the request being served."""
    table = ctx.server.registry.methods(ctx.protocol_version)
    answers: dict[str, Any] = {}

    async def ask(key: str, request: dict[str, Any]) -> None:
        spec = table[request["method"]]
        params = dict(request.get("params") or {})
        if request["method"] == "elicitation/create" and params.get("mode") == "url":
            params.setdefault("elicitationId", secrets.token_hex(8))  # handshake-era URL mode needs one
        try:
            spec.parse_params(params or None)
        except ValidationError as exc:
            raise InternalError(
                f"input request {key!r} is not valid in {ctx.protocol_version}: {validation_detail(exc)}"
            ) from None
        raw = await ctx.session.send_request(request["method"], params or None, route=ctx.request.context.reply)
        answers[key] = decode_answer(spec, key, raw, params.get("requestedSchema"))

    if not ctx.request.context.can_send_request:
        raise InternalError("this transport cannot carry the server's requests for this request")
    await gather([functools.partial(ask, key, request) for key, request in asked.requests.items()])
    return answers
