"""Orchestrate generation: schema folder -> `generated/` tree, in parallel and cached.

For each version: load -> fix -> normalise -> IR -> models (datamodel-code-generator) and tables
(jinja2) -> black. Versions are built in separate processes. A manifest in the output tree
records, per version, a key made of the schema's sha256 and a fingerprint of the generator
(its code, templates, data files and the versions of datamodel-code-generator and black); when
the key and the files on disk still match, the version is not rebuilt.
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
from .fixes import FixReport, apply_fixes, load_rules
from .ir import Protocol, build_protocol
from .loader import SchemaDocument, check_version_string, load_schema, load_schema_file, parse_schema_bytes
from .normalize import normalize
from .overlay import load_overlay
from .versioning import module_name, sort_versions

if TYPE_CHECKING:
    import jinja2

CODEGEN_DIR = Path(__file__).parent
TEMPLATES = CODEGEN_DIR / "templates"
DATA_FILES = ("fixes.toml", "roles.toml", "gates.toml", "deprecations.toml", "results.toml")
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


@dataclass
class VersionOutcome:
    version: str
    status: str  # "generated" | "unchanged"
    fix_lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


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


def build_version(schema_dir: Path, version: str, data_dir: Path) -> VersionBuild:
    """Everything for one version, in memory (runs in a worker process)."""
    from .models import emit_models_and_names

    started = time.perf_counter()
    doc = load_schema(schema_dir, version)
    fixed, report = apply_fixes(doc, load_rules(data_dir / "fixes.toml"))
    norm = normalize(fixed)
    protocol = build_protocol(norm, load_overlay(data_dir))
    source = f"{version}/schema.json (sha256 {doc.sha256[:12]})"
    raw_models, defined = emit_models_and_names(norm)
    models = black_format(raw_models, f"{version} models")
    methods = black_format(render("methods.py.jinja2", p=protocol, source=source), f"{version} methods")
    init = black_format(render("version_init.py.jinja2", p=protocol), f"{version} __init__")
    return VersionBuild(
        version=version,
        era=protocol.era,
        sha256=doc.sha256,
        source=str(doc.file),
        files={"__init__.py": init, "models.py": models, "methods.py": methods},
        closure=[name for name in protocol.result_closure() if name in defined],
        defined=sorted(defined),
        fix_lines=_fix_lines(report),
        warnings=[*protocol.warnings, *norm.warnings],
        seconds=time.perf_counter() - started,
        errors={e.name: e.code for e in protocol.errors},
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
        return {"versions": {}}
    return data if isinstance(data, dict) and isinstance(data.get("versions"), dict) else {"versions": {}}


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


def generate(
    schema_dir: Path,
    out: Path,
    versions: list[str],
    data_dir: Path,
    *,
    prune: bool = False,
    force: bool = False,
    jobs: int | None = None,
    pins: dict[str, str] | None = None,
    repin_hint: str = "mcpgen sync --update-pins",
    progress: Callable[[str], None] | None = None,
) -> GenerateReport:
    """Generate `versions` from `schema_dir` into `out`.

    With `prune`, versions generated earlier but not listed now are removed (used when
    generating every pinned version). Unchanged versions are skipped unless `force`. `pins`
    (version -> sha256) refuses a schema file that differs from its pin, and a version it does
    not pin; `None` checks nothing. `progress` is called with a line as work starts and as each
    version is done.
    """
    say = progress or (lambda line: None)
    started = time.perf_counter()
    for v in versions:
        check_version_string(v)
    versions = sort_versions(list(dict.fromkeys(versions)))
    if not versions:
        raise GenerationError("no versions to generate")
    fingerprint = generator_fingerprint(data_dir)
    manifest = _read_manifest(out)
    entries: dict[str, Any] = dict(manifest["versions"])

    keys: dict[str, str] = {}
    todo: list[str] = []
    for v in versions:
        schema_path = schema_dir / v / "schema.json"
        if not schema_path.is_file():
            raise GenerationError(f"no schema for version {v} (expected {schema_path})", file=schema_path)
        raw = schema_path.read_bytes()
        if pins is not None:
            pinned = pins.get(v)
            if pinned is None:
                raise GenerationError(
                    f"version {v} is not pinned: pin it first with `{repin_hint.replace('{version}', v)}`; "
                    "--no-pin-check generates anyway",
                    file=schema_path,
                )
            if hashlib.sha256(raw).hexdigest() != pinned:
                raise GenerationError(
                    f"the schema file has sha256 {hashlib.sha256(raw).hexdigest()}, but it is pinned at {pinned}: "
                    f"it changed since `mcpgen sync`. Sync again, or review it and re-pin it as it is with "
                    f"`{repin_hint.replace('{version}', v)}`; --no-pin-check generates anyway",
                    file=schema_path,
                )
        keys[v] = hashlib.sha256(raw + fingerprint.encode()).hexdigest()
        if force or not _up_to_date(out, entries.get(v), keys[v]):
            parse_schema_bytes(raw, schema_path)  # refuse what is not a schema before any work starts
            todo.append(v)

    builds: dict[str, VersionBuild] = {}

    def done(b: VersionBuild) -> None:
        builds[b.version] = b
        say(f"{b.version}: generated in {b.seconds:.2f}s")
        for line in b.fix_lines:
            say("  " + line)
        for warning in b.warnings:
            say("  warning: " + warning)

    workers = 1 if len(todo) <= 1 or jobs == 1 else min(len(todo), jobs or os.cpu_count() or 1)
    if todo:
        say(f"generating {', '.join(todo)}" + (f" ({workers} processes)" if workers > 1 else ""))
    if workers == 1:
        for v in todo:
            done(build_version(schema_dir, v, data_dir))
    elif todo:
        # This process builds one version itself and workers build the others. It warms the
        # toolchain up first, so workers started by fork begin warm: the toolchain's start-up is
        # paid once, not once per process.
        _warm_up()
        first, rest = todo[0], todo[1:]
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(len(rest), workers - 1)) as pool:
            futures = [pool.submit(build_version, schema_dir, v, data_dir) for v in rest]
            done(build_version(schema_dir, first, data_dir))
            for fut in concurrent.futures.as_completed(futures):
                done(fut.result())

    outcomes = []
    for v in versions:
        if v in builds:
            b = builds[v]
            pkg = module_name(v)
            files = {f"{pkg}/{name}": text for name, text in b.files.items()}
            for rel, text in files.items():
                _write_if_changed(out / rel, text)
            entries[v] = {
                "key": keys[v],
                "era": b.era,
                "sha256": b.sha256,
                "module": pkg,
                "errors": b.errors,
                "files": {rel: _sha(text) for rel, text in files.items()},
                "closure": b.closure,
                "defined": b.defined,
                "report": {"fixes": b.fix_lines, "warnings": b.warnings},
            }
            outcomes.append(VersionOutcome(v, "generated", b.fix_lines, b.warnings, b.seconds))
        else:  # the report of the run that made these files still holds
            report = entries[v].get("report") or {}
            outcomes.append(
                VersionOutcome(v, "unchanged", list(report.get("fixes", [])), list(report.get("warnings", [])))
            )

    removed = []
    if prune:
        for v in sorted(set(entries) - set(versions)):
            shutil.rmtree(out / entries[v].get("module", module_name(v)), ignore_errors=True)
            del entries[v]
            removed.append(v)

    ordered = sort_versions(list(entries))
    listing = [
        {"version": v, "era": entries[v]["era"], "module": entries[v]["module"], "errors": entries[v].get("errors", {})}
        for v in ordered
    ]
    # the version-independent names: what some version's results carry, over every version defining it
    wanted = sorted({name for v in ordered for name in entries[v].get("closure", [])})
    names = [
        (name, [row for v, row in zip(ordered, listing, strict=True) if name in entries[v].get("defined", [])])
        for name in wanted
    ]
    shared_input = json.dumps([listing, names], sort_keys=True)
    shared_key = hashlib.sha256((fingerprint + shared_input).encode()).hexdigest()
    shared_entry = manifest.get("shared")
    shared_changed = False
    if force or not _up_to_date(out, shared_entry, shared_key):
        shared_changed = True
        shared = {
            "__init__.py": black_format(render("package_init.py.jinja2"), "package __init__"),
            "_base.py": black_format(render("base.py.jinja2"), "_base"),
            "_spec.py": black_format(render("spec.py.jinja2"), "_spec"),
            "versions.py": black_format(render("versions.py.jinja2", versions=listing), "versions"),
            "py.typed": "",  # PEP 561: the tree is typed (a wheel of it, or of a package holding it)
            "types.py": black_format(render("types.py.jinja2", versions=listing, names=names), "types"),
        }
        for rel, text in shared.items():
            _write_if_changed(out / rel, text)
        shared_entry = {"key": shared_key, "files": {rel: _sha(text) for rel, text in shared.items()}}
    new_manifest = {
        "generator": fingerprint,
        "shared": shared_entry,
        "versions": {v: entries[v] for v in ordered},
    }
    _write_if_changed(out / MANIFEST, json.dumps(new_manifest, indent=2, sort_keys=True) + "\n")
    return GenerateReport(out, outcomes, removed, time.perf_counter() - started, shared_changed)
