"""What the schema cannot say, read from small data files in `schema/`.

- `roles.toml`: the role unions (which def lists what each side sends).
- `gates.toml`: the capability that gates each method (side and dotted path), optionally
  refined by a params value (elicitation mode), for the versions where it applies.
- `deprecations.toml`: methods deprecated from a given version on.
- `results.toml`: params properties that let a request return an extra result def
  (2025's task-augmented requests answer with `CreateTaskResult`).
- `headers.toml`: the params field the `Mcp-Name` HTTP header mirrors, per method.
- `extensions.toml`: per extension (keyed by its identifier): the core versions it applies to,
  who sends each method its schema defines (an extension schema has no role unions), the
  params field `Mcp-Name` mirrors for them, whose capabilities must list the extension, the
  core methods it gives extra results (and which) and the core methods it removes.

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
EXTENSION_SIDES = (*SIDES, "both")  # `both`: the sender's own capabilities and the receiver's
UNGATED = "none"


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


@dataclass(frozen=True)
class NameParam:
    """`Mcp-Name` mirrors `params[param]` of `method` (in the versions `since`..`until`)."""

    method: str
    param: str
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class ExtensionMethod:
    """A method an extension's schema defines: who sends it, and what the schema cannot say."""

    method: str
    direction: str
    name_param: str | None = None
    gate: str | None = None  # a side overriding the extension's, or `none`


@dataclass(frozen=True)
class ExtensionAugment:
    """A core method that, with the extension, may also answer with `result` (an extension def)."""

    method: str
    result: str
    reason: str


@dataclass(frozen=True)
class ExtensionEntry:
    """What an extension's schema cannot say (`extensions.toml`, keyed by the extension's id)."""

    id: str
    gate: str  # whose capabilities must list `extensions.<id>` for the extension's own methods
    since: str | None = None  # the core versions it applies to
    until: str | None = None
    settings: str | None = None  # the def of its settings object under `extensions.<id>`
    methods: tuple[ExtensionMethod, ...] = ()
    augments: tuple[ExtensionAugment, ...] = ()
    removes: tuple[str, ...] = ()  # core methods the extension takes away
    reason: str = ""

    def applies_to(self, version: str) -> bool:
        return applies(version, self.since, self.until)

    def method(self, name: str) -> ExtensionMethod | None:
        return next((m for m in self.methods if m.method == name), None)


KINDS = ("request", "notification", "input_request")
DIRECTIONS = ("client_to_server", "server_to_client")
EXTENSION_DIRECTIONS = (*DIRECTIONS, "both")


@dataclass(frozen=True)
class Overlay:
    roles: tuple[RoleEntry, ...] = ()
    gates: tuple[GateEntry, ...] = ()
    deprecations: tuple[DeprecationEntry, ...] = ()
    augmented_results: tuple[AugmentedResult, ...] = ()
    sources: tuple[str, ...] = field(default=())
    name_params: tuple[NameParam, ...] = ()
    extensions: tuple[ExtensionEntry, ...] = ()

    def name_param_for(self, method: str, version: str) -> str | None:
        for entry in self.name_params:
            if entry.method == method and applies(version, entry.since, entry.until):
                return entry.param
        return None

    def extension(self, ext_id: str) -> ExtensionEntry | None:
        return next((e for e in self.extensions if e.id == ext_id), None)

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
    headers_file = data_dir / "headers.toml"
    extensions_file = data_dir / "extensions.toml"
    files = (roles_file, gates_file, deps_file, results_file, headers_file, extensions_file)
    sources = tuple(str(p) for p in files if p.is_file())
    return Overlay(
        tuple(roles),
        tuple(gates),
        tuple(deprecations),
        tuple(augmented),
        sources,
        _name_params(headers_file),
        _extensions(extensions_file),
    )


def _range(raw: dict[str, Any], path: Path, where: str) -> tuple[str | None, str | None]:
    bounds = []
    for key in ("since", "until"):
        value = raw.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise GenerationError(f"`{key}` must be a YYYY-MM-DD string", file=path, pointer=where)
            _key(value)
        bounds.append(value)
    return bounds[0], bounds[1]


def _name_params(path: Path) -> tuple[NameParam, ...]:
    found = []
    for i, raw in enumerate(_read(path).get("name_param", [])):
        where = f"/name_param/{i}"
        since, until = _range(raw, path, where)
        found.append(NameParam(_need(raw, "method", path, where), _need(raw, "param", path, where), since, until))
    return tuple(found)


def _choice(raw: dict[str, Any], key: str, allowed: tuple[str, ...], path: Path, where: str) -> str:
    value = _need(raw, key, path, where)
    if value not in allowed:
        raise GenerationError(f"`{key}` must be one of {allowed}, not {value!r}", file=path, pointer=where)
    return value


def _strings(raw: dict[str, Any], key: str, path: Path, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise GenerationError(f"`{key}` must be a list of non-empty strings", file=path, pointer=where)
    return tuple(value)


def _extension_methods(raw: dict[str, Any], path: Path, where: str) -> tuple[ExtensionMethod, ...]:
    methods = []
    for j, entry in enumerate(raw.get("method", [])):
        at = f"{where}/method/{j}"
        gate = entry.get("gate")
        if gate is not None and gate not in (*EXTENSION_SIDES, UNGATED):
            raise GenerationError(f"`gate` must be one of {(*EXTENSION_SIDES, UNGATED)}", file=path, pointer=at)
        name_param = entry.get("name_param")
        if name_param is not None and not (isinstance(name_param, str) and name_param):
            raise GenerationError("`name_param` must be a non-empty string", file=path, pointer=at)
        methods.append(
            ExtensionMethod(
                method=_need(entry, "method", path, at),
                direction=_choice(entry, "direction", EXTENSION_DIRECTIONS, path, at),
                name_param=name_param,
                gate=gate,
            )
        )
    names = [m.method for m in methods]
    if len(set(names)) != len(names):
        raise GenerationError("a method is listed twice", file=path, pointer=where)
    return tuple(methods)


def _extensions(path: Path) -> tuple[ExtensionEntry, ...]:
    found: list[ExtensionEntry] = []
    for i, raw in enumerate(_read(path).get("extension", [])):
        where = f"/extension/{i}"
        ext_id = _need(raw, "id", path, where)
        if any(e.id == ext_id for e in found):
            raise GenerationError(f"extension {ext_id} is listed twice", file=path, pointer=where)
        since, until = _range(raw, path, where)
        settings = raw.get("settings")
        if settings is not None and not (isinstance(settings, str) and settings):
            raise GenerationError("`settings` must be a def name", file=path, pointer=where)
        augments = tuple(
            ExtensionAugment(
                method=_need(a, "method", path, f"{where}/augment/{j}"),
                result=_need(a, "result", path, f"{where}/augment/{j}"),
                reason=_need(a, "reason", path, f"{where}/augment/{j}"),
            )
            for j, a in enumerate(raw.get("augment", []))
        )
        found.append(
            ExtensionEntry(
                id=ext_id,
                gate=_choice(raw, "gate", EXTENSION_SIDES, path, where),
                since=since,
                until=until,
                settings=settings,
                methods=_extension_methods(raw, path, where),
                augments=augments,
                removes=_strings(raw, "removes", path, where),
                reason=str(raw.get("reason", "")),
            )
        )
    return tuple(found)
