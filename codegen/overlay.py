"""What the schema cannot say, read from small data files in `schema/`.

- `roles.toml`: the role unions (which def lists what each side sends).
- `gates.toml`: the capability that gates each method (side and dotted path), optionally
  refined by a params value (elicitation mode), for the versions where it applies.
- `deprecations.toml`: methods deprecated from a given version on.
- `results.toml`: params properties that let a request return an extra result def
  (2025's task-augmented requests answer with `CreateTaskResult`).

Entries are keyed by method string (or property name) and an optional version range
(`since` inclusive, `until` exclusive); an entry never names a generated class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _toml as tomllib
from .errors import GenerationError
from .versioning import version_key

SIDES = ("client", "server", "receiver")


@dataclass(frozen=True)
class ParamRefinement:
    """`param` value -> capability path; `default` is the value assumed when the param is absent."""

    param: str
    default: str
    paths: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class GateEntry:
    method: str
    side: str
    path: str
    since: str | None = None
    until: str | None = None
    by_param: ParamRefinement | None = None
    # (params key, capability path): a request carrying that key also needs that path
    param_requires: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeprecationEntry:
    method: str
    since: str
    reason: str
    until: str | None = None


@dataclass(frozen=True)
class AugmentedResult:
    param: str
    result: str
    reason: str
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class RoleEntry:
    union: str
    kind: str
    direction: str


KINDS = ("request", "notification", "input_request")
DIRECTIONS = ("client_to_server", "server_to_client")


@dataclass(frozen=True)
class Overlay:
    roles: tuple[RoleEntry, ...] = ()
    gates: tuple[GateEntry, ...] = ()
    deprecations: tuple[DeprecationEntry, ...] = ()
    augmented_results: tuple[AugmentedResult, ...] = ()
    sources: tuple[str, ...] = field(default=())

    def gate_for(self, method: str, version: str) -> GateEntry | None:
        for gate in self.gates:
            if gate.method == method and applies(version, gate.since, gate.until):
                return gate
        return None

    def deprecation_for(self, method: str, version: str) -> DeprecationEntry | None:
        for dep in self.deprecations:
            if dep.method == method and applies(version, dep.since, dep.until):
                return dep
        return None

    def augmented_for(self, version: str) -> list[AugmentedResult]:
        return [a for a in self.augmented_results if applies(version, a.since, a.until)]


def applies(version: str, since: str | None, until: str | None) -> bool:
    key = version_key(version)
    if key is None:
        return False
    if since is not None and key < _key(since):
        return False
    return not (until is not None and key >= _key(until))


def _key(version: str) -> tuple[int, int, int]:
    key = version_key(version)
    if key is None:
        raise GenerationError(f"{version!r} in a data file is not a dated version (YYYY-MM-DD)")
    return key


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GenerationError(f"cannot read data file: {exc}", file=path) from exc
    return data


def _need(raw: dict[str, Any], key: str, path: Path, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise GenerationError(f"entry needs a non-empty string `{key}`", file=path, pointer=where)
    return value


def load_overlay(data_dir: Path) -> Overlay:
    roles_file = data_dir / "roles.toml"
    if not roles_file.is_file():
        raise GenerationError("the role unions data file is missing", file=roles_file)
    roles = []
    for i, raw in enumerate(_read(roles_file).get("role", [])):
        where = f"/role/{i}"
        kind = _need(raw, "kind", roles_file, where)
        direction = _need(raw, "direction", roles_file, where)
        if kind not in KINDS or direction not in DIRECTIONS:
            raise GenerationError(
                f"kind must be one of {KINDS} and direction one of {DIRECTIONS}", file=roles_file, pointer=where
            )
        roles.append(RoleEntry(_need(raw, "union", roles_file, where), kind, direction))
    gates_file = data_dir / "gates.toml"
    deps_file = data_dir / "deprecations.toml"
    results_file = data_dir / "results.toml"
    gates = []
    for i, raw in enumerate(_read(gates_file).get("gate", [])):
        where = f"/gate/{i}"
        side = _need(raw, "side", gates_file, where)
        if side not in SIDES:
            raise GenerationError(f"side must be one of {SIDES}, not {side!r}", file=gates_file, pointer=where)
        refinement = None
        if "by_param" in raw:
            bp = raw["by_param"]
            refinement = ParamRefinement(
                param=_need(bp, "param", gates_file, where + "/by_param"),
                default=_need(bp, "default", gates_file, where + "/by_param"),
                paths=tuple(sorted((str(k), str(v)) for k, v in bp.get("paths", {}).items())),
            )
        for key in ("since", "until"):
            if key in raw:
                _key(raw[key])
        gates.append(
            GateEntry(
                method=_need(raw, "method", gates_file, where),
                side=side,
                path=_need(raw, "path", gates_file, where),
                since=raw.get("since"),
                until=raw.get("until"),
                by_param=refinement,
                param_requires=tuple(sorted((str(k), str(v)) for k, v in raw.get("param_requires", {}).items())),
            )
        )
    deprecations = []
    for i, raw in enumerate(_read(deps_file).get("deprecated", [])):
        where = f"/deprecated/{i}"
        since = _need(raw, "since", deps_file, where)
        _key(since)
        deprecations.append(
            DeprecationEntry(
                method=_need(raw, "method", deps_file, where),
                since=since,
                reason=_need(raw, "reason", deps_file, where),
                until=raw.get("until"),
            )
        )
    augmented = []
    for i, raw in enumerate(_read(results_file).get("augmented_result", [])):
        where = f"/augmented_result/{i}"
        augmented.append(
            AugmentedResult(
                param=_need(raw, "param", results_file, where),
                result=_need(raw, "result", results_file, where),
                reason=_need(raw, "reason", results_file, where),
                since=raw.get("since"),
                until=raw.get("until"),
            )
        )
    sources = tuple(str(p) for p in (roles_file, gates_file, deps_file, results_file) if p.is_file())
    return Overlay(tuple(roles), tuple(gates), tuple(deprecations), tuple(augmented), sources)
