"""Tools from plain Python functions.

A tool's input schema comes from its typed signature (or from a pydantic model that is its one
argument); its output schema from the return annotation when that is structured data. Return
values become MCP content: `str` -> text, content dicts/models pass through, anything else is
structured content (plus its JSON as text, as the spec recommends), checked against the output
schema first: a tool never sends structured content its own schema refuses. The value is checked,
not its type (a model built with `model_construct` was never validated). A list of content blocks
(`-> list[TextContent | ImageContent]`) is content, not structured output.

The output schema is the JSON Schema of what the tool sends (pydantic's serialization schema); a
value that is not an object goes under `result`, with its `$defs` at the top where its `$ref`s
point. A schema that would not be valid and self-contained is refused when the tool is registered.

A parameter can be mirrored into an HTTP header on Streamable HTTP (`x-mcp-header`):
`region: Annotated[str, mcp_header("Region")]`.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property, partial
from json.encoder import encode_basestring
from typing import Any, Literal

import pydantic
import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError

from ...protocol.errors import validation_detail
from ...protocol.schema_check import SchemaCheck, defects
from .calling import Callee, describe
from .common import Built, dump, hints, is_content, json_text, pydantic_json, text, wire_object, without_input_required
from .content import is_media_type, media_block

HEADER_KEYWORD = "x-mcp-header"


def mcp_header(name: str, **field_options: Any) -> Any:
    """Mark a tool parameter to be mirrored into the `Mcp-Param-{name}` HTTP header:
    `region: Annotated[str, mcp_header("Region")]` (strings, integers and booleans only).

    Args:
        name: the header's name, after `Mcp-Param-`.
        **field_options: passed on to `pydantic.Field` (a description, bounds, ...).

    Returns:
        The pydantic field, for `Annotated`.
    """
    return pydantic.Field(json_schema_extra={HEADER_KEYWORD: name}, **field_options)


@dataclass
class ToolDef:
    name: str
    callee: Callee
    description: str | None
    title: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    arguments: type[BaseModel]
    content_types: frozenset[str]
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    model_param: str | None = None  # the one parameter that takes the whole arguments model
    wrap_result: bool = False  # structured output of a non-object type goes under "result"
    output_adapter: TypeAdapter[Any] | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)  # OAuth scopes a caller needs
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"  # may/must its calls run as tasks
    defer_task: bool = False  # the task begins at `ctx.run_as_task()` (input asked before it, synchronously)

    @property
    def fn(self) -> Callable[..., Any]:
        """The function that implements the tool."""
        return self.callee.fn

    def describe(self, execution: bool = False) -> dict[str, Any]:
        """The tool as listed; `execution`: with its task support (2025-11-25's `execution.taskSupport`)."""
        return wire_object(
            {"name": self.name, "inputSchema": self.input_schema},
            title=self.title,
            description=self.description,
            outputSchema=self.output_schema,
            annotations=self.annotations,
            icons=self.icons,
            execution={"taskSupport": self.task_support} if execution and self.task_support != "forbidden" else None,
            _meta=self.meta,
        )

    @cached_property
    def python_arguments(self) -> bool:
        """Do the arguments read the same checked as the Python values parsed from JSON as checked
        as JSON text? True when every parameter's type is built from JSON's own (int, float, str,
        bool, None, Any, lists, string-keyed dicts, unions of them), where pydantic's strict
        Python mode and strict JSON mode agree; not for a whole-model parameter, dates, enums,
        tuples, bytes, nested models and the like, which read JSON text differently."""
        if self.model_param is not None:
            return False
        return all(_json_native(info.annotation) for info in self.arguments.model_fields.values())

    @cached_property
    def output_calls(self) -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
        """The structured output's validator and JSON-mode serializer, called without the
        adapter's wrappers (None without structured output)."""
        adapter = self.output_adapter
        if adapter is None:
            return None
        validator, serializer = adapter.validator, adapter.serializer
        if not isinstance(validator, pydantic_core.SchemaValidator) or not isinstance(
            serializer, pydantic_core.SchemaSerializer
        ):  # not built yet (deferred): the adapter's own methods build it
            return adapter.validate_python, partial(adapter.dump_python, mode="json", by_alias=True, warnings=False)
        return validator.validate_python, partial(serializer.to_python, mode="json", by_alias=True, warnings=False)

    @cached_property
    def plain_output(self) -> type | None:
        """`int`, `str` or `bool` when the output schema is nothing but JSON's integer, string or
        boolean under `result`: a value of exactly that type fits it without a check (None otherwise)."""
        schema = self.output_schema
        inner = (schema.get("properties") or {}).get("result") if schema is not None and self.wrap_result else None
        if schema is None or set(schema) != {"type", "properties", "required"} or not isinstance(inner, dict):
            return None
        return _PLAIN_TYPES.get(inner["type"]) if set(inner) == {"type"} and isinstance(inner["type"], str) else None

    @cached_property
    def plain_dump(self) -> type | None:
        """`plain_output` when the output type is nothing but that type (no serializer of its own):
        a validated value of exactly that type then dumps to itself (None otherwise)."""
        plain = self.plain_output
        adapter = self.output_adapter
        if plain is None or adapter is None:
            return None
        return plain if adapter.core_schema == {"type": _CORE_TYPES[plain]} else None

    @cached_property
    def header_params(self) -> dict[str, str]:
        """`x-mcp-header` name -> argument name, for the arguments that declare one."""
        properties = self.input_schema.get("properties") or {}
        return {
            prop[HEADER_KEYWORD]: name
            for name, prop in properties.items()
            if isinstance(prop, dict) and isinstance(prop.get(HEADER_KEYWORD), str)
        }

    @cached_property
    def output_check(self) -> SchemaCheck:
        """The output schema, compiled (for results the tool built itself)."""
        assert self.output_schema is not None
        return SchemaCheck(self.output_schema)


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _is_content_model(model: type[BaseModel], content_types: Collection[str]) -> bool:
    """A content block (its `type` is a content tag) or a whole tool result (it has `content`):
    returned as content, not as structured output. Judged by shape, not by class name."""
    fields = model.model_fields
    tag = fields.get("type")
    if tag is not None and set(typing.get_args(tag.annotation)) & set(content_types):
        return True
    return "content" in fields


_SEQUENCES = (list, tuple, collections.abc.Sequence)


def _union_members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (`A | B`, `Union[A, B]`), else ()."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or (origin is not None and origin is getattr(types, "UnionType", None)):
        return typing.get_args(annotation)
    return ()


def _is_content_annotation(annotation: Any, content_types: Collection[str]) -> bool:
    """Text, an image/audio/file helper, a content block model, or a list or union of these
    (through `Annotated` and type aliases)."""
    if annotation is str or is_media_type(annotation):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _is_content_model(annotation, content_types)
    value = getattr(annotation, "__value__", None)  # a `TypeAliasType`
    if value is not None:
        return _is_content_annotation(value, content_types)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_content_annotation(typing.get_args(annotation)[0], content_types)
    if origin in _SEQUENCES:
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
    else:
        args = [a for a in _union_members(annotation) if a is not type(None)]
    return bool(args) and all(_is_content_annotation(a, content_types) for a in args)


def _is_structured(annotation: Any, content_types: Collection[str]) -> bool:
    if annotation in (inspect.Signature.empty, None, type(None), Any):
        return False
    return not _is_content_annotation(annotation, content_types)


def _output_schema(adapter: TypeAdapter[Any], returns: Any, tool_name: str) -> tuple[dict[str, Any], bool]:
    """The tool's `outputSchema` (what it sends: the serialization schema) and whether the value goes
    under `result` (it is not an object). The value's `$defs` stay at the top, where its `$ref`s point."""
    schema = adapter.json_schema(mode="serialization")
    if schema.get("type") == "object" or (isinstance(returns, type) and issubclass(returns, BaseModel)):
        output, wrap = _object_schema(schema), False
    else:
        defs = schema.pop("$defs", None)
        output = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if defs:
            output["$defs"] = defs
        wrap = True
    problems = defects(output)
    if problems:
        raise TypeError(f"tool {tool_name}: its return type gives an outputSchema that is unusable: {problems[0]}")
    return output, wrap


def _arguments(
    fn: Callable[..., Any], tool_name: str, found: dict[str, Any], callee: Callee
) -> tuple[type[BaseModel], str | None]:
    """The arguments model and the whole-model parameter of `fn` (the context and injected
    parameters are the server's to fill in, not the client's)."""
    fields: dict[str, Any] = {}
    skipped = callee.not_from_client
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = found.get(pname, param.annotation)
        if pname in skipped:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name}: *args and **kwargs parameters cannot be described as a schema")
        if annotation is inspect.Signature.empty:
            annotation = Any
        fields[pname] = (annotation, ... if param.default is inspect.Signature.empty else param.default)
    if len(fields) == 1:
        ((only, (annotation, _)),) = fields.items()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation, only
    return pydantic.create_model(f"{tool_name}Arguments", **fields), None


def make_tool(  # noqa: PLR0913 - every keyword is a documented option
    fn: Callable[..., Any],
    *,
    content_types: Collection[str],
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    structured_output: bool | None = None,
    scopes: Collection[str] = (),
    task_support: Literal["forbidden", "optional", "required"] = "forbidden",
    defer_task: bool = False,
) -> ToolDef:
    """Describe `fn` as a tool: arguments model and JSON schemas from its signature."""
    if task_support not in ("forbidden", "optional", "required"):
        raise ValueError(f"task_support must be 'forbidden', 'optional' or 'required', not {task_support!r}")
    tool_name = name or fn.__name__
    found = hints(fn)
    callee = describe(fn, found)
    arguments, model_param = _arguments(fn, tool_name, found, callee)
    returns = without_input_required(found.get("return", inspect.signature(fn).return_annotation))
    structured = _is_structured(returns, content_types) if structured_output is None else structured_output
    output_schema, wrap, adapter = None, False, None
    if structured and returns is not inspect.Signature.empty:
        adapter = TypeAdapter(returns)
        output_schema, wrap = _output_schema(adapter, returns, tool_name)
    return ToolDef(
        name=tool_name,
        callee=callee,
        description=description if description is not None else inspect.getdoc(fn),
        title=title,
        input_schema=_object_schema(arguments.model_json_schema()),
        output_schema=output_schema,
        arguments=arguments,
        content_types=frozenset(content_types),
        annotations=annotations,
        icons=icons,
        meta=meta,
        model_param=model_param,
        wrap_result=wrap,
        output_adapter=adapter,
        scopes=frozenset(scopes),
        task_support=task_support,
        defer_task=defer_task,
    )


def error_result(message: str) -> dict[str, Any]:
    return Built(content=[text(message)], isError=True)


def _structured(tool: ToolDef, value: Any) -> dict[str, Any]:
    """Structured output: the value validated (a model instance passes as it is, so what it dumps to
    is checked against the schema too: a model built with `model_construct` was never validated;
    a validated int, str or bool dumps to itself, which its own schema takes)."""
    assert tool.output_calls is not None
    validate, serialize = tool.output_calls
    try:
        checked = validate(value)
        # (a plain int, str or bool output type dumps a value of exactly that type to itself)
        structured = checked if type(checked) is tool.plain_dump else serialize(checked)
    except ValidationError as exc:
        return error_result(
            f"tool {tool.name} returned output that does not match its outputSchema: {validation_detail(exc)}"
        )
    except (TypeError, ValueError, AttributeError) as exc:  # pydantic_core's serialization errors are ValueErrors
        return error_result(f"tool {tool.name} returned output that cannot be serialised: {exc}")
    if type(structured) is tool.plain_output:  # a bare integer, string or boolean its schema takes as it is
        # (`plain_output` is only ever set for output wrapped under "result"; the text is what
        # `json_text` writes for the object, made without the encoder's machinery)
        return Built(
            content=[text(_PLAIN_RESULT % _PLAIN_JSON[type(structured)](structured))],
            structuredContent={"result": structured},
        )
    if tool.wrap_result:
        structured = {"result": structured}
    problem = tool.output_check.problem(structured)
    if problem is not None:
        return error_result(f"tool {tool.name} returned output that does not match its outputSchema: {problem}")
    if not isinstance(structured, dict):  # not an object (a root model's list, say): the table says no
        return {"content": [text(json_text(structured))], "structuredContent": structured}
    return Built(content=[text(json_text(structured))], structuredContent=structured)


def _json_native(annotation: Any) -> bool:
    """Is `annotation` built only from JSON's own types (see `ToolDef.python_arguments`)?"""
    if annotation is Any or annotation in _NATIVE:
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return all(_json_native(arg) for arg in args)
    if origin is list:
        return len(args) == 1 and _json_native(args[0])
    if origin is dict:
        return len(args) == 2 and args[0] is str and _json_native(args[1])
    return False


_JSON_SCALARS = frozenset({int, float, str, bool, type(None)})  # exact types
_NATIVE = (int, float, str, bool, type(None), list, dict)  # exact types (no subclasses: enums are not)
_PLAIN_TYPES: dict[str, type] = {"integer": int, "string": str, "boolean": bool}
_CORE_TYPES: dict[type, str] = {int: "int", str: "str", bool: "bool"}  # pydantic-core's schema types
_PLAIN_RESULT = '{"result": %s}'
_PLAIN_JSON: dict[type, Callable[[Any], str]] = {
    int: int.__repr__,  # (what the json module writes for an int)
    bool: lambda value: "true" if value else "false",
    str: encode_basestring,  # (ensure_ascii=False, as json_text)
}


def _checked(tool: ToolDef, result: dict[str, Any]) -> dict[str, Any]:
    """A result the tool built itself: its structured content must fit the tool's schema."""
    if tool.output_schema is None or result.get("isError"):
        return result
    problem = tool.output_check.problem(result.get("structuredContent"))
    if problem is not None:
        return error_result(
            f"tool {tool.name} returned structuredContent that does not match its outputSchema: {problem}"
        )
    return result


def _is_content_value(value: Any, content_types: Collection[str]) -> bool:
    return isinstance(value, str) or media_block(value) is not None or is_content(value, content_types)


def _content_item(value: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    block = media_block(value)
    return block if block is not None else dump(value)


def tool_result(tool: ToolDef, value: Any) -> dict[str, Any]:  # noqa: PLR0911 - one return per kind of input
    """A tool's return value as a `CallToolResult` object."""
    dumped = value if type(value) in _JSON_SCALARS else dump(value)  # (a plain scalar is no model: no check)
    prebuilt = isinstance(dumped, dict) and isinstance(dumped.get("content"), list)
    if prebuilt and (tool.output_schema is None or "structuredContent" in dumped):
        return _checked(tool, dumped)  # already a CallToolResult
    if tool.output_adapter is not None:
        return _structured(tool, value)
    if value is None:
        return Built(content=[])
    if isinstance(value, str):
        return Built(content=[text(value)])
    block = media_block(value)
    if block is not None:
        return {"content": [block]}
    if is_content(value, tool.content_types):
        return {"content": [dumped]}
    if isinstance(value, (list, tuple)) and all(_is_content_value(v, tool.content_types) for v in value):
        return {"content": [_content_item(v) for v in value]}
    structured = pydantic_json(value)
    result: dict[str, Any] = Built(content=[text(json_text(structured))])
    if isinstance(structured, dict):  # structured content is an object (2025-11-25 requires it)
        result["structuredContent"] = structured
    return result
