"""JSON-RPC 2.0 on the wire: encoding, strict decoding, and classifying an envelope. Pure: no I/O.

`decode(data)` turns one message's bytes into exactly one of `Request`, `Notification`,
`Response` or `Invalid` (what to answer, with the id when it can be read). The JSON reader is
strict: `NaN` and `Infinity` are not JSON and are refused like any other syntax error. A message
that is not JSON but whose head shows a response (an id, and `result` or `error`, no `method`) is
refused without an answer and names the request it answers (`Invalid.response_to`), so the
waiting caller fails instead of waiting for an answer that already came.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeAlias, TypeGuard

import pydantic_core
from pydantic import BaseModel

from .errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

RequestId: TypeAlias = "str | int"
JSONObject: TypeAlias = "dict[str, Any]"


def _fast_json() -> ModuleType | None:
    try:
        import orjson
    except ImportError:
        return None
    return orjson


_orjson = _fast_json()
# What orjson would write differently from pydantic-core goes to pydantic-core instead: subclasses
# of str, int, dict and list (a `Built` result, an enum of str), dataclasses, dates and times.
_ORJSON_OPTIONS = (
    _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
    if _orjson is not None
    else 0
)


def dumps(message: object) -> bytes:
    """JSON for the wire; NaN and infinities, which JSON lacks, become null. (Models are turned into
    wire objects with `to_wire` before they get here.)

    With orjson installed (the `http` extra), plain JSON values (dicts, lists, strings, 64-bit
    integers, floats, booleans, None) are written by it, in a third of pydantic-core's
    instructions for a typical message; anything else (an integer beyond 64 bits, a key that is
    not a string, a subclass, a model, bytes, a date) by pydantic-core, as without it."""
    if _orjson is not None:
        try:
            return _orjson.dumps(message, option=_ORJSON_OPTIONS)  # type: ignore[no-any-return]
        except TypeError:  # (orjson's JSONEncodeError): a value it leaves to pydantic-core
            pass
    return pydantic_core.to_json(message, inf_nan_mode="null", by_alias=True)


def loads(data: bytes | str) -> Any:
    """Parse JSON strictly (`NaN`, `Infinity` and other non-JSON tokens raise ValueError). (By
    pydantic-core even with orjson installed: orjson reads integers beyond 64 bits as floats, and
    is not faster here.)"""
    return pydantic_core.from_json(data, cache_strings="keys", allow_inf_nan=False)


def to_wire(value: Any) -> Any:
    """A model as its wire object (by alias, unset fields left out); anything else unchanged."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def field(model: object, name: str, default: Any = None) -> Any:
    """A model's field by its Python name, or `default` when the model (of some version) has no such
    field: read from the instance's values, without pydantic's slow path for missing attributes."""
    values = getattr(model, "__dict__", None)
    return values.get(name, default) if isinstance(values, dict) else default


def is_request_id(value: object) -> TypeGuard[str | int]:
    """JSON-RPC ids are strings or integers; booleans (an `int` in Python) and null are not."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: JSONObject | None


@dataclass(slots=True)
class Notification:
    method: str
    params: JSONObject | None


@dataclass(slots=True)
class Response:
    id: RequestId | None
    result: Any = None
    error: Any = None
    is_error: bool = False


@dataclass(slots=True)
class Invalid:
    """A message to refuse: `answer` says whether it gets an error reply (with `id` if known)."""

    code: int
    message: str
    id: RequestId | None = None
    answer: bool = True
    response_to: RequestId | None = None  # a damaged response: the id of the request it answers


Message: TypeAlias = "Request | Notification | Response | Invalid"


def decode(data: bytes | str) -> Message:
    """Classify one message from its bytes."""
    try:
        message = loads(data)
    except ValueError as exc:
        answered = damaged_response(data)
        if answered is not None:
            return Invalid(PARSE_ERROR, f"Parse error: {exc}", answer=False, response_to=answered)
        return Invalid(PARSE_ERROR, f"Parse error: {exc}")
    return classify(message)


HEAD_BYTES = 1024  # how much of a damaged message is read to find what it was


def _first_nested(head: bytes) -> int | None:
    """Where the first value nested in the top-level one opens (the index just past its `{` or `[`),
    strings skipped; None when there is none in `head`."""
    depth, in_string, escaped = 0, False, False
    for index, byte in enumerate(head):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):  # { [
            depth += 1
            if depth == 2:
                return index + 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
    return None


def damaged_response(data: bytes | str) -> RequestId | None:
    """The id of the request a message that could not be decoded answers, when its head shows it
    is a response: read leniently (`NaN`, a truncated end), else up to where its first nested
    value (`result`, `error`) opens. None when the head does not show a response with an id."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    head = raw[:HEAD_BYTES]
    cut = _first_nested(head)
    for attempt in (head, head[:cut] if cut is not None else None):
        if attempt is None:
            continue
        try:
            found = pydantic_core.from_json(attempt, allow_partial=True, allow_inf_nan=True)
        except ValueError:
            continue
        if isinstance(found, dict):
            raw_id = found.get("id")
            is_response = "method" not in found and ("result" in found or "error" in found)
            return raw_id if is_response and is_request_id(raw_id) else None
    return None


def classify(message: object) -> Message:  # noqa: PLR0911 - one return per kind of input
    """Classify one parsed JSON value as a JSON-RPC 2.0 message."""
    if isinstance(message, list):
        return Invalid(INVALID_REQUEST, "batch requests are not supported (JSON-RPC batching was removed from MCP)")
    if not isinstance(message, dict):
        return Invalid(INVALID_REQUEST, "a JSON-RPC message must be an object")
    raw_id = message.get("id")
    known_id = raw_id if is_request_id(raw_id) else None
    has_method = "method" in message
    if message.get("jsonrpc") != "2.0":
        # Only what looks like a request gets an answer; anything else is dropped.
        return Invalid(INVALID_REQUEST, 'jsonrpc must be "2.0"', known_id, answer=has_method and "id" in message)
    if not has_method:
        return _response(message, known_id)
    method = message["method"]
    if not isinstance(method, str):
        return Invalid(INVALID_REQUEST, "method must be a string", known_id)
    params = message.get("params")
    if "id" not in message:
        if params is not None and not isinstance(params, dict):
            return Invalid(INVALID_REQUEST, f"{method} notification: params must be an object", answer=False)
        return Notification(method, params)
    if known_id is None:
        return Invalid(INVALID_REQUEST, "request id must be a string or an integer (not null or a boolean)")
    if params is not None and not isinstance(params, dict):
        if isinstance(params, list):  # structured, so valid JSON-RPC, but MCP params are objects
            return Invalid(INVALID_PARAMS, f"{method}: params must be an object, not an array", known_id)
        return Invalid(INVALID_REQUEST, "params must be a structured value (an object)", known_id)
    return Request(known_id, method, params)


def _response(message: Mapping[str, Any], known_id: RequestId | None) -> Message:
    if "error" in message:
        return Response(known_id, error=message["error"], is_error=True)
    if "result" in message:
        if known_id is None:
            return Invalid(INVALID_REQUEST, "a result without a valid id", answer=False)
        return Response(known_id, result=message["result"])
    return Invalid(INVALID_REQUEST, "neither request, notification nor response", known_id, answer=False)


def partial_id(head: bytes) -> tuple[RequestId | None, bool]:
    """From the first bytes of a message too large to read: its id (if it came first) and
    whether it is a request (has a method). Used to answer, or fail, what would otherwise vanish."""
    try:
        partial = pydantic_core.from_json(head, allow_partial=True, allow_inf_nan=False)
    except ValueError:
        return None, False
    if not isinstance(partial, dict):
        return None, False
    raw_id = partial.get("id")
    return (raw_id if is_request_id(raw_id) else None), "method" in partial


def request(request_id: RequestId, method: str, params: Mapping[str, Any] | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Mapping[str, Any] | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(request_id: RequestId, value: Any) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: RequestId | None, code: int, message: str, data: Any = None) -> JSONObject:
    body: JSONObject = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    reply: JSONObject = {"jsonrpc": "2.0", "error": body}
    if request_id is not None:
        reply["id"] = request_id
    return reply
