"""RFC 6570 URI templates: expansion, and matching a URI back to its variables.

Matching (what a server needs for resource templates) covers every operator of levels 1-4
(`{var}`, `{+var}`, `{#var}`, `{.var}`, `{/var}`, `{;var}`, `{?var}`, `{&var}`, lists of
variables, the `*` explode and `:n` prefix modifiers). Simple variables stop at the operator's
reserved characters; `+` and `#` may span `/`. Matched values are percent-decoded.

Matching takes time linear in the URI's length, whatever the URI: a template compiles to a
small automaton, a backward pass marks at each position the states from which the rest of the
URI can still be matched (memoised, so each character costs a couple of dictionary lookups),
and a forward pass walks the one path a backtracking matcher would have found first, without
backtracking. Safety rules: a value that may not contain `/` (every operator but `+` and `#`)
does not match an encoded `%2F` either, and dot segments (`..`, `%2E%2E`) in the URI's path are
resolved before matching, refusing a URI that would climb above its root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

_EXPR = re.compile(r"\{([^{}]*)\}")
_VARSPEC = re.compile(r"^([A-Za-z0-9_%.]+)(\*|:[0-9]{1,4})?$")
UNRESERVED = "-._~"
RESERVED = ":/?#[]@!$&'()*+,;="
_DOT = re.compile(r"%2e", re.IGNORECASE)

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
_NAMED = ("?", "&", ";")
# Characters one variable's value may not contain, per operator (None: any character but a line
# break); `lazy` values stop as early as the rest of the URI allows.
_STOPS: dict[str, frozenset[str] | None] = {
    "": frozenset("/?#"),
    "+": None,
    "#": None,
    ".": frozenset("/?#."),
    "/": frozenset("/?#"),
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


# -- the automaton ---------------------------------------------------------------------------------
# Instructions: ("char", c, next) and ("set", excluded | None, next) consume one character;
# ("split", first, second) tries `first` before `second`; ("save", slot, next) records the
# position; ("match",) accepts at the end of the URI.

Instruction = tuple[object, ...]


class _Builder:
    def __init__(self) -> None:
        self.program: list[Instruction] = []

    def emit(self, *instruction: object) -> int:
        self.program.append(instruction)
        return len(self.program) - 1

    def patch(self, at: int, *instruction: object) -> None:
        self.program[at] = instruction

    def literal(self, text: str) -> None:
        for c in text:
            self.emit("char", c, len(self.program) + 1)

    def star(self, excluded: frozenset[str] | None, lazy: bool, slot: int) -> None:
        """`(?P<slot> [^excluded]* )` (greedy, or lazy)."""
        self.emit("save", 2 * slot, len(self.program) + 1)
        loop = self.emit("split")
        self.emit("set", excluded, loop)
        exit_ = len(self.program)
        self.patch(loop, "split", *((exit_, loop + 1) if lazy else (loop + 1, exit_)))
        self.emit("save", 2 * slot + 1, len(self.program) + 1)

    def optional(self, body: list[tuple[str, frozenset[str] | None, bool, int]]) -> None:
        """`(?: lead value )?` for each (lead, excluded, lazy, slot) in `body`, in sequence."""
        for lead, excluded, lazy, slot in body:
            entry = self.emit("split")
            self.literal(lead)
            self.star(excluded, lazy, slot)
            self.patch(entry, "split", entry + 1, len(self.program))


class _Matcher:
    """Linear-time leftmost-first matching of one compiled program."""

    def __init__(self, program: list[Instruction], slots: int) -> None:
        self.program = program
        self.slots = slots
        self.match_pc = len(program) - 1
        self.consuming = [pc for pc, ins in enumerate(program) if ins[0] in ("char", "set")]
        self.epsilon_order = self._epsilon_order()
        self._accepts: dict[str, frozenset[int]] = {}
        self._steps: dict[tuple[frozenset[int], frozenset[int]], frozenset[int]] = {}

    def _successors(self, pc: int) -> tuple[int, ...]:
        ins = self.program[pc]
        if ins[0] == "split":
            return (int(ins[1]), int(ins[2]))  # type: ignore[call-overload]
        if ins[0] == "save":
            return (int(ins[2]),)  # type: ignore[call-overload]
        return ()

    def _epsilon_order(self) -> list[int]:
        """Epsilon instructions, each after every epsilon instruction it leads to."""
        order: list[int] = []
        seen: set[int] = set()

        def visit(pc: int) -> None:
            if pc in seen:
                return
            seen.add(pc)
            for nxt in self._successors(pc):
                if self.program[nxt][0] in ("split", "save"):
                    visit(nxt)
            order.append(pc)

        for pc, ins in enumerate(self.program):
            if ins[0] in ("split", "save"):
                visit(pc)
        return order

    def _accepting(self, c: str) -> frozenset[int]:
        found = self._accepts.get(c)
        if found is None:
            found = frozenset(pc for pc in self.consuming if _consumes(self.program[pc], c))
            self._accepts[c] = found
        return found

    def _close(self, live: set[int]) -> frozenset[int]:
        for pc in self.epsilon_order:
            if any(nxt in live for nxt in self._successors(pc)):
                live.add(pc)
        return frozenset(live)

    def _step(self, after: frozenset[int], c: str) -> frozenset[int]:
        accepts = self._accepting(c)
        key = (after, accepts)
        found = self._steps.get(key)
        if found is None:
            found = self._close({pc for pc in accepts if int(self.program[pc][2]) in after})  # type: ignore[call-overload]
            self._steps[key] = found
        return found

    def match(self, text: str) -> list[int] | None:
        """The saved positions of the first match, or None."""
        live: list[frozenset[int]] = [frozenset()] * (len(text) + 1)
        live[len(text)] = self._close({self.match_pc})
        for i in range(len(text) - 1, -1, -1):
            live[i] = self._step(live[i + 1], text[i])
        if 0 not in live[0]:
            return None
        saves = [-1] * (2 * self.slots)
        pc, i = 0, 0
        while True:
            ins = self.program[pc]
            kind = ins[0]
            if kind == "match":
                return saves
            if kind == "split":
                pc = int(ins[1]) if ins[1] in live[i] else int(ins[2])  # type: ignore[call-overload]
            elif kind == "save":
                saves[int(ins[1])] = i  # type: ignore[call-overload]
                pc = int(ins[2])  # type: ignore[call-overload]
            else:
                i += 1
                pc = int(ins[2])  # type: ignore[call-overload]


def _consumes(ins: Instruction, c: str) -> bool:
    if ins[0] == "char":
        return ins[1] == c
    excluded = ins[1]
    return c != "\n" and (excluded is None or c not in excluded)  # type: ignore[operator]


def _remove_dot_segments(path: str) -> str | None:
    """RFC 3986 §5.2.4, except that a `..` above the root refuses the path (None)."""
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
            continue
        if segment == "..":
            if not out or out == [""]:  # nothing left to climb out of: the root (or the start)
                return None
            out.pop()
            if last:
                out.append("")
            continue
        out.append(segment)
    return "/".join(out)


def normalize(uri: str) -> str | None:
    """`uri` with the dot segments of its path resolved (`%2E` counts as `.`); None when they
    would climb above the root."""
    if "." not in uri and "%" not in uri:
        return uri
    parts = urlsplit(uri)
    path = _DOT.sub(".", parts.path)
    if not any(s in (".", "..") for s in path.split("/")):
        return uri
    resolved = _remove_dot_segments(path)
    if resolved is None:
        return None
    return urlunsplit(parts._replace(path=resolved))


class UriTemplate:
    """A parsed template. `expand(**values)` builds a URI; `match(uri)` recovers the values or None."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = _parse(template)
        self.variables = tuple(v.name for p in self._parts if isinstance(p, _Expression) for v in p.variables)
        self._slots: list[tuple[_Expression, _Var | None]] = []  # per slot: expression, variable (None: named blob)
        builder = _Builder()
        for part in self._parts:
            if isinstance(part, str):
                builder.literal(part)
            else:
                builder.optional(self._body(part))
        builder.emit("match")
        self._matcher = _Matcher(builder.program, len(self._slots))

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def _body(self, part: _Expression) -> list[tuple[str, frozenset[str] | None, bool, int]]:
        first, sep, _named, _ifemp, _reserved = _OPS[part.op]
        if part.op in _NAMED:  # name=value pairs: captured whole and parsed, so any order, or absent
            self._slots.append((part, None))
            excluded = frozenset("/?#") if part.op == ";" else frozenset("#")
            return [(first, excluded, False, len(self._slots) - 1)]
        listed = len(part.variables) > 1
        body = []
        for i, var in enumerate(part.variables):
            stops = _STOPS[part.op]
            lazy = stops is None  # `+` and `#` values may hold anything: they end as early as they can
            if listed or var.explode:
                stops = frozenset(",") if stops is None else stops | {","}
            self._slots.append((part, var))
            body.append((first if i == 0 else sep, stops, lazy, len(self._slots) - 1))
        return body

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of `uri`, percent-decoded, or None when it does not match."""
        normal = normalize(uri)
        if normal is None:
            return None
        saves = self._matcher.match(normal)
        if saves is None:
            return None
        out: dict[str, str] = {}
        query_names = {
            v.name for p in self._parts if isinstance(p, _Expression) and p.op in ("?", "&") for v in p.variables
        }
        for slot, (part, var) in enumerate(self._slots):
            start, end = saves[2 * slot], saves[2 * slot + 1]
            if start < 0:
                continue
            raw = normal[start:end]
            if var is None:
                names = query_names if part.op != ";" else {v.name for v in part.variables}
                if not self._pairs(part, raw, names, out):
                    return None
                continue
            if part.op not in ("+", "#") and "%2f" in raw.lower():
                return None
            out[var.name] = unquote(raw)
        return out

    @staticmethod
    def _pairs(part: _Expression, raw: str, names: set[str], out: dict[str, str]) -> bool:
        """Read `name=value` pairs (a query continues across `{?a}{&b}`); False if a value hides a `/`."""
        for pair in raw.split("&" if part.op != ";" else ";"):
            if not pair:
                continue
            key, has_value, value = pair.partition("=")
            key = unquote(key)
            if key not in names:
                continue
            if "%2f" in value.lower():
                return False
            out[key] = unquote(value) if has_value else ""
        return True

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
