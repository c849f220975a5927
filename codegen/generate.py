"""Orchestrate generation: schema folder -> `generated/` tree, in parallel and cached.

For each version: load -> fix -> normalise -> IR -> models (datamodel-code-generator) and tables
(jinja2) -> black. For each pinned extension, on each of those versions it applies to: the same,
read against that version (`extension.py`): a package `ext_<name>/v<version>/` with the models
of its own defs (the defs it repeats alike are imported from the version's models) and its rows.
Versions and extensions are built in separate processes. A manifest in the output tree records,
per version and per extension on a version, a key made of the schemas' sha256 and a fingerprint
of the generator (its code, templates, data files and the versions of datamodel-code-generator
and black); when the key and the files on disk still match, the package is not rebuilt.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import GenerationError
from .extension import ExtensionProtocol, build_extension
from .fixes import FixReport, apply_fixes, load_rules
from .ir import Protocol, build_protocol
from .loader import (
    SchemaDocument,
    check_version_string,
    load_schema,
    load_schema_file,
    missing_schema,
    parse_schema_bytes,
)
from .normalize import Normalized, normalize
from .overlay import Overlay, load_overlay
from .project import DATA_FILES
from .sync import ExtensionPin, extension_file
from .versioning import module_name, sort_versions, version_key

if TYPE_CHECKING:
    import jinja2

CODEGEN_DIR = Path(__file__).parent
TEMPLATES = CODEGEN_DIR / "templates"
MANIFEST = "manifest.json"
LINE_LENGTH = 100


@dataclass
class VersionBuild:
    """The files of one version package and what happened while making them."""

    version: str
    era: str
    sha256: str
    source: str
    files: dict[str, str]
    closure: list[str]  # the defs a result can carry: the names of the version-independent `types`
    defined: list[str]  # every top-level name of `models.py`
    fix_lines: list[str]
    warnings: list[str]
    seconds: float
    errors: dict[str, int] = field(default_factory=dict)  # schema error def name -> JSON-RPC code
    unmatched_fixes: list[str] = field(default_factory=list)  # ids of the fix rules that matched nothing


@dataclass
class ExtensionBuild:
    """The files of one extension on one version and what happened while making them."""

    pin: ExtensionPin
    version: str
    sha256: str
    files: dict[str, str]
    fix_lines: list[str]
    report: list[str]  # reuse, removes, augments (`ExtensionProtocol.report_lines`)
    warnings: list[str]
    seconds: float
    unmatched_fixes: list[str] = field(default_factory=list)  # ids of the fix rules that matched nothing

    @property
    def label(self) -> str:
        return extension_label(self.pin, self.version)


def extension_label(pin: ExtensionPin, version: str) -> str:
    return f"{pin.id} ({pin.release}) on {version}"


def extension_module(pin: ExtensionPin) -> str:
    """The package of a pinned extension in a generated tree: `ext_<name>`."""
    return f"ext_{pin.name}"


@dataclass
class VersionOutcome:
    version: str
    status: str  # "generated" | "unchanged"
    fix_lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    unmatched_fixes: list[str] = field(default_factory=list)


@dataclass
class GenerateReport:
    out: Path
    outcomes: list[VersionOutcome]
    removed: list[str]
    seconds: float
    shared_changed: bool = False

    @property
    def changed(self) -> bool:
        """Did this run write or remove anything?"""
        return self.shared_changed or bool(self.removed) or any(o.status == "generated" for o in self.outcomes)

    def summary(self) -> str:
        made = [o.version for o in self.outcomes if o.status == "generated"]
        what = f"generated {', '.join(made)}" if made else "updated the shared files"
        return f"wrote {self.out}: {what} in {self.seconds:.2f}s"

    def lines(self) -> list[str]:
        out = []
        for o in self.outcomes:
            out.append(f"{o.version}: {o.status} ({o.seconds:.2f}s)")
            out.extend("  " + line for line in o.fix_lines)
            out.extend("  warning: " + w for w in o.warnings)
        out.extend(f"removed {v} (no longer requested)" for v in self.removed)
        out.append(f"wrote {self.out} in {self.seconds:.2f}s")
        return out


# -- fingerprint --------------------------------------------------------------------------


def generator_fingerprint(data_dir: Path) -> str:
    """Changes whenever anything that shapes the output changes (code, templates, data, tools)."""
    digest = hashlib.sha256()
    for path in sorted(CODEGEN_DIR.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".jinja2") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(CODEGEN_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    for name in DATA_FILES:
        path = data_dir / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<absent>")
    for dist in ("datamodel-code-generator", "black", "jinja2"):
        try:
            digest.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist}=?".encode())
    return digest.hexdigest()


# -- rendering ----------------------------------------------------------------------------


def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / "tables")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["pyrepr"] = repr
    return env


def black_mode() -> Any:
    import black

    return black.Mode(target_versions={black.TargetVersion.PY310}, line_length=LINE_LENGTH)  # type: ignore[attr-defined]


def black_format(source: str, where: str) -> str:
    """Format generated code with black in one pass.

    `black.format_str` formats twice when its first pass changed anything (a second pass for the
    rare case where trailing commas it added split a line differently); generated code is
    formatted once, which halves black's cost. That the single pass gives byte-identical output
    to `black.format_str` on every generated file is a test (tests/codegen/test_formatting.py).
    Like `format_str`, and unlike black's command line without `--fast`, it does not re-parse
    the output to compare syntax trees: the generated code is compiled by the tests anyway.
    """
    import black

    once = getattr(black, "_format_str_once", None) or black.format_str
    try:
        formatted: str = once(source, mode=black_mode())
    except black.InvalidInput as exc:  # type: ignore[attr-defined]  # a template or generator bug, not a schema problem
        raise GenerationError(f"generated code for {where} is not valid Python: {exc}") from exc
    return formatted


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def _own_models(method: str, name: str) -> str:
    """How a version's table names a model: from its own `models` module."""
    return f"m.{name}"


def build_version(schema_dir: Path, version: str, data_dir: Path) -> VersionBuild:
    """Everything for one version, in memory (runs in a worker process)."""
    from .models import emit_models_and_names
    from .modules import split_package

    started = time.perf_counter()
    doc = load_schema(schema_dir, version)
    fixed, report = apply_fixes(doc, load_rules(data_dir / "fixes.toml"))
    norm = normalize(fixed)
    protocol = build_protocol(norm, load_overlay(data_dir))
    source = f"{version}/schema.json (sha256 {doc.sha256[:12]})"
    raw_models, defined = emit_models_and_names(norm, protocol.message_defs())
    # a package whose classes are created on first use (modules.py)
    models = {
        f"models/{name}": black_format(text, f"{version} models/{name}")
        for name, text in split_package(raw_models).items()
    }
    methods = black_format(
        render("methods.py.jinja2", p=protocol, source=source, ref=_own_models), f"{version} methods"
    )
    init = black_format(render("version_init.py.jinja2", p=protocol), f"{version} __init__")
    return VersionBuild(
        version=version,
        era=protocol.era,
        sha256=doc.sha256,
        source=str(doc.file),
        files={"__init__.py": init, **models, "methods.py": methods},
        closure=[name for name in protocol.result_closure() if name in defined],
        defined=sorted(defined),
        fix_lines=_fix_lines(report),
        unmatched_fixes=[rule.id for rule in report.unmatched],
        warnings=[*protocol.warnings, *norm.warnings],
        seconds=time.perf_counter() - started,
        errors={e.name: e.code for e in protocol.errors},
    )


def _core_of(
    schema_dir: Path, version: str, data_dir: Path, overlay: Overlay, *, fixes: bool
) -> tuple[Normalized, Protocol]:
    doc = load_schema(schema_dir, version)
    if fixes:
        doc, _ = apply_fixes(doc, load_rules(data_dir / "fixes.toml"))
    norm = normalize(doc)
    return norm, build_protocol(norm, overlay)


@dataclass
class _ExtensionRead:
    """An extension schema file read on a core version: its IR, its normalised schema and fix
    report, and the core version's normalised schema and IR it was read against."""

    ext: ExtensionProtocol
    norm: Normalized
    report: FixReport | None
    core_norm: Normalized
    core: Protocol


def _extension_of(  # noqa: PLR0913 - the extension's file and pin, the core version, the data
    path: Path, pin: ExtensionPin, schema_dir: Path, version: str, data_dir: Path, *, fixes: bool
) -> _ExtensionRead:
    """The IR of an extension schema file read on core `version` of `schema_dir`."""
    overlay = load_overlay(data_dir)
    core_norm, core = _core_of(schema_dir, version, data_dir, overlay, fixes=fixes)
    doc = load_schema_file(path, version)
    report = None
    if fixes:
        doc, report = apply_fixes(doc, load_rules(data_dir / "fixes.toml"))
    norm = normalize(doc)
    ext = build_extension(
        norm, core_norm, core, overlay, ext_id=pin.id, release=pin.release, package=extension_module(pin)
    )
    return _ExtensionRead(ext, norm, report, core_norm, core)


def load_extension(  # noqa: PLR0913 - the extension, the core version, the folders
    schema_dir: Path,
    pin: ExtensionPin,
    version: str,
    data_dir: Path,
    *,
    path: Path | None = None,
    fixes: bool = True,
) -> ExtensionProtocol:
    """The IR of a pinned extension (or of the schema file `path`, read as that extension) on core
    `version`, without generating code: with the fix rules (`methods`) or without (`diff`)."""
    check_version_string(version)
    file = path or extension_file(schema_dir, pin)
    if not file.is_file():
        raise GenerationError(f"no schema for extension {pin.id} (expected {file}): run `mcpgen sync`", file=file)
    return _extension_of(file, pin, schema_dir, version, data_dir, fixes=fixes).ext


def extension_versions(pin: ExtensionPin, versions: list[str], data_dir: Path) -> list[str]:
    """Which of `versions` a pinned extension applies to (extensions.toml), oldest first."""
    entry = load_overlay(data_dir).extension(pin.id)
    if entry is None:
        raise GenerationError(
            f"extension {pin.id} is pinned but has no entry in {data_dir / 'extensions.toml'} "
            "(the core versions it applies to, who sends its methods)"
        )
    return [v for v in sort_versions(list(dict.fromkeys(versions))) if entry.applies_to(v)]


def _extension_ref(ext: ExtensionProtocol) -> Callable[[str, str], str]:
    def ref(method: str, name: str) -> str:
        return f"{ext.module_of(method, name)}.{name}"

    return ref


def build_extension_package(schema_dir: Path, pin: ExtensionPin, version: str, data_dir: Path) -> ExtensionBuild:
    """Everything for one extension on one version, in memory (runs in a worker process)."""
    from .models import HEADER, Reuse, emit_models_and_names, typed_dict_names

    started = time.perf_counter()
    path = extension_file(schema_dir, pin)
    read = _extension_of(path, pin, schema_dir, version, data_dir, fixes=True)
    ext, norm, report = read.ext, read.norm, read.report
    label = extension_label(pin, version)
    core_module = module_name(version)
    source = f"extensions/{pin.name}/{pin.release}/schema.json (sha256 {ext.sha256[:12]})"
    header = HEADER.format(
        version=f"{version} with the extension {pin.id} ({pin.release})",
        source=f"extensions/{pin.name}/{pin.release}/schema.json",
        base="...",  # the tree's root, from ext_<name>/v<version>/
    )
    reuse = None
    if ext.reused:
        # the reused defs are whatever the core version's module makes of them (models or TypedDicts)
        core_typed_dicts = typed_dict_names(read.core_norm, read.core.message_defs())
        reuse = Reuse(f"...{core_module}.models", ext.reused, core_typed_dicts & frozenset(ext.reused))
    raw_models, _ = emit_models_and_names(norm, ext.message_defs(), header=header, reuse=reuse)
    files = {
        "__init__.py": black_format(render("ext_version_init.py.jinja2", x=ext), f"{label} __init__"),
        "models.py": black_format(raw_models, f"{label} models"),
        "methods.py": black_format(
            render("ext_methods.py.jinja2", x=ext, source=source, core_module=core_module, ref=_extension_ref(ext)),
            f"{label} methods",
        ),
    }
    fix_lines = FixReport(pin.id, report.applications).lines() if report else []
    return ExtensionBuild(
        pin=pin,
        version=version,
        sha256=ext.sha256,
        files=files,
        fix_lines=fix_lines,
        report=ext.report_lines(),
        warnings=ext.warnings,
        seconds=time.perf_counter() - started,
        unmatched_fixes=[rule.id for rule in report.unmatched] if report else [],
    )


def _warm_up() -> None:
    """Run the toolchain once on a one-def schema (imports, datamodel-code-generator's first-call
    set-up, the model template, black's grammar)."""
    from .models import emit_models

    tiny = SchemaDocument(
        version="2000-01-01",
        file=Path("warm-up.json"),
        sha256="",
        draft="2020-12",
        defs={"Warm": {"type": "object", "properties": {"a": {"type": "string"}}}},
    )
    black_format(emit_models(normalize(tiny)), "warm-up")


def _fix_lines(report: FixReport) -> list[str]:
    return report.lines()


def load_protocol(schema_dir: Path, version: str, data_dir: Path, *, fixes: bool = True) -> Protocol:
    """The IR of one version, without generating code: with the fix rules applied (what the
    generated code does, for `methods`) or as upstream wrote it (`fixes=False`, for `diff`)."""
    return _protocol_of(load_schema(schema_dir, version), data_dir, fixes=fixes)


def load_protocol_file(path: Path, version: str, data_dir: Path, *, fixes: bool = True) -> Protocol:
    """Like `load_protocol`, for any schema file, read as protocol version `version`."""
    check_version_string(version)
    return _protocol_of(load_schema_file(path, version), data_dir, fixes=fixes)


def _protocol_of(doc: SchemaDocument, data_dir: Path, *, fixes: bool) -> Protocol:
    if fixes:
        doc, _ = apply_fixes(doc, load_rules(data_dir / "fixes.toml"))
    return build_protocol(normalize(doc), load_overlay(data_dir))


# -- writing ------------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _read_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"versions": {}, "extensions": {}}
    if not (isinstance(data, dict) and isinstance(data.get("versions"), dict)):
        return {"versions": {}, "extensions": {}}
    if not isinstance(data.get("extensions"), dict):
        data["extensions"] = {}
    return data


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _up_to_date(out: Path, entry: dict[str, Any] | None, key: str) -> bool:
    if not entry or entry.get("key") != key:
        return False
    for rel, digest in entry.get("files", {}).items():
        path = out / rel
        if not path.is_file() or _sha(path.read_text(encoding="utf-8")) != digest:
            return False
    return True


@dataclass(frozen=True)
class _Options:
    """How `generate` runs: its keyword arguments, see there."""

    prune: bool = False
    force: bool = False
    jobs: int | None = None
    pins: dict[str, str] | None = None
    repin_hint: str = "mcpgen sync --update-pins"
    verbose: bool = False


def generate(  # noqa: PLR0913 - public API: callers (CLI, build backend, tests) pass these by keyword
    schema_dir: Path,
    out: Path,
    versions: list[str],
    data_dir: Path,
    *,
    extensions: list[ExtensionPin] | None = None,
    prune: bool = False,
    force: bool = False,
    jobs: int | None = None,
    pins: dict[str, str] | None = None,
    repin_hint: str = "mcpgen sync --update-pins",
    progress: Callable[[str], None] | None = None,
    verbose: bool = False,
) -> GenerateReport:
    """Generate `versions` from `schema_dir` into `out`, and every pinned extension of
    `extensions` on each of those versions it applies to.

    With `prune`, versions (and extensions on versions) generated earlier but not asked for now
    are removed (used when generating every pinned version). Unchanged packages are skipped
    unless `force`. `pins` (version -> sha256) refuses a schema file that differs from its pin,
    and a version it does not pin, and then extension files are checked against their pins too;
    `None` checks nothing. `progress` is called with a line as work starts and as each package
    is done (with `verbose`, also with every fix rule's outcome). `repin_hint` may hold
    `{version}`, replaced by the version (or extension id) to re-pin, and `{which}`, replaced by
    `--version` (or `--extension`).

    Three stages: plan (which packages need building, refusing bad input before any work),
    build (in this process or in worker processes), write (packages, pruning, the shared files,
    the manifest).
    """
    say = progress or (lambda line: None)
    started = time.perf_counter()
    options = _Options(prune=prune, force=force, jobs=jobs, pins=pins, repin_hint=repin_hint, verbose=verbose)
    plan = _plan(schema_dir, out, versions, extensions or [], data_dir, options)
    builds = _build_all(schema_dir, data_dir, plan.todo, options, say)
    outcomes, entries = _write_versions(out, plan, builds)
    ext_outcomes, ext_entries = _write_extensions(out, plan, builds)
    removed = []
    if options.prune:
        removed = _prune(out, entries, keep=plan.versions) + _prune_extensions(out, ext_entries, keep=plan.extensions)
    shared_entry, shared_changed = _write_shared(out, plan, entries, ext_entries, force=options.force)
    _write_manifest(out, plan.fingerprint, shared_entry, entries, ext_entries)
    return GenerateReport(out, outcomes + ext_outcomes, removed, time.perf_counter() - started, shared_changed)


# -- plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """One package to build: a version, or an extension (`pin`) on a version."""

    version: str
    pin: ExtensionPin | None = None

    @property
    def label(self) -> str:
        return self.version if self.pin is None else extension_label(self.pin, self.version)


@dataclass(frozen=True)
class _Plan:
    """What a run does, decided before any build starts."""

    versions: list[str]  # the requested versions, once each, in version order
    extensions: list[tuple[ExtensionPin, str]]  # each pinned extension on each requested version it applies to
    fingerprint: str  # of the generator (see `generator_fingerprint`)
    manifest: dict[str, Any]  # as the output tree has it now
    keys: dict[_Job, str]  # package -> key of its schemas and the generator
    todo: list[_Job]  # the packages to build: changed since the manifest, or all with `force`


def _requested_versions(versions: list[str]) -> list[str]:
    for v in versions:
        check_version_string(v)
    ordered = sort_versions(list(dict.fromkeys(versions)))
    if not ordered:
        raise GenerationError("no versions to generate")
    return ordered


def _check_pin(raw: bytes, path: Path, label: str, pinned: str | None, options: _Options) -> None:
    """Refuse, with pins, a file that is not pinned or differs from its pin."""
    what = "version" if version_key(label) is not None else "extension"
    repin = options.repin_hint.replace("{which}", f"--{what}").replace("{version}", label)
    if pinned is None:
        raise GenerationError(
            f"{what} {label} is not pinned: pin it first with `{repin}`; --no-pin-check generates anyway",
            file=path,
        )
    actual = hashlib.sha256(raw).hexdigest()
    if actual != pinned:
        raise GenerationError(
            f"the schema file has sha256 {actual}, but it is pinned at {pinned}: "
            f"it changed since `mcpgen sync`. Sync again, or review it and re-pin it as it is with "
            f"`{repin}`; --no-pin-check generates anyway",
            file=path,
        )


def _pinned_schema_bytes(schema_path: Path, version: str, options: _Options) -> bytes:
    """The schema file's bytes, refusing a missing file and, with pins, one that is not pinned
    or differs from its pin."""
    if not schema_path.is_file():
        raise missing_schema(schema_path.parent.parent, version)
    raw = schema_path.read_bytes()
    if options.pins is not None:
        _check_pin(raw, schema_path, version, options.pins.get(version), options)
    return raw


def _pinned_extension_bytes(schema_dir: Path, pin: ExtensionPin, options: _Options) -> bytes:
    path = extension_file(schema_dir, pin)
    if not path.is_file():
        raise GenerationError(f"no schema for extension {pin.id} (expected {path}): run `mcpgen sync`", file=path)
    raw = path.read_bytes()
    if options.pins is not None:
        _check_pin(raw, path, pin.id, pin.sha256 or None, options)
    return raw


def _plan(  # noqa: PLR0913 - the folders, what to build, how
    schema_dir: Path,
    out: Path,
    versions: list[str],
    extensions: list[ExtensionPin],
    data_dir: Path,
    options: _Options,
) -> _Plan:
    """Key every requested package and list those whose files are missing, stale or forced.

    Everything that can refuse the input (version strings, missing or unpinned schema files, a
    file that is not a schema, an extension without data) is checked here, before any build."""
    requested = _requested_versions(versions)
    fingerprint = generator_fingerprint(data_dir)
    manifest = _read_manifest(out)
    keys: dict[_Job, str] = {}
    todo: list[_Job] = []
    core_raw: dict[str, bytes] = {}
    for v in requested:
        schema_path = schema_dir / v / "schema.json"
        raw = core_raw[v] = _pinned_schema_bytes(schema_path, v, options)
        job = _Job(v)
        keys[job] = hashlib.sha256(raw + fingerprint.encode()).hexdigest()
        if options.force or not _up_to_date(out, manifest["versions"].get(v), keys[job]):
            parse_schema_bytes(raw, schema_path)  # refuse what is not a schema before any work starts
            todo.append(job)
    planned: list[tuple[ExtensionPin, str]] = []
    for pin in sorted(extensions, key=lambda e: e.id):
        applies = extension_versions(pin, requested, data_dir)
        if not applies:
            continue
        raw = _pinned_extension_bytes(schema_dir, pin, options)
        for v in applies:
            planned.append((pin, v))
            job = _Job(v, pin)
            identity = f"{pin.id}\0{pin.name}\0{pin.release}\0".encode()
            keys[job] = hashlib.sha256(identity + raw + core_raw[v] + fingerprint.encode()).hexdigest()
            entry = manifest["extensions"].get(pin.id, {}).get("versions", {}).get(v)
            if options.force or not _up_to_date(out, entry, keys[job]):
                parse_schema_bytes(raw, extension_file(schema_dir, pin))
                todo.append(job)
    return _Plan(requested, planned, fingerprint, manifest, keys, todo)


# -- build --------------------------------------------------------------------------------

Build = VersionBuild | ExtensionBuild


def _worker_count(todo: int, jobs: int | None) -> int:
    return 1 if todo <= 1 or jobs == 1 else min(todo, jobs or os.cpu_count() or 1)


def _build(schema_dir: Path, data_dir: Path, job: _Job) -> Build:
    if job.pin is None:
        return build_version(schema_dir, job.version, data_dir)
    return build_extension_package(schema_dir, job.pin, job.version, data_dir)


def _build_all(
    schema_dir: Path, data_dir: Path, todo: list[_Job], options: _Options, say: Callable[[str], None]
) -> dict[_Job, Build]:
    """Build the `todo` packages, in this process or (several, `jobs` not 1) also in worker
    processes; says each one as it is done."""
    builds: dict[_Job, Build] = {}
    if not todo:
        return builds

    def done(job: _Job, b: Build) -> None:
        builds[job] = b
        _announce(job, b, say, options.verbose)

    workers = _worker_count(len(todo), options.jobs)
    say(f"generating {', '.join(j.label for j in todo)}" + (f" ({workers} processes)" if workers > 1 else ""))
    if workers == 1:
        for job in todo:
            done(job, _build(schema_dir, data_dir, job))
    else:
        _build_in_pool(schema_dir, data_dir, todo, workers, done)
    return builds


def _build_in_pool(
    schema_dir: Path, data_dir: Path, todo: list[_Job], workers: int, done: Callable[[_Job, Build], None]
) -> None:
    # This process builds one package itself and workers build the others. It warms the
    # toolchain up first, so workers started by fork begin warm: the toolchain's start-up is
    # paid once, not once per process.
    _warm_up()
    first, rest = todo[0], todo[1:]
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(len(rest), workers - 1)) as pool:
        futures = {pool.submit(_build, schema_dir, data_dir, job): job for job in rest}
        done(first, _build(schema_dir, data_dir, first))
        for fut in concurrent.futures.as_completed(futures):
            done(futures[fut], fut.result())


def _announce(job: _Job, b: Build, say: Callable[[str], None], verbose: bool) -> None:
    applied = len(b.fix_lines) - len(b.unmatched_fixes)
    say(f"{job.label}: generated in {b.seconds:.2f}s" + (f" ({applied} schema fixes applied)" if applied else ""))
    for line in b.fix_lines if verbose else []:
        say("  " + line)
    if isinstance(b, ExtensionBuild):
        for line in b.report:
            say("  " + line)
    for warning in b.warnings:
        say("  warning: " + warning)


# -- write --------------------------------------------------------------------------------


def _write_versions(out: Path, plan: _Plan, builds: dict[_Job, Build]) -> tuple[list[VersionOutcome], dict[str, Any]]:
    """Write each built version's package; the outcome of every requested version, and the
    manifest's version entries updated for the built ones."""
    entries: dict[str, Any] = dict(plan.manifest["versions"])
    outcomes = []
    for v in plan.versions:
        b = builds.get(_Job(v))
        if b is None:  # the report of the run that made these files still holds
            report = entries[v].get("report") or {}
            fixes, warnings = list(report.get("fixes", [])), list(report.get("warnings", []))
            outcomes.append(VersionOutcome(v, "unchanged", fixes, warnings))
        else:
            assert isinstance(b, VersionBuild)
            before = entries.get(v)
            entries[v] = _write_version(out, b, plan.keys[_Job(v)])
            _remove_stale(out, before, entries[v])
            outcomes.append(VersionOutcome(v, "generated", b.fix_lines, b.warnings, b.seconds, b.unmatched_fixes))
    return outcomes, entries


def _write_version(out: Path, b: VersionBuild, key: str) -> dict[str, Any]:
    """Write one version's package; its manifest entry."""
    pkg = module_name(b.version)
    files = {f"{pkg}/{name}": text for name, text in b.files.items()}
    for rel, text in files.items():
        _write_if_changed(out / rel, text)
    return {
        "key": key,
        "era": b.era,
        "sha256": b.sha256,
        "module": pkg,
        "errors": b.errors,
        "files": {rel: _sha(text) for rel, text in files.items()},
        "closure": b.closure,
        "defined": b.defined,
        "report": {"fixes": b.fix_lines, "warnings": b.warnings},
    }


def _remove_stale(out: Path, before: dict[str, Any] | None, after: dict[str, Any]) -> None:
    """Remove the files an earlier run wrote for a package that this run did not (a `models.py`
    the `models/` package replaced, the submodule of a definition gone from the schema)."""
    for rel in sorted(set((before or {}).get("files", {})) - set(after["files"])):
        (out / rel).unlink(missing_ok=True)


def _write_extensions(out: Path, plan: _Plan, builds: dict[_Job, Build]) -> tuple[list[VersionOutcome], dict[str, Any]]:
    """Like `_write_versions`, for every extension on every version it applies to; the manifest's
    extension entries: id -> the extension's pin facts and `versions` (version -> entry)."""
    entries: dict[str, Any] = {
        k: {**v, "versions": dict(v.get("versions", {}))} for k, v in plan.manifest["extensions"].items()
    }
    outcomes = []
    for pin, v in plan.extensions:
        job = _Job(v, pin)
        ext = entries.setdefault(pin.id, {"versions": {}})
        ext.update({"name": pin.name, "release": pin.release, "module": extension_module(pin)})
        b = builds.get(job)
        if b is None:
            report = ext["versions"][v].get("report") or {}
            lines = [*report.get("fixes", []), *report.get("extension", [])]
            outcomes.append(VersionOutcome(job.label, "unchanged", lines, list(report.get("warnings", []))))
            continue
        assert isinstance(b, ExtensionBuild)
        pkg = f"{extension_module(pin)}/{module_name(v)}"
        files = {f"{pkg}/{name}": text for name, text in b.files.items()}
        for rel, text in files.items():
            _write_if_changed(out / rel, text)
        ext["sha256"] = b.sha256
        ext["versions"][v] = {
            "key": plan.keys[job],
            "module": module_name(v),
            "files": {rel: _sha(text) for rel, text in files.items()},
            "report": {"fixes": b.fix_lines, "extension": b.report, "warnings": b.warnings},
        }
        outcomes.append(
            VersionOutcome(job.label, "generated", [*b.fix_lines, *b.report], b.warnings, b.seconds, b.unmatched_fixes)
        )
    return outcomes, entries


def _prune(out: Path, entries: dict[str, Any], *, keep: list[str]) -> list[str]:
    """Remove the packages (and manifest entries) of versions generated earlier but not kept."""
    removed = []
    for v in sorted(set(entries) - set(keep)):
        shutil.rmtree(out / entries[v].get("module", module_name(v)), ignore_errors=True)
        del entries[v]
        removed.append(v)
    return removed


def _prune_extensions(out: Path, entries: dict[str, Any], *, keep: list[tuple[ExtensionPin, str]]) -> list[str]:
    """Remove the packages (and manifest entries) of extensions on versions generated earlier but
    not kept; an extension left on no version goes as a whole."""
    wanted = {(pin.id, v) for pin, v in keep}
    removed = []
    for ext_id in sorted(entries):
        ext = entries[ext_id]
        module = ext.get("module", "")
        for v in sorted(ext["versions"]):
            if (ext_id, v) not in wanted:
                if module:
                    shutil.rmtree(out / module / ext["versions"][v].get("module", module_name(v)), ignore_errors=True)
                del ext["versions"][v]
                removed.append(f"{ext_id} on {v}")
        if not ext["versions"]:
            if module:
                shutil.rmtree(out / module, ignore_errors=True)
            del entries[ext_id]
    return removed


def _shared_inputs(entries: dict[str, Any]) -> tuple[list[dict[str, Any]], list[tuple[str, list[dict[str, Any]]]]]:
    """What the shared files are made from: the version listing, and each version-independent
    name (what some version's results carry) with the listing rows of every version defining it."""
    ordered = sort_versions(list(entries))
    listing = [
        {"version": v, "era": entries[v]["era"], "module": entries[v]["module"], "errors": entries[v].get("errors", {})}
        for v in ordered
    ]
    wanted = sorted({name for v in ordered for name in entries[v].get("closure", [])})
    names = [
        (name, [row for v, row in zip(ordered, listing, strict=True) if name in entries[v].get("defined", [])])
        for name in wanted
    ]
    return listing, names


def _extension_listing(entries: dict[str, Any], versions: dict[str, Any]) -> list[dict[str, Any]]:
    """Each extension (by id) with the versions of the tree it was generated on, oldest first."""
    listing = []
    for ext_id in sorted(entries):
        ext = entries[ext_id]
        on = [v for v in sort_versions(list(ext["versions"])) if v in versions]
        if on:
            listing.append(
                {
                    "id": ext_id,
                    "release": ext["release"],
                    "module": ext["module"],
                    "versions": [{"version": v, "module": ext["versions"][v]["module"]} for v in on],
                }
            )
    return listing


def _write_shared(
    out: Path, plan: _Plan, entries: dict[str, Any], ext_entries: dict[str, Any], *, force: bool
) -> tuple[dict[str, Any] | None, bool]:
    """Write the files shared by every version (and each extension's package `__init__`) when
    their inputs changed (or `force`); their manifest entry, and whether they were written."""
    listing, names = _shared_inputs(entries)
    extensions = _extension_listing(ext_entries, entries)
    shared_input = json.dumps([listing, names, extensions], sort_keys=True)
    shared_key = hashlib.sha256((plan.fingerprint + shared_input).encode()).hexdigest()
    previous: dict[str, Any] | None = plan.manifest.get("shared")
    if not force and _up_to_date(out, previous, shared_key):
        return previous, False
    shared = {
        "__init__.py": black_format(render("package_init.py.jinja2"), "package __init__"),
        "_base.py": black_format(render("base.py.jinja2"), "_base"),
        "_spec.py": black_format(render("spec.py.jinja2"), "_spec"),
        "versions.py": black_format(render("versions.py.jinja2", versions=listing, extensions=extensions), "versions"),
        "py.typed": "",  # PEP 561: the tree is typed (a wheel of it, or of a package holding it)
        "types.py": black_format(render("types.py.jinja2", versions=listing, names=names), "types"),
    }
    for e in extensions:
        shared[f"{e['module']}/__init__.py"] = black_format(render("ext_init.py.jinja2", e=e), f"{e['id']} __init__")
    for rel, text in shared.items():
        _write_if_changed(out / rel, text)
    return {"key": shared_key, "files": {rel: _sha(text) for rel, text in shared.items()}}, True


def _write_manifest(
    out: Path,
    fingerprint: str,
    shared_entry: dict[str, Any] | None,
    entries: dict[str, Any],
    ext_entries: dict[str, Any],
) -> None:
    manifest = {
        "generator": fingerprint,
        "shared": shared_entry,
        "versions": {v: entries[v] for v in sort_versions(list(entries))},
        "extensions": {k: ext_entries[k] for k in sorted(ext_entries)},
    }
    _write_if_changed(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
