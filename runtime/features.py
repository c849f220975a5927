"""Server features defined from plain Python: tools, prompts, resources, resource templates.

A tool's input schema comes from its typed signature (or from a pydantic model that is its one
argument); its output schema from the return annotation when that is structured data. Return
values become MCP content: `str` -> text, content dicts/models pass through, anything else is
structured content (plus its JSON as text, as the spec recommends).
"""

from __future__ import annotations

import base64
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic
from pydantic import BaseModel, TypeAdapter

from .uritemplate import UriTemplate

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


class Context:
    """Marker base: a handler parameter annotated with `Context` (or a subclass) receives the request context."""


def _wire(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """A wire object: the required keys, plus each optional one that has a value."""
    return {**required, **{key: value for key, value in optional.items() if value}}


def _is_context(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Context)


def _context_names() -> dict[str, Any]:
    found: dict[str, Any] = {"Context": Context}
    stack: list[type[Any]] = [Context]
    while stack:
        sub: type[Any]
        for sub in stack.pop().__subclasses__():
            found.setdefault(sub.__name__, sub)
            stack.append(sub)
    return found


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Evaluated annotations of `fn`, also when they are strings naming a context class that
    `fn`'s module imported locally (e.g. inside a function, under `from __future__ import annotations`)."""
    target = inspect.unwrap(fn)
    globalns = getattr(target, "__globals__", {})
    localns = _context_names()
    try:
        return typing.get_type_hints(target, globalns=globalns, localns=localns, include_extras=True)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    for name, param in [*inspect.signature(fn).parameters.items(), ("return", None)]:
        annotation = param.annotation if param is not None else inspect.signature(fn).return_annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(globalns), localns)
            except Exception as exc:
                raise TypeError(
                    f"{getattr(fn, '__name__', fn)}: cannot resolve the annotation {annotation!r} of {name!r}; "
                    "import its type at module level"
                ) from exc
        hints[name] = annotation
    return hints


@dataclass
class ToolDef:
    name: str
    fn: Callable[..., Any]
    description: str | None
    title: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    arguments: type[BaseModel]
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    context_param: str | None = None
    model_param: str | None = None  # the one parameter that takes the whole arguments model
    wrap_result: bool = False  # structured output of a non-object type goes under "result"
    output_adapter: TypeAdapter[Any] | None = None
    is_async: bool = False

    def describe(self) -> dict[str, Any]:
        return _wire(
            {"name": self.name, "inputSchema": self.input_schema},
            title=self.title,
            description=self.description,
            outputSchema=self.output_schema,
            annotations=self.annotations,
            icons=self.icons,
            _meta=self.meta,
        )


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _is_content_model(model: type[BaseModel]) -> bool:
    """A content block (its `type` is a content tag) or a whole tool result (it has `content`):
    returned as content, not as structured output. Judged by shape, not by class name."""
    fields = model.model_fields
    tag = fields.get("type")
    if tag is not None and set(typing.get_args(tag.annotation)) & CONTENT_TYPES:
        return True
    return "content" in fields


def _is_structured(annotation: Any) -> bool:
    if annotation in (inspect.Signature.empty, None, type(None), str, Any):
        return False
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_structured(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return not _is_content_model(annotation)
    return not (origin in (list, tuple) and typing.get_args(annotation) and typing.get_args(annotation)[0] is str)


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    structured_output: bool | None = None,
) -> ToolDef:
    """Describe `fn` as a tool: arguments model and JSON schemas from its signature."""
    tool_name = name or fn.__name__
    signature = inspect.signature(fn)
    hints = _hints(fn)
    context_param = None
    fields: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        annotation = hints.get(pname, param.annotation)
        if _is_context(annotation):
            context_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name}: *args and **kwargs parameters cannot be described as a schema")
        if annotation is inspect.Signature.empty:
            annotation = Any
        default = ... if param.default is inspect.Signature.empty else param.default
        fields[pname] = (annotation, default)
    model_param = None
    if len(fields) == 1:
        ((only, (annotation, _)),) = fields.items()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model_param = only
    if model_param is not None:
        arguments: type[BaseModel] = fields[model_param][0]
    else:
        arguments = pydantic.create_model(f"{tool_name}Arguments", **fields)
    input_schema = _object_schema(arguments.model_json_schema())
    returns = hints.get("return", signature.return_annotation)
    structured = _is_structured(returns) if structured_output is None else structured_output
    output_schema = None
    wrap = False
    adapter = None
    if structured and returns is not inspect.Signature.empty:
        adapter = TypeAdapter(returns)
        schema = adapter.json_schema()
        if schema.get("type") == "object" or (isinstance(returns, type) and issubclass(returns, BaseModel)):
            output_schema = _object_schema(schema)
        else:
            wrap = True
            output_schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return ToolDef(
        name=tool_name,
        fn=fn,
        description=description if description is not None else inspect.getdoc(fn),
        title=title,
        input_schema=input_schema,
        output_schema=output_schema,
        arguments=arguments,
        annotations=annotations,
        icons=icons,
        meta=meta,
        context_param=context_param,
        model_param=model_param,
        wrap_result=wrap,
        output_adapter=adapter,
        is_async=inspect.iscoroutinefunction(fn),
    )


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def _is_content(value: Any) -> bool:
    value = _dump(value)
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_result(tool: ToolDef, value: Any) -> dict[str, Any]:
    """A tool's return value as a `CallToolResult` object."""
    dumped = _dump(value)
    if (
        isinstance(dumped, dict)
        and "content" in dumped
        and isinstance(dumped["content"], list)
        and not tool.output_schema
    ):
        return dumped  # already a CallToolResult
    if tool.output_schema is not None:
        structured = (
            tool.output_adapter.dump_python(value, mode="json", by_alias=True) if tool.output_adapter else dumped
        )
        if tool.wrap_result:
            structured = {"result": structured}
        return {"content": [text(json.dumps(structured, ensure_ascii=False))], "structuredContent": structured}
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [text(value)]}
    if _is_content(value):
        return {"content": [dumped]}
    if isinstance(value, (list, tuple)) and all(_is_content(v) or isinstance(v, str) for v in value):
        return {"content": [text(v) if isinstance(v, str) else _dump(v) for v in value]}
    structured = pydantic_json(value)
    result: dict[str, Any] = {"content": [text(json.dumps(structured, ensure_ascii=False))]}
    if isinstance(structured, dict):  # structured content is an object (2025-11-25 requires it)
        result["structuredContent"] = structured
    return result


def pydantic_json(value: Any) -> Any:
    return TypeAdapter(Any).dump_python(value, mode="json", by_alias=True)


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text(message)], "isError": True}


# -- prompts --------------------------------------------------------------------------------


@dataclass
class PromptDef:
    name: str
    fn: Callable[..., Any]
    description: str | None
    title: str | None
    arguments: list[dict[str, Any]]
    context_param: str | None = None
    icons: list[dict[str, Any]] | None = None
    is_async: bool = False

    def describe(self) -> dict[str, Any]:
        return _wire(
            {"name": self.name},
            title=self.title,
            description=self.description,
            arguments=self.arguments,
            icons=self.icons,
        )


def make_prompt(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    argument_descriptions: dict[str, str] | None = None,
) -> PromptDef:
    hints = _hints(fn)
    context_param = None
    arguments = []
    for pname, param in inspect.signature(fn).parameters.items():
        if _is_context(hints.get(pname, param.annotation)):
            context_param = pname
            continue
        argument: dict[str, Any] = {"name": pname, "required": param.default is inspect.Signature.empty}
        if argument_descriptions and pname in argument_descriptions:
            argument["description"] = argument_descriptions[pname]
        arguments.append(argument)
    return PromptDef(
        name=name or fn.__name__,
        fn=fn,
        description=description if description is not None else inspect.getdoc(fn),
        title=title,
        arguments=arguments,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(fn),
    )


def prompt_result(prompt: PromptDef, value: Any) -> dict[str, Any]:
    dumped = _dump(value)
    if isinstance(dumped, dict) and "messages" in dumped:
        result = dict(dumped)
    else:
        items = dumped if isinstance(dumped, (list, tuple)) else [dumped]
        messages = []
        for item in items:
            item = _dump(item)
            if isinstance(item, str):
                messages.append({"role": "user", "content": text(item)})
            elif isinstance(item, dict) and "role" in item:
                content = item.get("content")
                messages.append({**item, "content": text(content) if isinstance(content, str) else _dump(content)})
            elif _is_content(item):
                messages.append({"role": "user", "content": item})
            else:
                raise TypeError(f"prompt {prompt.name} returned {type(item).__name__}, not a message")
        result = {"messages": messages}
    if prompt.description and "description" not in result:
        result["description"] = prompt.description
    return result


# -- resources -------------------------------------------------------------------------------


@dataclass
class ResourceDef:
    uri: str
    name: str
    fn: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    context_param: str | None = None
    is_async: bool = False

    def describe(self) -> dict[str, Any]:
        return _wire(
            {"uri": self.uri, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            annotations=self.annotations,
        )


@dataclass
class TemplateDef:
    template: UriTemplate
    name: str
    fn: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    context_param: str | None = None
    params: tuple[str, ...] = field(default_factory=tuple)
    is_async: bool = False

    def describe(self) -> dict[str, Any]:
        return _wire(
            {"uriTemplate": self.template.template, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
        )


def _context_param(fn: Callable[..., Any]) -> str | None:
    hints = _hints(fn)
    for pname, param in inspect.signature(fn).parameters.items():
        if _is_context(hints.get(pname, param.annotation)):
            return pname
    return None


def make_resource(fn: Callable[..., Any], uri: str, **kw: Any) -> ResourceDef:
    name = kw.pop("name", None) or fn.__name__
    description = kw.pop("description", None)
    return ResourceDef(
        uri=uri,
        name=name,
        fn=fn,
        description=description if description is not None else inspect.getdoc(fn),
        context_param=_context_param(fn),
        is_async=inspect.iscoroutinefunction(fn),
        **kw,
    )


def make_template(fn: Callable[..., Any], uri_template: str, **kw: Any) -> TemplateDef:
    template = UriTemplate(uri_template)
    context = _context_param(fn)
    params = tuple(p for p in inspect.signature(fn).parameters if p != context)
    missing = set(template.variables) - set(params)
    if missing and not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
        raise TypeError(f"resource template {uri_template}: the function has no parameter for {sorted(missing)}")
    name = kw.pop("name", None) or fn.__name__
    description = kw.pop("description", None)
    return TemplateDef(
        template=template,
        name=name,
        fn=fn,
        description=description if description is not None else inspect.getdoc(fn),
        context_param=context,
        params=params,
        is_async=inspect.iscoroutinefunction(fn),
        **kw,
    )


def resource_contents(uri: str, mime_type: str | None, value: Any) -> dict[str, Any]:
    """A resource function's return value as a `ReadResourceResult` object (without cache fields)."""
    dumped = _dump(value)
    if isinstance(dumped, dict) and "contents" in dumped:
        return dumped
    items = dumped if isinstance(dumped, list) else [dumped]
    contents = []
    for item in items:
        item = _dump(item)
        if isinstance(item, dict) and "uri" in item and ("text" in item or "blob" in item):
            contents.append(item)
            continue
        entry: dict[str, Any] = {"uri": uri}
        if isinstance(item, (bytes, bytearray)):
            entry["blob"] = base64.b64encode(bytes(item)).decode("ascii")
            entry["mimeType"] = mime_type or "application/octet-stream"
        elif isinstance(item, str):
            entry["text"] = item
            entry["mimeType"] = mime_type or "text/plain"
        else:
            entry["text"] = json.dumps(pydantic_json(item), ensure_ascii=False)
            entry["mimeType"] = mime_type or "application/json"
        contents.append(entry)
    return {"contents": contents}
