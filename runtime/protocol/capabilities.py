"""Capability objects: what a side declares, what a table `Gate` needs, and what is missing. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpgen.generated._spec import Gate


def has_capability(capabilities: Mapping[str, Any] | None, path: str) -> bool:
    """Does a capabilities object declare dotted `path` (present, and not `false`/`null`)?"""
    return has_keys(capabilities, path.split("."))


def has_keys(capabilities: Mapping[str, Any] | None, keys: Iterable[str]) -> bool:
    """Does a capabilities object declare the path `keys` steps through (present, and not
    `false`/`null`)? The form for a path with a key that has dots of its own (an extension's id)."""
    node: Any = capabilities or {}
    for key in keys:
        if not (type(node) is dict or isinstance(node, Mapping)) or key not in node:  # a dict: no ABC check
            return False
        node = node[key]
        if node is None or node is False:
            return False
    return True


def gate_allows(capabilities: Mapping[str, Any] | None, gate: Gate, params: Mapping[str, Any] | None) -> bool:
    """Does `capabilities` satisfy a table `Gate` for a request with these (wire) params?

    A gate refined by a params value (elicitation `mode`) needs that value's sub-capability,
    except that a capability object naming none of the refinements declares the default one
    (`elicitation: {}` means form mode only).
    """
    if gate.param is None and not gate.param_requires:  # the common gate: one path
        return has_keys(capabilities, gate.keys)
    return not missing_paths(capabilities, gate, params)


def missing_paths(capabilities: Mapping[str, Any] | None, gate: Gate, params: Mapping[str, Any] | None) -> list[str]:
    """The full capability paths (`elicitation.url`, `sampling.tools`) a request with these
    params needs and `capabilities` lacks; empty when the gate is satisfied."""
    missing = [extra for extra in gate.extra_paths(params) if not has_capability(capabilities, extra)]
    path = gate.path_for(params)
    declared = has_keys(capabilities, gate.keys) if path == gate.path else has_capability(capabilities, path)
    if not declared and not _default_refinement(capabilities, gate, path):
        missing.insert(0, path)
    return missing


def gate_requirement(gate: Gate) -> dict[str, Any]:
    """The capabilities object a gate's own path asks for (`requiredCapabilities` of a -32021),
    nested by the gate's keys: `{"extensions": {"io.example/ext": {}}}`."""
    return nested_keys(gate.keys)


def _default_refinement(capabilities: Mapping[str, Any] | None, gate: Gate, path: str) -> bool:
    """`elicitation: {}` (no refinement named) declares the default refinement (`form`)."""
    if gate.param is None or path != dict(gate.param_paths).get(gate.param_default or ""):
        return False
    if not has_capability(capabilities, gate.path):
        return False
    node: Any = capabilities
    for key in gate.path.split("."):
        node = node[key]
    leaves = {p.rsplit(".", 1)[-1] for _, p in gate.param_paths}
    return isinstance(node, Mapping) and not (leaves & set(node))


def merge_capabilities(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into `base`; a `None` override removes the key."""
    out = dict(base)
    for key, value in overrides.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_capabilities(out[key], value)
        else:
            out[key] = value
    return out


def nested_capability(path: str) -> dict[str, Any]:
    """`"elicitation.url"` -> `{"elicitation": {"url": {}}}` (for `requiredCapabilities`)."""
    return nested_keys(path.split("."))


def nested_keys(keys: Iterable[str]) -> dict[str, Any]:
    """`("extensions", "io.example/ext")` -> `{"extensions": {"io.example/ext": {}}}`."""
    out: dict[str, Any] = {}
    node = out
    for key in keys:
        node[key] = {}
        node = node[key]
    return out


def required_capabilities(paths: list[str]) -> dict[str, Any]:
    """Several dotted paths as one nested capabilities object."""
    out: dict[str, Any] = {}
    for path in paths:
        out = merge_capabilities(out, nested_capability(path))
    return out
