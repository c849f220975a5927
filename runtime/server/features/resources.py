"""Resources and resource templates from plain Python functions."""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...protocol.uritemplate import UriTemplate
from .calling import Callee, describe
from .common import dump, pydantic_json, wire_object
from .content import Audio, File, Image


@dataclass
class ResourceDef:
    uri: str
    name: str
    callee: Callee
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)  # OAuth scopes a caller needs

    @property
    def fn(self) -> Callable[..., Any]:
        return self.callee.fn

    def describe(self) -> dict[str, Any]:
        return wire_object(
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
    callee: Callee
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    params: tuple[str, ...] = field(default_factory=tuple)
    scopes: frozenset[str] = field(default_factory=frozenset)  # OAuth scopes a caller needs

    @property
    def fn(self) -> Callable[..., Any]:
        return self.callee.fn

    def describe(self) -> dict[str, Any]:
        return wire_object(
            {"uriTemplate": self.template.template, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
        )


def make_resource(fn: Callable[..., Any], uri: str, **kw: Any) -> ResourceDef:
    name = kw.pop("name", None) or fn.__name__
    description = kw.pop("description", None)
    kw["scopes"] = frozenset(kw.get("scopes", ()))
    return ResourceDef(
        uri=uri,
        name=name,
        callee=describe(fn),
        description=description if description is not None else inspect.getdoc(fn),
        **kw,
    )


def make_template(fn: Callable[..., Any], uri_template: str, **kw: Any) -> TemplateDef:
    template = UriTemplate(uri_template)
    callee = describe(fn)
    signature = inspect.signature(fn)
    skipped = callee.not_from_client
    params = tuple(p for p in signature.parameters if p not in skipped)
    missing = set(template.variables) - set(params)
    if missing and not any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
        raise TypeError(f"resource template {uri_template}: the function has no parameter for {sorted(missing)}")
    name = kw.pop("name", None) or fn.__name__
    description = kw.pop("description", None)
    kw["scopes"] = frozenset(kw.get("scopes", ()))
    return TemplateDef(
        template=template,
        name=name,
        callee=callee,
        description=description if description is not None else inspect.getdoc(fn),
        params=params,
        **kw,
    )


def _entry(uri: str, mime_type: str | None, item: Any) -> dict[str, Any]:
    if isinstance(item, File):
        return {**item.contents(), "uri": item.uri or uri}
    if isinstance(item, (Image, Audio)):
        return {"uri": uri, "mimeType": item.mime_type, "blob": item.block()["data"]}
    item = dump(item)
    if isinstance(item, dict) and "uri" in item and ("text" in item or "blob" in item):
        return item
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
    return entry


def resource_contents(uri: str, mime_type: str | None, value: Any) -> dict[str, Any]:
    """A resource function's return value as a `ReadResourceResult` object (without cache fields)."""
    dumped = dump(value)
    if isinstance(dumped, dict) and "contents" in dumped:
        return dumped
    items = dumped if isinstance(dumped, list) else [dumped]
    return {"contents": [_entry(uri, mime_type, item) for item in items]}
