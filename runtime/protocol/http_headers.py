"""Streamable HTTP routing headers of the modern era: `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`. Pure.

Clients mirror parts of the body into headers so intermediaries can route without parsing it;
servers check that the headers say what the body says (-32020 otherwise). A value that is not
plain visible ASCII without surrounding whitespace travels as `=?base64?<UTF-8 as Base64>?=`;
anything else is taken literally. Header names are case-insensitive, values are not, and
optional whitespace around a value is ignored.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from .keys import PROTOCOL_VERSION_KEY

PROTOCOL_VERSION = "mcp-protocol-version"
METHOD = "mcp-method"
NAME = "mcp-name"
PARAM_PREFIX = "mcp-param-"
SESSION_ID = "mcp-session-id"

_B64_START, _B64_END = "=?base64?", "?="
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_OWS = " \t"


def needs_base64(text: str) -> bool:
    """Must this value travel in the Base64 form?"""
    return (
        not text.isascii()
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)
        or text != text.strip(_OWS)
        or (text.startswith(_B64_START) and text.endswith(_B64_END))
    )


def encode_value(value: object) -> str | None:
    """A JSON value as a header value (None: send no header). Integers in decimal, booleans as
    `true`/`false`, strings as they are or in the Base64 form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if needs_base64(text):
        return _B64_START + base64.b64encode(text.encode()).decode("ascii") + _B64_END
    return text


def decode_value(raw: str) -> str | None:
    """A received header value as text (None: an invalid Base64 form)."""
    raw = raw.strip(_OWS)
    if raw.startswith(_B64_START) and raw.endswith(_B64_END) and len(raw) >= len(_B64_START) + len(_B64_END):
        encoded = raw[len(_B64_START) : -len(_B64_END)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
    return raw


def valid_header_name(name: object) -> bool:
    """An `x-mcp-header` name: a non-empty HTTP token (no spaces, colons, controls, non-ASCII)."""
    return isinstance(name, str) and bool(_TOKEN.match(name))


def _same(header: str | None, value: object) -> bool:
    if header is None:
        return False
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int):
        try:
            return int(header) == value
        except ValueError:
            return False
    return isinstance(value, str) and header == value


def mismatch(
    method: str,
    params: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    header_params: Mapping[str, str],
    name_field: str | None = None,
) -> str | None:
    """What the routing headers get wrong about this request (None: they agree with the body).

    `headers` has lower-case names; `header_params` maps a tool's `x-mcp-header` names to its
    argument names; `name_field` is the params field `Mcp-Name` mirrors for this method (the
    table row's `name_param`; None: the method has no `Mcp-Name`).
    """
    params = params or {}
    found_meta = params.get("_meta")
    meta: Mapping[str, Any] = found_meta if type(found_meta) is dict or isinstance(found_meta, Mapping) else {}
    version = headers.get(PROTOCOL_VERSION)
    if version is None or version.strip(_OWS) != meta.get(PROTOCOL_VERSION_KEY):
        return "the MCP-Protocol-Version header does not match _meta protocolVersion"
    named = headers.get(METHOD)
    if named is None or named.strip(_OWS) != method:
        return f"the Mcp-Method header does not match the method {method!r}"
    if name_field is not None:
        raw = headers.get(NAME)
        if raw is None or decode_value(raw) != params.get(name_field):
            return f"the Mcp-Name header does not match params.{name_field}"
    if not header_params:
        return None
    found_arguments = params.get("arguments")
    arguments: Mapping[str, Any] = found_arguments if isinstance(found_arguments, Mapping) else {}
    for header_name, argument in header_params.items():
        raw = headers.get(PARAM_PREFIX + header_name.lower())
        value = arguments.get(argument)
        if raw is None and value is None:
            continue
        if raw is None or value is None or not _same(decode_value(raw), value):
            return f"the Mcp-Param-{header_name} header does not match the argument {argument!r}"
    return None
