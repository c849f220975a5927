"""What tools, prompts and resources share: the context marker, annotation reading, wire helpers."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Collection
from typing import Any

from pydantic import BaseModel, TypeAdapter

from ...protocol.input_requests import InputRequired


class Context:
    """Marker base: a handler parameter annotated with `Context` (or a subclass) receives the request context."""


def wire_object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """A wire object: the required keys, plus each optional one that has a value."""
    return {**required, **{key: value for key, value in optional.items() if value}}


def is_context(annotation: Any) -> bool:
    """`RequestContext`, a subclass, or a parameterised one (`RequestContext[AppState]`)."""
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, Context)


def _context_names() -> dict[str, Any]:
    found: dict[str, Any] = {"Context": Context}
    stack: list[type[Any]] = [Context]
    while stack:
        sub: type[Any]
        for sub in stack.pop().__subclasses__():
            found.setdefault(sub.__name__, sub)
            stack.append(sub)
    return found


def hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Evaluated annotations of `fn`, also when they are strings naming a context class that
    `fn`'s module imported locally (e.g. inside a function, under `from __future__ import annotations`)."""
    target = inspect.unwrap(fn)
    globalns = getattr(target, "__globals__", {})
    localns = _context_names()
    try:
        return typing.get_type_hints(target, globalns=globalns, localns=localns, include_extras=True)
    except Exception:
        pass
    found: dict[str, Any] = {}
    signature = inspect.signature(fn)
    for name, annotation in [
        *((n, p.annotation) for n, p in signature.parameters.items()),
        ("return", signature.return_annotation),
    ]:
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(globalns), localns)
            except Exception as exc:
                raise TypeError(
                    f"{getattr(fn, '__name__', fn)}: cannot resolve the annotation {annotation!r} of {name!r}; "
                    "import its type at module level"
                ) from exc
        found[name] = annotation
    return found


def context_param(fn: Callable[..., Any], found: dict[str, Any] | None = None) -> str | None:
    """The parameter of `fn` that receives the request context, if any."""
    found = hints(fn) if found is None else found
    for pname, param in inspect.signature(fn).parameters.items():
        if is_context(found.get(pname, param.annotation)):
            return pname
    return None


def without_input_required(annotation: Any) -> Any:
    """`X | InputRequired` -> `X`: asking for input is not part of what a function returns."""
    args = typing.get_args(annotation)
    if args and any(a is InputRequired for a in args):
        kept = [a for a in args if a is not InputRequired]
        if len(kept) == 1:
            return kept[0]
        return typing.Union[tuple(kept)]  # noqa: UP007 - built from a runtime tuple
    return annotation


def dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    return value


def is_content(value: Any, content_types: Collection[str]) -> bool:
    value = dump(value)
    return isinstance(value, dict) and value.get("type") in content_types


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


class Built(dict[str, Any]):
    """A result object the runtime assembled itself from values it made or checked (a tool's text,
    its checked structured output, an error message): the session need not validate it against
    the table on every call (it checks the first of each kind, with the era's stamps)."""

    __slots__ = ()


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False)
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
if _C_ENCODER is not None:  # the encoder `encode` would make on every call, made once (no cycle check)
    _C_ENCODER = _C_ENCODER(
        None, _JSON_TEXT.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )


def json_text(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` for a value pydantic dumped (JSON data, never
    cyclic), with the C encoder made once instead of once per call (the same text)."""
    if _C_ENCODER is None:  # pragma: no cover - an interpreter without the C accelerator
        return _JSON_TEXT.encode(value)
    return "".join(_C_ENCODER(value, 0))


_ANY_ADAPTER: TypeAdapter[Any] = TypeAdapter(Any)


def pydantic_json(value: Any) -> Any:
    return _ANY_ADAPTER.dump_python(value, mode="json", by_alias=True)
