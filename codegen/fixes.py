"""Rule-based repairs of known schema defects, kept as data (`schema/fixes.toml`).

A rule selects schema nodes by a JSON-pointer glob and a structural pattern (the *shape* it
repairs), never by protocol version or class name, and edits the matched node with a few small
operations. Each run reports which rules applied where; a rule that matches nothing is reported,
not fatal, so an upstream fix simply turns a rule into a no-op.

Pattern language (used by `when`, `unless` and `context.when`; `unless` may also be a list of
patterns, any of which excludes a node):

- a table matches a JSON object that has every listed key with a matching value;
- an array matches an array of the same length, element by element;
- `"$any"` matches any present value;
- `{ "$contains" = [p, ...] }` matches an array in which every `p` matches some element;
- `{ "$absent" = true }` (as a key's value) matches when that key is missing;
- `{ "$not" = p }` matches anything `p` does not match;
- any other scalar matches an equal scalar (booleans never equal numbers).

Operations, applied in this order to the matched node, with paths relative to it
(`a/b` steps into keys; an empty path is the node itself):

- `set = { "path" = value }` writes a value, creating intermediate objects;
- `remove = ["path", ...]` deletes keys (missing keys are fine);
- `remove_items = { "path" = [value, ...] }` drops values from an array (an emptied array is deleted).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _toml as tomllib
from .errors import GenerationError, escape_pointer_token, unescape_pointer_token
from .loader import DEFS, SchemaDocument

ANY = "$any"


@dataclass(frozen=True)
class Context:
    up: int
    when: Any


@dataclass(frozen=True)
class FixRule:
    id: str
    reason: str
    select: str
    when: Any = None
    unless: Any = None
    context: Context | None = None
    set: dict[str, Any] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    remove_items: dict[str, list[Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FixApplication:
    rule: FixRule
    pointers: tuple[str, ...]

    @property
    def applied(self) -> bool:
        return bool(self.pointers)


@dataclass(frozen=True)
class FixReport:
    version: str
    applications: tuple[FixApplication, ...]

    @property
    def applied(self) -> list[FixApplication]:
        return [a for a in self.applications if a.applied]

    @property
    def unmatched(self) -> list[FixRule]:
        return [a.rule for a in self.applications if not a.applied]

    def lines(self) -> list[str]:
        out = []
        for app in self.applications:
            if app.applied:
                where = ", ".join(app.pointers)
                out.append(f"{self.version}: fix {app.rule.id} applied at {where} ({app.rule.reason})")
            else:
                out.append(f"{self.version}: fix {app.rule.id} matched nothing")
        return out


_RULE_KEYS = {"id", "reason", "select", "when", "unless", "context", "set", "remove", "remove_items"}


def load_rules(path: Path) -> list[FixRule]:
    """Read `[[fix]]` tables from a TOML file; a missing file means no rules."""
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GenerationError(f"cannot read fix rules: {exc}", file=path) from exc
    rules = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("fix", [])):
        where = f"/fix/{i}"
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            raise GenerationError(f"unknown keys in fix rule: {sorted(unknown)}", file=path, pointer=where)
        for required in ("id", "reason", "select"):
            if not isinstance(raw.get(required), str) or not raw[required]:
                raise GenerationError(f"fix rule needs a non-empty `{required}`", file=path, pointer=where)
        if raw["id"] in seen:
            raise GenerationError(f"duplicate fix rule id {raw['id']!r}", file=path, pointer=where)
        seen.add(raw["id"])
        ctx = raw.get("context")
        rules.append(
            FixRule(
                id=raw["id"],
                reason=raw["reason"],
                select=raw["select"],
                when=raw.get("when"),
                unless=raw.get("unless"),
                context=Context(int(ctx.get("up", 1)), ctx.get("when")) if ctx else None,
                set=dict(raw.get("set", {})),
                remove=tuple(raw.get("remove", ())),
                remove_items={k: list(v) for k, v in raw.get("remove_items", {}).items()},
            )
        )
    return rules


def matches(pattern: Any, node: Any) -> bool:
    """Does `node` have the shape described by `pattern` (see the module docstring)?"""
    if pattern == ANY:
        return True
    if isinstance(pattern, dict):
        return _matches_table(pattern, node)
    if isinstance(pattern, list):
        return _matches_array(pattern, node)
    return _matches_scalar(pattern, node)


def _matches_not(operand: Any, node: Any) -> bool:
    return not matches(operand, node)


def _matches_contains(operand: Any, node: Any) -> bool:
    return isinstance(node, list) and all(any(matches(p, item) for item in node) for p in operand)


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {"$not": _matches_not, "$contains": _matches_contains}
"""A table whose only key is one of these is an operator applied to its value, not an object pattern."""


def _matches_table(pattern: dict[str, Any], node: Any) -> bool:
    if len(pattern) == 1:
        ((key, operand),) = pattern.items()
        operator = _OPERATORS.get(key)
        if operator is not None:
            return operator(operand, node)
    return isinstance(node, dict) and all(_matches_key(key, sub, node) for key, sub in pattern.items())


def _matches_key(key: str, sub: Any, node: dict[str, Any]) -> bool:
    """One key of an object pattern: `{ "$absent" = true }` wants the key missing, any other
    pattern wants it present with a matching value."""
    if isinstance(sub, dict) and sub.get("$absent") is True and len(sub) == 1:
        return key not in node
    return key in node and matches(sub, node[key])


def _matches_array(pattern: list[Any], node: Any) -> bool:
    return (
        isinstance(node, list)
        and len(node) == len(pattern)
        and all(matches(p, n) for p, n in zip(pattern, node, strict=True))
    )


def _matches_scalar(pattern: Any, node: Any) -> bool:
    if isinstance(pattern, bool) != isinstance(node, bool):  # booleans never equal numbers
        return False
    return bool(pattern == node)


def _alternatives(pattern: Any) -> list[Any]:
    """`unless` may list several patterns: any one of them excludes the node."""
    return pattern if isinstance(pattern, list) else [pattern]


def _glob_match(glob: list[str], path: list[str]) -> bool:
    if not glob:
        return not path
    head, rest = glob[0], glob[1:]
    if head == "**":
        return any(_glob_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head == "*" or head == path[0]) and _glob_match(rest, path[1:])


def _walk(node: Any, path: list[str], out: list[tuple[list[str], list[Any]]], chain: list[Any]) -> None:
    out.append((path, chain))
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (dict, list)):
                _walk(v, [*path, k], out, [*chain, v])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                _walk(v, [*path, str(i)], out, [*chain, v])


def _split_rel(path: str) -> list[str]:
    return [unescape_pointer_token(t) for t in path.split("/")] if path else []


def _apply_ops(rule: FixRule, node: dict[str, Any]) -> None:
    for rel, value in rule.set.items():
        tokens = _split_rel(rel)
        if not tokens:
            raise GenerationError(f"fix {rule.id}: `set` needs a key path")
        target = node
        for t in tokens[:-1]:
            target = target.setdefault(t, {})
        target[tokens[-1]] = copy.deepcopy(value)
    for rel in rule.remove:
        tokens = _split_rel(rel)
        holder: Any = node
        for t in tokens[:-1]:
            holder = holder.get(t) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            holder.pop(tokens[-1], None)
    for rel, values in rule.remove_items.items():
        tokens = _split_rel(rel)
        parent: Any = node
        for t in tokens[:-1]:
            parent = parent.get(t) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and isinstance(parent.get(tokens[-1]), list):
            kept = [v for v in parent[tokens[-1]] if v not in values]
            if kept:
                parent[tokens[-1]] = kept
            else:
                del parent[tokens[-1]]


def apply_fixes(doc: SchemaDocument, rules: list[FixRule]) -> tuple[SchemaDocument, FixReport]:
    """Return a repaired copy of `doc` and a report of where each rule applied."""
    fixed = doc.copy()
    root = {DEFS: fixed.defs}
    applications = []
    for rule in rules:
        glob = [unescape_pointer_token(t) for t in rule.select.strip("/").split("/")]
        nodes: list[tuple[list[str], list[Any]]] = []
        _walk(root, [], nodes, [root])
        hits: list[tuple[str, dict[str, Any]]] = []
        for path, chain in nodes:
            node = chain[-1]
            if not isinstance(node, dict) or not _glob_match(glob, path):
                continue
            if rule.when is not None and not matches(rule.when, node):
                continue
            if rule.unless is not None and any(matches(p, node) for p in _alternatives(rule.unless)):
                continue
            if rule.context is not None:
                up = rule.context.up
                if up >= len(chain) or not matches(rule.context.when, chain[-1 - up]):
                    continue
            hits.append(("/" + "/".join(escape_pointer_token(t) for t in path), node))
        for _, node in hits:
            _apply_ops(rule, node)
        applications.append(FixApplication(rule, tuple(p for p, _ in hits)))
    return fixed, FixReport(doc.version, tuple(applications))
