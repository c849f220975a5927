"""Pins (`schema/versions.toml`) and `mcpgen sync`: copy pinned schema files in, checked by sha256.

Without a source, each pin is fetched from its own repository at its own commit
(`<raw base>/<owner>/<repo>/<commit>/<path>`, the layout of raw.githubusercontent.com). A source
is a folder or a base URL laid out as `<source>/<version>/schema.json` (the spec repository's
`schema/` folder has this layout). A file whose sha256 differs from its pin is refused (and kept
beside the pinned copy as `schema.json.new` for review); `--update-pins` records the new hash
once the change has been reviewed, and refuses a file that is not a protocol schema. From a
folder, the version's `examples/` folder (real messages, one folder per def) is copied too.

Extensions are pinned the same way (`[[extension]]`: `id`, `name`, `release`, and repo, commit,
path, sha256) and synced to `<schema folder>/extensions/<name>/<release>/schema.json`. Their
source is an extension source laid out as `<ext source>/<name>/<release>/schema.json` (the
extension repositories' `schema/` folders have this layout, one per extension), else the
`extensions/` folder of the schema source (so a synced schema folder is itself a source of
both), else each pin's repository. An extension pin without a sha256 is pinned by `--update-pins`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import _toml as tomllib
from .errors import GenerationError, PinError
from .loader import check_version_string, parse_schema_bytes
from .versioning import sort_versions, version_key

PINS_FILE = "versions.toml"
FETCH_TIMEOUT = 60.0
RAW_BASE = "https://raw.githubusercontent.com"
"""Where `<owner>/<repo>/<commit>/<path>` of a GitHub repository is served as raw files."""


@dataclass(frozen=True)
class Pin:
    version: str
    sha256: str
    repo: str = ""
    commit: str = ""
    path: str = ""


EXTENSIONS_DIR = "extensions"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RELEASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ExtensionPin:
    """A pinned extension schema: its identifier, the short `name` its folder and Python package
    use, the upstream `release` folder it comes from, and where that file is upstream."""

    id: str
    name: str
    release: str
    sha256: str  # empty: not pinned yet (`sync --update-pins` pins it)
    repo: str = ""
    commit: str = ""
    path: str = ""

    @property
    def version(self) -> str:  # what errors and hints name it by
        return self.id


def extension_file(schema_root: Path, pin: ExtensionPin) -> Path:
    """Where a synced extension schema lives: `<schema folder>/extensions/<name>/<release>/schema.json`."""
    return schema_root / EXTENSIONS_DIR / pin.name / pin.release / "schema.json"


@dataclass(frozen=True)
class SyncResult:
    version: str  # the version, or the extension's id
    sha256: str
    status: str  # "copied" | "unchanged" | "pinned"
    examples: int
    target: Path | None = None


def _pin_data(schema_root: Path) -> tuple[Path, dict[str, Any]]:
    path = schema_root / PINS_FILE
    if not path.is_file():
        raise PinError(f"no pin file at {path}; create it or pass --schema-dir to a folder with one")
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PinError(f"{path}: {exc}") from exc


def read_extension_pins(schema_root: Path) -> list[ExtensionPin]:
    """The `[[extension]]` pins of `versions.toml`, in id order."""
    path, data = _pin_data(schema_root)
    pins: dict[str, ExtensionPin] = {}
    for i, raw in enumerate(data.get("extension", [])):
        values = {key: raw.get(key, "") for key in ("id", "name", "release", "sha256", "repo", "commit", "path")}
        if not all(isinstance(v, str) for v in values.values()):
            raise PinError(f"{path}: extension entry {i}: every value is a string")
        pin = ExtensionPin(**{**values, "sha256": values["sha256"].lower()})
        if not pin.id:
            raise PinError(f"{path}: extension entry {i} needs an `id` (its key under `extensions` in capabilities)")
        if not _NAME.match(pin.name):
            raise PinError(
                f"{path}: extension {pin.id}: `name` {pin.name!r} is not a lower-case Python name "
                "(it names the extension's folder and package)"
            )
        if not _RELEASE.match(pin.release):
            raise PinError(
                f"{path}: extension {pin.id}: `release` {pin.release!r} is not one path segment "
                "(the upstream folder its schema is in)"
            )
        if pin.id in pins or any(p.name == pin.name for p in pins.values()):
            raise PinError(f"{path}: extension {pin.id} (name {pin.name}) is pinned twice")
        pins[pin.id] = pin
    return [pins[k] for k in sorted(pins)]


def read_pins(schema_root: Path) -> list[Pin]:
    path, data = _pin_data(schema_root)
    pins = []
    for i, raw in enumerate(data.get("version", [])):
        try:
            pin = Pin(
                version=str(raw["version"]),
                sha256=str(raw["sha256"]).lower(),
                repo=str(raw.get("repo", "")),
                commit=str(raw.get("commit", "")),
                path=str(raw.get("path", "")),
            )
            check_version_string(pin.version)
        except (KeyError, ValueError) as exc:
            raise PinError(f"{path}: entry {i} needs `version` (YYYY-MM-DD) and `sha256`: {exc}") from exc
        pins.append(pin)
    order = sort_versions([p.version for p in pins])
    by_version = {p.version: p for p in pins}
    if len(by_version) != len(pins):
        raise PinError(f"{path}: a version is pinned twice")
    return [by_version[v] for v in order]


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string for our ASCII values


def write_pins(schema_root: Path, pins: list[Pin], extensions: list[ExtensionPin] | None = None) -> None:
    """Write `versions.toml`: the version pins, then the extension pins (`None`: keep the ones
    the file has now)."""
    if extensions is None:
        extensions = read_extension_pins(schema_root) if (schema_root / PINS_FILE).is_file() else []
    lines = [
        "# Pinned MCP schema versions: where each file comes from upstream and its sha256.",
        "# `mcpgen sync` refuses a file whose hash differs; `mcpgen sync --update-pins` re-pins",
        "# after you have reviewed the change (`mcpgen diff OLD NEW`).",
    ]
    by_version = {p.version: p for p in pins}
    for version in sort_versions(list(by_version)):
        pin = by_version[version]
        lines += [
            "",
            "[[version]]",
            f"version = {_toml_string(pin.version)}",
            f"repo = {_toml_string(pin.repo)}",
            f"commit = {_toml_string(pin.commit)}",
            f"path = {_toml_string(pin.path)}",
            f"sha256 = {_toml_string(pin.sha256)}",
        ]
    if extensions:
        lines += [
            "",
            "# Pinned extension schemas: synced to extensions/<name>/<release>/schema.json; what their",
            "# schemas cannot say (the core versions they apply to, ...) is in extensions.toml.",
        ]
    for ext in sorted(extensions, key=lambda e: e.id):
        lines += [
            "",
            "[[extension]]",
            f"id = {_toml_string(ext.id)}",
            f"name = {_toml_string(ext.name)}",
            f"release = {_toml_string(ext.release)}",
            f"repo = {_toml_string(ext.repo)}",
            f"commit = {_toml_string(ext.commit)}",
            f"path = {_toml_string(ext.path)}",
            f"sha256 = {_toml_string(ext.sha256)}",
        ]
    target = schema_root / PINS_FILE
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, target)


NO_NETWORK = (
    "Without network access, sync from a copy: pass --from SOURCE or set MCPGEN_SCHEMA_SOURCE "
    "(a folder or base URL laid out as SOURCE/<version>/schema.json)"
)


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "file://"))


def _fetch_url(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise PinError(f"cannot fetch {url}: {exc}") from exc


def fetch_schema(source: str, version: str) -> bytes:
    """The bytes of `<source>/<version>/schema.json` from a folder or a base URL."""
    if is_url(source):
        return _fetch_url(source.rstrip("/") + f"/{version}/schema.json")
    path = Path(source) / version / "schema.json"
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PinError(f"cannot read {path}: {exc.strerror or exc}") from exc


def fetch_extension(source: str, pin: ExtensionPin) -> bytes:
    """The bytes of `<source>/<name>/<release>/schema.json` from a folder or a base URL."""
    rel = f"{pin.name}/{pin.release}/schema.json"
    if is_url(source):
        return _fetch_url(source.rstrip("/") + "/" + rel)
    path = Path(source) / rel
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PinError(f"cannot read {path}: {exc.strerror or exc}") from exc


def extension_source(source: str | None, ext_source: str | None) -> str | None:
    """Where extensions come from: the extension source, else the schema source's `extensions/`."""
    if ext_source:
        return ext_source
    if source:
        return source.rstrip("/") + "/" + EXTENSIONS_DIR if is_url(source) else str(Path(source) / EXTENSIONS_DIR)
    return None


def pin_url(pin: Pin | ExtensionPin, raw_base: str = RAW_BASE) -> str:
    """Where the pinned file is served: `<raw base>/<owner>/<repo>/<commit>/<path>`."""
    missing = [name for name in ("repo", "commit", "path") if not getattr(pin, name)]
    if missing:
        raise PinError(
            f"the pin of {pin.version} has no {', '.join(missing)}, so it cannot be fetched by itself; "
            "add them to versions.toml or pass --from SOURCE"
        )
    repo = pin.repo.strip("/")
    for prefix in ("https://", "http://"):
        repo = repo.removeprefix(prefix)
    host, _, owner_repo = repo.partition("/")
    if host != "github.com" or owner_repo.count("/") != 1:
        raise PinError(
            f"the pin of {pin.version} names repo {pin.repo!r}; only github.com/<owner>/<repo> can be "
            "fetched by pin: pass --from SOURCE"
        )
    owner_repo = owner_repo.removesuffix(".git")
    return f"{raw_base.rstrip('/')}/{owner_repo}/{pin.commit}/{pin.path.lstrip('/')}"


def check_schema(data: bytes, where: str) -> None:
    """Refuse (as a `PinError`) bytes that are not a protocol schema: never pin those."""
    try:
        parse_schema_bytes(data, where)
    except GenerationError as exc:
        raise PinError(f"{exc}; not pinned") from None


def _default_hint(source: str | None, version: str) -> str:
    which = f"--version {version}" if version_key(version) is not None else f"--extension {version}"
    return "mcpgen sync" + (f" --from {source}" if source else "") + f" {which} --update-pins"


def sync(  # noqa: PLR0913 - public API: callers (CLI, build backend) pass these by keyword
    source: str | None,
    schema_root: Path,
    versions: list[str] | None = None,
    *,
    extensions: list[str] | None = None,
    ext_source: str | None = None,
    update_pins: bool = False,
    raw_base: str = RAW_BASE,
    repin_hint: Callable[[str], str] | None = None,
    diff_hint: Callable[[Path, Path], str] | None = None,
) -> list[SyncResult]:
    """Copy the pinned (or the named) versions into `schema_root/<version>/` and the pinned (or the
    named) extensions into `schema_root/extensions/<name>/<release>/`: from `source` (extensions
    from `ext_source`, else `source`'s `extensions/`), or with no source, each from its pin's
    repository and commit (served under `raw_base`). With neither `versions` nor `extensions`,
    everything pinned; naming only one kind syncs only that kind.

    `repin_hint(version or extension id)` and `diff_hint(pinned, new)` give the commands printed in
    errors (the CLI passes commands that repeat the options it was called with)."""
    for version in versions or []:
        try:
            check_version_string(version)
        except GenerationError as exc:
            raise PinError(exc.message) from None
    pins = {p.version: p for p in read_pins(schema_root)}
    ext_pins = {p.id: p for p in read_extension_pins(schema_root)}
    everything = versions is None and extensions is None
    wanted = sort_versions(list(dict.fromkeys(versions))) if versions else list(pins) if everything else []
    wanted_ext = list(dict.fromkeys(extensions)) if extensions else list(ext_pins) if everything else []
    if not wanted and not wanted_ext:
        raise PinError(f"{schema_root / PINS_FILE} pins no versions")
    for ext_id in wanted_ext:
        if ext_id not in ext_pins:
            raise PinError(
                f"extension {ext_id} is not pinned in {schema_root / PINS_FILE}: add an [[extension]] entry "
                "with its id, name, release (and repo, commit, path), then pin it with --update-pins"
            )
    job = _SyncJob(
        source=source,
        ext_source=extension_source(source, ext_source),
        ext_source_given=bool(ext_source),
        schema_root=schema_root,
        update_pins=update_pins,
        raw_base=raw_base,
        repin_hint=repin_hint or (lambda version: _default_hint(source, version)),
        diff_hint=diff_hint,
    )
    results = []
    changed_pins = dict(pins)
    for version in wanted:
        result, new_pin = _sync_version(job, version, pins.get(version))
        results.append(result)
        if new_pin is not None:
            changed_pins[version] = new_pin
    changed_ext = dict(ext_pins)
    for ext_id in wanted_ext:
        result, new_ext = _sync_extension(job, ext_pins[ext_id])
        results.append(result)
        if new_ext is not None:
            changed_ext[ext_id] = new_ext
    if changed_pins != pins or changed_ext != ext_pins:
        write_pins(schema_root, list(changed_pins.values()), list(changed_ext.values()))
    return results


@dataclass(frozen=True)
class _SyncJob:
    """One `sync` call's settings (see there)."""

    source: str | None
    ext_source: str | None
    ext_source_given: bool  # named by the caller, not the schema source's extensions/ folder
    schema_root: Path
    update_pins: bool
    raw_base: str
    repin_hint: Callable[[str], str]
    diff_hint: Callable[[Path, Path], str] | None

    @property
    def pins_file(self) -> Path:
        return self.schema_root / PINS_FILE


@dataclass(frozen=True)
class _Fetched:
    """A schema file as the source (or the pin's repository) serves it now."""

    version: str  # the version, or the extension's id
    data: bytes
    origin: str  # the source or URL it came from, as errors name it
    sha256: str


def _sync_version(job: _SyncJob, version: str, pin: Pin | None) -> tuple[SyncResult, Pin | None]:
    """Fetch one version, check it against its pin and copy it in; its result, and its new pin
    when it was pinned or re-pinned (`update_pins`)."""
    check_version_string(version)
    fetched = _fetch(job, version, pin)
    target = job.schema_root / version / "schema.json"
    if not job.update_pins:
        _refuse_unreviewed(job, fetched, pin.sha256 if pin else None, target)
    new_pin = None
    if pin is None or pin.sha256 != fetched.sha256:
        check_schema(fetched.data, fetched.origin)
        base = pin or Pin(version=version, sha256=fetched.sha256, path=f"schema/{version}/schema.json")
        new_pin = replace(base, sha256=fetched.sha256)
    status = _copy_in(fetched, target, pinned=new_pin is not None)
    return SyncResult(version, fetched.sha256, status, _copy_examples(job, version), target), new_pin


def _sync_extension(job: _SyncJob, pin: ExtensionPin) -> tuple[SyncResult, ExtensionPin | None]:
    """Like `_sync_version`, for an extension pin (one without a sha256 is pinned by `update_pins`)."""
    if job.ext_source is not None:
        try:
            data, origin = fetch_extension(job.ext_source, pin), job.ext_source
        except PinError as exc:
            if job.ext_source_given:
                raise
            raise PinError(
                f"{exc} (extensions come from the schema source's {EXTENSIONS_DIR}/ folder unless --ext-from "
                "or $MCPGEN_EXT_SOURCE names a source laid out as <name>/<release>/schema.json)"
            ) from None
    else:
        origin = pin_url(pin, job.raw_base)
        data = _fetch_url(origin)
    fetched = _Fetched(pin.id, data, origin, hashlib.sha256(data).hexdigest())
    target = extension_file(job.schema_root, pin)
    if not job.update_pins:
        _refuse_unreviewed(job, fetched, pin.sha256 or None, target)
    new_pin = None
    if pin.sha256 != fetched.sha256:
        check_schema(fetched.data, fetched.origin)
        new_pin = replace(pin, sha256=fetched.sha256)
    status = _copy_in(fetched, target, pinned=new_pin is not None)
    return SyncResult(pin.id, fetched.sha256, status, 0, target), new_pin


def _copy_in(fetched: _Fetched, target: Path, *, pinned: bool) -> str:
    """Write the fetched file to `target` (unless it is there already); its status."""
    if not pinned and target.is_file() and target.read_bytes() == fetched.data:
        status = "unchanged"
    else:
        _write_bytes_atomically(target, fetched.data)
        status = "pinned" if pinned else "copied"
    target.with_name("schema.json.new").unlink(missing_ok=True)
    return status


def _fetch(job: _SyncJob, version: str, pin: Pin | None) -> _Fetched:
    """The version's file from the source, else from its pin's repository and commit."""
    if job.source is not None:
        data, origin = fetch_schema(job.source, version), job.source
    elif pin is not None:
        origin = pin_url(pin, job.raw_base)
        try:
            data = _fetch_url(origin)
        except PinError as exc:
            raise PinError(f"{exc}. {NO_NETWORK}") from None
    else:
        raise PinError(
            f"version {version} is not pinned in {job.pins_file}, so there is no repository and "
            "commit to fetch it from: pass --from SOURCE"
        )
    return _Fetched(version, data, origin, hashlib.sha256(data).hexdigest())


def _refuse_unreviewed(job: _SyncJob, fetched: _Fetched, pinned: str | None, target: Path) -> None:
    """Refuse a file that is not pinned, or that differs from its pin (keeping the new file beside
    the pinned copy for review): pinning it takes `update_pins`."""
    version = fetched.version
    dated = version_key(version) is not None
    if pinned is None:
        raise PinError(
            f"{'version' if dated else 'extension'} {version} is not pinned in {job.pins_file}. "
            f"To pin it at the file {fetched.origin} "
            f"serves now (sha256 {fetched.sha256}), run `{job.repin_hint(version)}`"
        )
    if pinned != fetched.sha256:
        review = _keep_for_review(job, fetched, target)
        raise PinError(
            f"{'schema' if dated else 'extension'} {version} from {fetched.origin} has sha256 {fetched.sha256}, "
            f"but {job.pins_file} pins "
            f"{pinned}: the upstream file changed (or the source is not the pinned one).{review} "
            f"Once reviewed, re-pin with `{job.repin_hint(version)}` (and record the new commit in the pin)"
        )


def _keep_for_review(job: _SyncJob, fetched: _Fetched, target: Path) -> str:
    """Keep a refused file as `schema.json.new` beside the pinned copy; the sentence saying so."""
    if not target.is_file():
        return ""
    fresh = target.with_name("schema.json.new")
    fresh.write_bytes(fetched.data)
    if job.diff_hint is None:
        return ""
    return f" It is kept as {fresh}; review it with `{job.diff_hint(target, fresh)}`."


def _write_bytes_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def _copy_examples(job: _SyncJob, version: str) -> int:
    """Copy the version's `examples/` folder from a source folder (not a URL, not the schema
    folder itself); how many example files it holds."""
    source = job.source
    if source is None or is_url(source) or Path(source).resolve() == job.schema_root.resolve():
        return 0
    src_examples = Path(source) / version / "examples"
    if not src_examples.is_dir():
        return 0
    dst_examples = job.schema_root / version / "examples"
    if dst_examples.exists():
        shutil.rmtree(dst_examples)
    shutil.copytree(src_examples, dst_examples)
    return sum(1 for _ in dst_examples.rglob("*.json"))
