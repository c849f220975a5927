"""RFC 6570 URI templates: expansion, and matching a URI back to its variables.

Matching (what a server needs for resource templates) covers every operator of levels 1-4
(`{var}`, `{+var}`, `{#var}`, `{.var}`, `{/var}`, `{;var}`, `{?var}`, `{&var}`, lists of
variables, the `*` explode and `:n` prefix modifiers). It is greedy-free: simple variables
stop at the operator's reserved characters, `+` and `#` may span `/`. Matched values are
percent-decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

_EXPR = re.compile(r"\{([^{}]*)\}")
_VARSPEC = re.compile(r"^([A-Za-z0-9_%.]+)(\*|:[0-9]{1,4})?$")
UNRESERVED = "-._~"
RESERVED = ":/?#[]@!$&'()*+,;="

# operator -> (first, separator, named, if-empty, allow reserved)
_OPS: dict[str, tuple[str, str, bool, str, bool]] = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}


# What one variable's value may contain when matching, per operator (values are percent-encoded,
# so only `+` and `#` may carry reserved characters such as `/`).
_VALUE: dict[str, str] = {
    "": "[^/?#]*",
    "+": ".*?",
    "#": ".*?",
    ".": "[^/?#.]*",
    "/": "[^/?#]*",
    ";": "[^/?#;]*",
    "?": "[^&#]*",
    "&": "[^&#]*",
}


class UriTemplateError(ValueError):
    """A template that is not valid RFC 6570."""


@dataclass(frozen=True)
class _Var:
    name: str
    explode: bool
    prefix: int | None


@dataclass(frozen=True)
class _Expression:
    op: str
    variables: tuple[_Var, ...]


def _parse(template: str) -> list[str | _Expression]:
    parts: list[str | _Expression] = []
    pos = 0
    for match in _EXPR.finditer(template):
        if match.start() > pos:
            parts.append(template[pos : match.start()])
        body = match.group(1)
        op = body[0] if body and body[0] in "+#./;?&" else ""
        names = body[len(op) :]
        if not names:
            raise UriTemplateError(f"empty expression in {template!r}")
        variables = []
        for spec in names.split(","):
            m = _VARSPEC.match(spec)
            if not m:
                raise UriTemplateError(f"bad variable {spec!r} in {template!r}")
            modifier = m.group(2) or ""
            variables.append(_Var(m.group(1), modifier == "*", int(modifier[1:]) if modifier.startswith(":") else None))
        parts.append(_Expression(op, tuple(variables)))
        pos = match.end()
    rest = template[pos:]
    if "{" in rest or "}" in rest:
        raise UriTemplateError(f"unbalanced braces in {template!r}")
    if rest:
        parts.append(rest)
    return parts


class UriTemplate:
    """A parsed template. `expand(**values)` builds a URI; `match(uri)` recovers the values or None."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = _parse(template)
        self.variables = tuple(v.name for p in self._parts if isinstance(p, _Expression) for v in p.variables)
        self._named: list[_Expression] = []
        self._regex = re.compile("^" + "".join(self._pattern(p) for p in self._parts) + "$")

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def _pattern(self, part: str | _Expression) -> str:
        if isinstance(part, str):
            return re.escape(part)
        first, sep, _named, _ifemp, _reserved = _OPS[part.op]
        if part.op in ("?", "&", ";"):
            # name=value pairs: captured whole and parsed, so they may come in any order or be absent
            index = len(self._named)
            self._named.append(part)
            lead = re.escape(first)
            body = "[^#]*" if part.op != ";" else "[^/?#]*"
            return f"(?:{lead}(?P<n_{index}>{body}))?"
        listed = len(part.variables) > 1
        pieces = []
        for i, var in enumerate(part.variables):
            value = _VALUE[part.op]
            if listed or var.explode:
                value = value.replace("]", ",]") if value.startswith("[") else "[^,]*?"
            group = f"(?P<{_group(var.name)}>{value})"
            lead = re.escape(first if i == 0 else sep)
            pieces.append(f"(?:{lead}{group})?")
        return "".join(pieces)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of `uri`, percent-decoded, or None when it does not match.

        A variable that may not contain `/` (every operator but `+` and `#`) does not match an
        encoded `%2F` either: a decoded `../` in a path-like value is refused, not handed over.
        """
        found = self._regex.match(uri)
        if found is None:
            return None
        out: dict[str, str] = {}
        for part in self._parts:
            if not isinstance(part, _Expression) or part.op in ("?", "&", ";"):
                continue
            for var in part.variables:
                value = found.group(_group(var.name))
                if value is None:
                    continue
                if part.op not in ("+", "#") and "%2f" in value.lower():
                    return None
                out[var.name] = unquote(value)
        query_names = {v.name for p in self._named if p.op != ";" for v in p.variables}
        for index, part in enumerate(self._named):
            raw = found.group(f"n_{index}")
            if not raw:
                continue
            pairs = raw.split("&" if part.op != ";" else ";")
            # a query continues across `{?a}{&b}`: its pairs may answer any query expression
            names = query_names if part.op != ";" else {v.name for v in part.variables}
            for pair in pairs:
                if not pair:
                    continue
                key, has_value, value = pair.partition("=")
                key = unquote(key)
                if key in names:
                    out[key] = unquote(value) if has_value else ""
        return out

    def expand(self, **values: str | list[str]) -> str:
        out = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            first, sep, named, ifemp, reserved = _OPS[part.op]
            safe = UNRESERVED + (RESERVED if reserved else "")
            items = []
            for var in part.variables:
                value = values.get(var.name)
                if value is None:
                    continue
                if isinstance(value, list):
                    joined = (sep if var.explode else ",").join(quote(str(v), safe=safe) for v in value)
                else:
                    text = str(value)[: var.prefix] if var.prefix else str(value)
                    joined = quote(text, safe=safe)
                if named:
                    items.append(f"{var.name}={joined}" if joined or part.op != ";" else var.name)
                    if not joined and part.op != ";":
                        items[-1] = f"{var.name}{ifemp}"
                else:
                    items.append(joined)
            if items:
                out.append(first + sep.join(items))
        return "".join(out)


def _group(name: str) -> str:
    return "v_" + "".join(c if c.isalnum() else f"_{ord(c):x}_" for c in name)
