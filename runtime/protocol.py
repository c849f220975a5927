"""The runtime's view of the generated tree: versions, eras, tables, and protocol constants.

`Protocol` wraps a generated `versions` module (by default `mcpgen.generated.versions`, but any
tree made by `mcpgen generate --out` works), so the runtime never names a version or a model.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import ModuleType
from typing import Any

from pydantic import ValidationError

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

HANDSHAKE = "handshake"
MODERN = "modern"


MISSING_TREE = (
    "mcpgen's generated tree (mcpgen.generated) is missing: run `mcpgen sync && mcpgen generate` in the "
    "mcpgen checkout (.ci/setup does both), or install mcpgen from a wheel, which ships it"
)


def _default_registry() -> ModuleType:
    try:
        return importlib.import_module("mcpgen.generated.versions")
    except ModuleNotFoundError as exc:
        if exc.name not in ("mcpgen.generated", "mcpgen.generated.versions"):
            raise
        raise ModuleNotFoundError(MISSING_TREE, name=exc.name) from None


class Protocol:
    """Versions and tables of one generated tree."""

    def __init__(self, registry: ModuleType | None = None) -> None:
        if registry is None:
            registry = _default_registry()
        self.registry = registry
        self.supported: tuple[str, ...] = tuple(registry.SUPPORTED)
        self._methods = lru_cache(maxsize=None)(self._load_methods)
        self._input_capable = lru_cache(maxsize=None)(self._load_input_capable)

    def _load_methods(self, version: str) -> Mapping[str, Any]:
        table: Mapping[str, Any] = self.registry.methods(version)
        return table

    def methods(self, version: str) -> Mapping[str, Any]:
        """The dispatch table (method -> MethodSpec) of `version`."""
        return self._methods(version)

    def may_require_input(self, method: str) -> bool:
        """Can `method` ask for input in some version? (On a handshake-era session the legacy shim
        turns the same handler's input requests into server->client requests.)"""
        return self._input_capable(method)

    def _load_input_capable(self, method: str) -> bool:
        return any(
            spec.may_require_input
            for version in self.supported
            if (spec := self.methods(version).get(method)) is not None
        )

    def models(self, version: str) -> ModuleType:
        module: ModuleType = importlib.import_module(f"{self.registry.module(version).__name__}.models")
        return module

    def era(self, version: str) -> str:
        era: str = self.registry.era(version)
        return era

    def is_modern(self, version: str) -> bool:
        return version in self.supported and self.era(version) == MODERN

    def handshake_versions(self, versions: Iterable[str]) -> list[str]:
        return [v for v in versions if v in self.supported and self.era(v) == HANDSHAKE]

    def modern_versions(self, versions: Iterable[str]) -> list[str]:
        return [v for v in versions if v in self.supported and self.era(v) == MODERN]

    def newest_first(self, versions: Iterable[str]) -> list[str]:
        known = [v for v in set(versions) if v in self.supported]
        return sorted(known, key=self.supported.index, reverse=True)

    def newest_mutual(self, theirs: Iterable[str], ours: Iterable[str], era: str | None = None) -> str | None:
        found: str | None = self.registry.newest_mutual(list(theirs), list(ours), era=era)
        return found

    def check_versions(self, versions: Iterable[str] | None) -> tuple[str, ...]:
        """A configured subset of versions, validated (default: all), oldest first."""
        if versions is None:
            return self.supported
        chosen = list(dict.fromkeys(versions))
        unknown = [v for v in chosen if v not in self.supported]
        if unknown:
            raise ValueError(f"unsupported protocol versions {unknown}; this tree has {list(self.supported)}")
        if not chosen:
            raise ValueError("at least one protocol version is needed")
        return tuple(v for v in self.supported if v in chosen)


def has_capability(capabilities: Mapping[str, Any] | None, path: str) -> bool:
    """Does a capabilities object declare dotted `path` (present, and not `false`/`null`)?"""
    node: Any = capabilities or {}
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
        if node is None or node is False:
            return False
    return True


def gate_allows(capabilities: Mapping[str, Any] | None, gate: Any, params: Mapping[str, Any] | None) -> bool:
    """Does `capabilities` satisfy a table `Gate` for a request with these params?

    A gate refined by a params value (elicitation `mode`) needs that value's sub-capability,
    except that a capability object naming none of the refinements declares the default one
    (`elicitation: {}` means form mode only).
    """
    if any(not has_capability(capabilities, extra) for extra in gate.extra_paths(params)):
        return False
    path = gate.path_for(params)
    if has_capability(capabilities, path):
        return True
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


def validation_detail(exc: ValidationError, limit: int = 5) -> str:
    """A one-line summary of a pydantic validation error (field path and message)."""
    parts = []
    for error in exc.errors(include_url=False)[:limit]:
        location = ".".join(str(p) for p in error.get("loc", ())) or "(root)"
        parts.append(f"{location}: {error.get('msg')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)
