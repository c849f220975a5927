"""Multi-round-trip requests (MRTR): input requests, sealed `requestState`, elicitation rules.

A server handler asks the client for input by returning `InputRequired` (built with the helpers
`elicit`, `elicit_url`, `sample`, `list_roots`, keyed by names it chooses, plus any JSON state it
wants back). The runtime turns that into an `InputRequiredResult` on a modern session, or into
server->client requests on a handshake-era one (the legacy shim in `server.py`), and gives the
handler the answers on its next invocation (`ctx.input_response(key)`, `ctx.state`).

`requestState` is sealed: HMAC-SHA256 (stdlib) over the state, the method, a digest of the
request's params and an expiry. Tampered, expired or replayed-for-another-call state is refused
with -32602. The client cannot read secrets only if none are put in the state: sealing gives
integrity, not secrecy.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import hmac
import json
import secrets
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel

from .errors import InternalError, InvalidParams

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

PRIMITIVE_TYPES = ("string", "number", "integer", "boolean")


async def gather(jobs: Sequence[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    """Run jobs concurrently; if one fails, cancel the rest and raise its error as it is."""
    try:
        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(job)
    except BaseExceptionGroup as group:
        first = _first_error(group)
        if first is None:
            raise
        raise first from None


def _first_error(group: BaseExceptionGroup[Any]) -> BaseException | None:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found = _first_error(exc)
            if found is not None:
                return found
        elif not isinstance(exc, anyio.get_cancelled_exc_class()):
            found_exc: BaseException = exc
            return found_exc
    return None


STATE_VERSION = 1


@dataclass
class InputRequired:
    """What a handler returns to ask for input: `requests` (key -> input request) and/or `state`."""

    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: Any = None

    def __post_init__(self) -> None:
        if not self.requests and self.state is None:
            raise ValueError("InputRequired needs input requests, state, or both")
        for key, request in self.requests.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"input request keys are non-empty strings, not {key!r}")
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise ValueError(
                    f"input request {key!r} is not an input request (use elicit(), sample() or list_roots())"
                )


# -- building input requests -----------------------------------------------------------------


def _schema_of(schema: Mapping[str, Any] | type[BaseModel]) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return copy.deepcopy(_model_schema(schema))
    requested = dict(schema)
    check_elicitation_schema(requested)
    return requested


@functools.lru_cache(maxsize=256)
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model as a flat elicitation schema (built once per model: it is not cheap)."""
    raw = model.model_json_schema()
    properties = {}
    for name, prop in raw.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title" or isinstance(v, str)}
        if "anyOf" in prop:  # `X | None` -> X
            options = [o for o in prop.pop("anyOf") if o.get("type") != "null"]
            if len(options) == 1:
                prop.update(options[0])
        if prop.get("default", "") is None:
            prop.pop("default")
        properties[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if raw.get("required"):
        out["required"] = list(raw["required"])
    check_elicitation_schema(out)
    return out


def check_elicitation_schema(schema: Mapping[str, Any]) -> None:
    """A requested schema is a flat object of primitive fields; `enum` only on strings;
    legacy `enumNames` pairs one to one with `enum`. Raises ValueError otherwise."""
    if schema.get("type") != "object":
        raise ValueError("an elicitation schema is an object schema (type: object)")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise ValueError("an elicitation schema needs `properties`")
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            raise ValueError(f"field {name!r}: not a schema")
        kind = prop.get("type")
        if kind == "array":
            items = prop.get("items")
            if not isinstance(items, Mapping) or not (
                (items.get("type") == "string" and "enum" in items) or "anyOf" in items
            ):
                raise ValueError(f"field {name!r}: arrays are only multi-select enums of strings")
            continue
        if kind not in PRIMITIVE_TYPES:
            raise ValueError(f"field {name!r}: type {kind!r} is not a primitive (string, number, integer, boolean)")
        if "properties" in prop or "items" in prop:
            raise ValueError(f"field {name!r}: nested objects are not allowed")
        if "enum" in prop:
            if kind != "string":
                raise ValueError(f"field {name!r}: enum is only allowed on strings")
            names = prop.get("enumNames")
            if names is not None and (not isinstance(names, list) or len(names) != len(prop["enum"])):
                raise ValueError(f"field {name!r}: enumNames must match enum one to one")
        if "oneOf" in prop and kind != "string":
            raise ValueError(f"field {name!r}: titled options are only allowed on strings")
    required = schema.get("required", [])
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise ValueError(f"required fields {unknown} are not in properties")


def elicit(message: str, schema: Mapping[str, Any] | type[BaseModel]) -> dict[str, Any]:
    """A form-mode `elicitation/create` input request (the schema may be a pydantic model)."""
    requested = _schema_of(schema)
    check_elicitation_schema(requested)
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": requested},
    }


def elicit_url(message: str, url: str) -> dict[str, Any]:
    """A URL-mode `elicitation/create` input request: the user completes it out of band."""
    return {"method": "elicitation/create", "params": {"mode": "url", "message": message, "url": url}}


def sample(
    messages: Sequence[Mapping[str, Any] | str],
    max_tokens: int,
    *,
    system_prompt: str | None = None,
    temperature: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A `sampling/createMessage` input request; plain strings become user text messages."""
    built = [
        {"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else dict(m) for m in messages
    ]
    params: dict[str, Any] = {"messages": built, "maxTokens": max_tokens, **extra}
    if system_prompt is not None:
        params["systemPrompt"] = system_prompt
    if temperature is not None:
        params["temperature"] = temperature
    return {"method": "sampling/createMessage", "params": params}


def list_roots() -> dict[str, Any]:
    """A `roots/list` input request."""
    return {"method": "roots/list"}


# -- elicitation answers ----------------------------------------------------------------------


def _type_ok(kind: Any, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        whole = isinstance(value, float) and value.is_integer()
        return (isinstance(value, int) and not isinstance(value, bool)) or whole
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True


def _allowed_values(prop: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in prop:
        return list(prop["enum"])
    if "oneOf" in prop:
        return [o.get("const") for o in prop["oneOf"] if isinstance(o, Mapping)]
    items = prop.get("items")
    if isinstance(items, Mapping):
        if "enum" in items:
            return list(items["enum"])
        if "anyOf" in items:
            return [o.get("const") for o in items["anyOf"] if isinstance(o, Mapping)]
    return None


def apply_elicitation(schema: Mapping[str, Any], content: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate accepted content against the requested schema, then fill defaults (SEP-1034).

    Validation comes first, so a required field the user left empty is refused even when the
    schema gives it a default. Raises ValueError with what is wrong.
    """
    content = dict(content or {})
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems = []
    for name in schema.get("required", []):
        if content.get(name) in (None, ""):
            problems.append(f"{name}: required")
    for name, value in content.items():
        prop = properties.get(name)
        if prop is None:
            continue  # unknown keys are kept; the schema is open
        kind = prop.get("type")
        if not _type_ok(kind, value):
            problems.append(f"{name}: expected {kind}, got {type(value).__name__}")
            continue
        allowed = _allowed_values(prop)
        values = value if isinstance(value, list) else [value]
        if allowed is not None and any(v not in allowed for v in values):
            problems.append(f"{name}: {value!r} is not one of {allowed}")
        if kind == "string" and isinstance(value, str):
            if len(value) < prop.get("minLength", 0) or len(value) > prop.get("maxLength", len(value)):
                problems.append(f"{name}: length out of range")
        if kind in ("number", "integer") and isinstance(value, (int, float)):
            if ("minimum" in prop and value < prop["minimum"]) or ("maximum" in prop and value > prop["maximum"]):
                problems.append(f"{name}: {value} out of range")
        if kind == "array" and isinstance(value, list):
            if len(value) < prop.get("minItems", 0) or len(value) > prop.get("maxItems", len(value)):
                problems.append(f"{name}: wrong number of items")
    if problems:
        raise ValueError("; ".join(problems))
    for name, prop in properties.items():
        if content.get(name) in (None, "") and isinstance(prop, Mapping) and "default" in prop:
            content[name] = prop["default"]
    return content


# -- request state ------------------------------------------------------------------------------


def params_digest(params: Mapping[str, Any] | None) -> str:
    """A digest of the request params that define the call (not `_meta` or the MRTR fields)."""
    core = {k: v for k, v in (params or {}).items() if k not in ("_meta", "inputResponses", "requestState")}
    canonical = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class StateSealer:
    """Seal and open `requestState`: `v1.<payload>.<hmac>` (or `v1.<payload>` when unsealed)."""

    key: bytes | None = None
    ttl_seconds: float = 600.0
    sealed: bool = True
    max_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        if self.key is None:
            self.key = secrets.token_bytes(32)

    def seal(self, body: Mapping[str, Any], method: str, params: Mapping[str, Any] | None) -> str:
        envelope = {"b": dict(body), "m": method, "d": params_digest(params), "e": int(time.time() + self.ttl_seconds)}
        payload = _b64(json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode())
        token = f"v{STATE_VERSION}.{payload}"
        if self.sealed:
            token += "." + self._mac(token)
        if len(token) > self.max_bytes:
            raise InternalError(
                f"the request state is {len(token)} bytes, over the {self.max_bytes}-byte limit "
                "this server accepts back; keep less in it"
            )
        return token

    def open(self, token: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The body sealed into `token`, after checking integrity, binding and expiry (-32602 otherwise)."""
        if not isinstance(token, str) or len(token) > self.max_bytes:
            raise InvalidParams("invalid requestState: not a state this server issued")
        parts = token.split(".")
        if len(parts) != (3 if self.sealed else 2) or parts[0] != f"v{STATE_VERSION}":
            raise InvalidParams("invalid requestState: not a state this server issued")
        if self.sealed and not hmac.compare_digest(parts[2], self._mac(f"{parts[0]}.{parts[1]}")):
            raise InvalidParams("invalid requestState: it was modified (integrity check failed)")
        try:
            envelope = json.loads(_unb64(parts[1]))
            body, bound_method, digest, expiry = envelope["b"], envelope["m"], envelope["d"], envelope["e"]
        except (ValueError, KeyError, TypeError):
            raise InvalidParams("invalid requestState: unreadable") from None
        if bound_method != method or digest != params_digest(params):
            raise InvalidParams("invalid requestState: it belongs to another call (method or params differ)")
        if not isinstance(expiry, (int, float)) or time.time() > expiry:
            raise InvalidParams("invalid requestState: it expired; send the request again without it")
        if not isinstance(body, dict):
            raise InvalidParams("invalid requestState: unreadable")
        return body

    def _mac(self, text: str) -> str:
        assert self.key is not None
        return _b64(hmac.new(self.key, text.encode(), hashlib.sha256).digest())


def nested_capability(path: str) -> dict[str, Any]:
    """`"elicitation.url"` -> `{"elicitation": {"url": {}}}` (for `requiredCapabilities`)."""
    out: dict[str, Any] = {}
    node = out
    for key in path.split("."):
        node[key] = {}
        node = node[key]
    return out
