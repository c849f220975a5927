"""Pins (`schema/versions.toml`) and `mcpgen sync`: copy pinned schema files in, checked by sha256.

Without a source, each pin is fetched from its own repository at its own commit
(`<raw base>/<owner>/<repo>/<commit>/<path>`, the layout of raw.githubusercontent.com). A source
is a folder or a base URL laid out as `<source>/<version>/schema.json` (the spec repository's
`schema/` folder has this layout). A file whose sha256 differs from its pin is refused (and kept
beside the pinned copy as `schema.json.new` for review); `--update-pins` records the new hash
once the change has been reviewed, and refuses a file that is not a protocol schema. From a
folder, the version's `examples/` folder (real messages, one folder per def) is copied too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from . import _toml as tomllib
from .errors import GenerationError, PinError
from .loader import check_version_string, parse_schema_bytes
from .versioning import sort_versions

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


@dataclass(frozen=True)
class SyncResult:
    version: str
    sha256: str
    status: str  # "copied" | "unchanged" | "pinned"
    examples: int


def read_pins(schema_root: Path) -> list[Pin]:
    path = schema_root / PINS_FILE
    if not path.is_file():
        raise PinError(f"no pin file at {path}; create it or pass --schema-dir to a folder with one")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PinError(f"{path}: {exc}") from exc
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


def write_pins(schema_root: Path, pins: list[Pin]) -> None:
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
    target = schema_root / PINS_FILE
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, target)


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


def pin_url(pin: Pin, raw_base: str = RAW_BASE) -> str:
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
    return "mcpgen sync" + (f" --from {source}" if source else "") + f" --version {version} --update-pins"


def sync(
    source: str | None,
    schema_root: Path,
    versions: list[str] | None = None,
    *,
    update_pins: bool = False,
    raw_base: str = RAW_BASE,
    repin_hint: Callable[[str], str] | None = None,
    diff_hint: Callable[[Path, Path], str] | None = None,
) -> list[SyncResult]:
    """Copy the pinned (or the named) versions into `schema_root/<version>/`: from `source`, or
    with no source, each from its pin's repository and commit (served under `raw_base`).

    `repin_hint(version)` and `diff_hint(pinned, new)` give the commands printed in errors (the
    CLI passes commands that repeat the options it was called with)."""
    pins = {p.version: p for p in read_pins(schema_root)}
    wanted = sort_versions(list(dict.fromkeys(versions))) if versions else list(pins)
    if not wanted:
        raise PinError(f"{schema_root / PINS_FILE} pins no versions")
    hint = repin_hint or (lambda version: _default_hint(source, version))
    results = []
    changed_pins = dict(pins)
    for version in wanted:
        check_version_string(version)
        pin = pins.get(version)
        if source is not None:
            data, origin = fetch_schema(source, version), source
        elif pin is not None:
            origin = pin_url(pin, raw_base)
            data = _fetch_url(origin)
        else:
            raise PinError(
                f"version {version} is not pinned in {schema_root / PINS_FILE}, so there is no repository and "
                "commit to fetch it from: pass --from SOURCE"
            )
        digest = hashlib.sha256(data).hexdigest()
        target = schema_root / version / "schema.json"
        if pin is None and not update_pins:
            raise PinError(
                f"version {version} is not pinned in {schema_root / PINS_FILE}. "
                f"To pin it at the file {origin} serves now (sha256 {digest}), run `{hint(version)}`"
            )
        if pin is not None and pin.sha256 != digest and not update_pins:
            review = ""
            if target.is_file():
                fresh = target.with_name("schema.json.new")
                fresh.write_bytes(data)
                if diff_hint is not None:
                    review = f" It is kept as {fresh}; review it with `{diff_hint(target, fresh)}`."
            raise PinError(
                f"schema {version} from {origin} has sha256 {digest}, but {schema_root / PINS_FILE} pins "
                f"{pin.sha256}: the upstream file changed (or the source is not the pinned one).{review} "
                f"Once reviewed, re-pin with `{hint(version)}` (and record the new commit in the pin)"
            )
        status = "copied"
        if pin is None or pin.sha256 != digest:
            check_schema(data, origin)
            status = "pinned"
            base = pin or Pin(version=version, sha256=digest, path=f"schema/{version}/schema.json")
            changed_pins[version] = replace(base, sha256=digest)
        if status == "copied" and target.is_file() and target.read_bytes() == data:
            status = "unchanged"
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name("schema.json.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        target.with_name("schema.json.new").unlink(missing_ok=True)
        examples = 0
        if source is not None and not is_url(source) and Path(source).resolve() != schema_root.resolve():
            src_examples = Path(source) / version / "examples"
            dst_examples = schema_root / version / "examples"
            if src_examples.is_dir():
                if dst_examples.exists():
                    shutil.rmtree(dst_examples)
                shutil.copytree(src_examples, dst_examples)
                examples = sum(1 for _ in dst_examples.rglob("*.json"))
        results.append(SyncResult(version, digest, status, examples))
    if changed_pins != pins:
        write_pins(schema_root, list(changed_pins.values()))
    return results
