"""`x-mcp-header` annotations in tool input schemas, as a Streamable HTTP client reads them. Pure.

A tool may ask for some of its arguments to be mirrored into `Mcp-Param-{Name}` request headers
by annotating their property schemas with `"x-mcp-header": "Name"`. An annotation is valid when
its name is an HTTP token, unique (case-insensitively) within the schema, on a property of a
primitive type (string, integer or boolean; `number` is not allowed), reached from the schema
root through `properties` keys only. A tool with any invalid annotation is refused: a client on
this transport leaves it out of the tool list (with a warning) instead of failing the listing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ...protocol.http_headers import encode_value, valid_header_name

log = logging.getLogger("mcpgen.runtime.client.http")

KEYWORD = "x-mcp-header"
PARAM_HEADER = "Mcp-Param-"
_PRIMITIVE = frozenset({"string", "integer", "boolean"})
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})  # values, not schemas

Path = tuple[str, ...]


def header_paths(schema: object) -> dict[str, Path]:
    """The annotated arguments of an input schema: header name -> property path. Raises
    `ValueError` saying what is wrong when an annotation breaks the rules."""
    found: dict[str, Path] = {}
    _walk(schema, (), True, found)
    return found


def _walk(schema: object, path: Path, reachable: bool, found: dict[str, Path]) -> None:
    if isinstance(schema, list):
        for item in schema:
            _walk(item, path, False, found)
        return
    if not isinstance(schema, Mapping):
        return
    if KEYWORD in schema:
        _check(schema, path, reachable, found)
    for key, value in schema.items():
        if key == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                _walk(sub, (*path, str(name)), reachable, found)
        elif key not in _DATA_KEYWORDS and isinstance(value, (Mapping, list)):
            _walk(value, path, False, found)


def _check(schema: Mapping[str, Any], path: Path, reachable: bool, found: dict[str, Path]) -> None:
    name = schema[KEYWORD]
    where = "/".join(path) or "the schema root"
    if not reachable or not path:
        raise ValueError(f"{KEYWORD} at {where} is not on a property reached through `properties` alone")
    if not valid_header_name(name):
        raise ValueError(f"{KEYWORD} {name!r} at {where} is not a valid header name")
    if any(name.lower() == other.lower() for other in found):
        raise ValueError(f"{KEYWORD} {name!r} at {where} repeats another annotation's name")
    declared = schema.get("type")
    types = set(declared) if isinstance(declared, list) else {declared}
    primitive = types - {"null"}
    if not primitive or not primitive <= _PRIMITIVE:
        raise ValueError(f"{KEYWORD} {name!r} at {where} is on a property of type {declared!r}, not a primitive")
    found[name] = path


class ToolHeaders:
    """What a connection learned from `tools/list`: each tool's annotated arguments."""

    def __init__(self) -> None:
        self._tools: dict[str, dict[str, Path]] = {}

    def learn(self, result: object) -> bool:
        """Learn the tools of one `tools/list` result and drop the invalid ones from it (in
        place); True if it dropped any."""
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or not isinstance(name, str):
                kept.append(tool)  # not ours to judge: the result's validation reports it
                continue
            try:
                paths = header_paths(tool.get("inputSchema"))
            except ValueError as exc:
                log.warning("ignoring tool %r from tools/list: %s", name, exc)
                self._tools.pop(name, None)
                continue
            if paths:
                self._tools[name] = paths
            else:
                self._tools.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return False
        assert isinstance(result, dict)
        result["tools"] = kept
        return True

    def headers(self, params: Mapping[str, Any]) -> dict[str, str]:
        """The `Mcp-Param-*` headers of one `tools/call` (none for a tool not listed yet)."""
        name = params.get("name")
        paths = self._tools.get(name) if isinstance(name, str) else None
        if not paths:
            return {}
        out: dict[str, str] = {}
        for header, path in paths.items():
            value: Any = params.get("arguments")
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            if isinstance(value, (Mapping, list)):
                continue  # not a primitive: nothing a header can mirror
            encoded = encode_value(value)
            if encoded is not None:
                out[PARAM_HEADER + header] = encoded
        return out
