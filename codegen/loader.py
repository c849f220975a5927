"""Read one dated schema file into a `SchemaDocument` with refs normalised to `#/$defs/...`.

Both JSON Schema 2020-12 (`$defs`) and draft-07 (`definitions`) inputs are accepted; every
local reference is checked to resolve, and anything the generator cannot follow (external
refs, a root that is not an object) is reported with its file and JSON pointer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import GenerationError, join_pointer, unescape_pointer_token
from .versioning import version_key

DATED_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DEFS = "$defs"
REF_PREFIX = "#/$defs/"


@dataclass
class SchemaDocument:
    """One protocol version's schema, with its defs under `$defs` and refs as `#/$defs/Name`."""

    version: str
    file: Path
    sha256: str
    draft: str
    defs: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> SchemaDocument:
        return SchemaDocument(
            self.version, self.file, self.sha256, self.draft, copy.deepcopy(self.defs), dict(self.extra)
        )

    def error(self, message: str, pointer: str = "") -> GenerationError:
        return GenerationError(message, file=self.file, pointer=pointer)

    def as_json_schema(self) -> dict[str, Any]:
        """The normalised document as one JSON Schema 2020-12 object."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", DEFS: self.defs}


def ref_name(ref: str) -> str:
    """`#/$defs/Foo` -> `Foo`."""
    return unescape_pointer_token(ref[len(REF_PREFIX) :])


def make_ref(name: str) -> dict[str, str]:
    return {"$ref": REF_PREFIX + name.replace("~", "~0").replace("/", "~1")}


def schema_file(schema_dir: Path, version: str) -> Path:
    return schema_dir / version / "schema.json"


def check_version_string(version: str) -> None:
    if version_key(version) is None:
        raise GenerationError(f"version {version!r} is not a dated version (a real YYYY-MM-DD date)")


def load_schema(schema_dir: Path, version: str) -> SchemaDocument:
    """Load `<schema_dir>/<version>/schema.json`."""
    check_version_string(version)
    path = schema_file(schema_dir, version)
    if not path.is_file():
        raise missing_schema(schema_dir, version)
    return load_schema_file(path, version)


def missing_schema(schema_dir: Path, version: str) -> GenerationError:
    """The error for a version whose schema file is not there: where it was looked for, what
    brings it, and which versions this folder knows (pinned, or present)."""
    from . import _toml as tomllib

    known = {p.parent.name for p in schema_dir.glob("*/schema.json") if version_key(p.parent.name) is not None}
    try:
        pins = tomllib.loads((schema_dir / "versions.toml").read_text(encoding="utf-8")).get("version", [])
        known.update(str(pin["version"]) for pin in pins if isinstance(pin, dict) and "version" in pin)
    except (OSError, ValueError):
        pass
    ordered = sorted(known, key=lambda v: version_key(v) or (0, 0, 0))
    listed = f"known versions: {', '.join(ordered)}" if ordered else "no version is pinned there yet: `mcpgen init`"
    return GenerationError(
        f"no schema file for version {version} at {schema_file(schema_dir, version)}: "
        f"`mcpgen sync` fetches the pinned versions ({listed})"
    )


def parse_schema_bytes(raw: bytes, where: Path | str) -> tuple[dict[str, Any], str, str]:
    """The JSON document, the key its definitions are under and the draft, or a one-line error:
    not JSON, not an object, or no non-empty `$defs` / `definitions` object."""
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GenerationError(f"not valid JSON: {exc}", file=where) from exc
    if not isinstance(doc, dict):
        raise GenerationError("not a JSON schema: the root is not a JSON object", file=where, pointer="")
    if DEFS in doc:
        key, draft = DEFS, "2020-12"
    elif "definitions" in doc:
        key, draft = "definitions", "draft-07"
    else:
        raise GenerationError("not a protocol schema: it has neither `$defs` nor `definitions`", file=where, pointer="")
    defs = doc[key]
    if not isinstance(defs, dict):
        raise GenerationError(f"`{key}` is not an object", file=where, pointer="/" + key)
    if not defs:
        raise GenerationError(f"not a protocol schema: `{key}` is empty", file=where, pointer="/" + key)
    return doc, key, draft


def load_schema_file(path: Path, version: str) -> SchemaDocument:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise GenerationError(f"cannot read the schema: {exc.strerror or exc}", file=path) from exc
    doc, key, draft = parse_schema_bytes(raw, path)
    defs = doc[key]
    old_prefix = f"#/{key}/"
    extra = {k: v for k, v in doc.items() if k not in (key, "$schema")}
    normalised = _rewrite_refs(defs, old_prefix, path, ("$defs",) if key == DEFS else ("definitions",))
    result = SchemaDocument(
        version=version,
        file=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        draft=draft,
        defs=normalised,
        extra=extra,
    )
    check_refs(result)
    return result


def _rewrite_refs(node: Any, old_prefix: str, path: Path, where: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                if v.startswith(old_prefix):
                    out[k] = REF_PREFIX + v[len(old_prefix) :]
                elif v.startswith("#"):
                    raise GenerationError(
                        f"reference {v!r} does not point into the schema's definitions",
                        file=path,
                        pointer=join_pointer(*where, k),
                    )
                else:
                    raise GenerationError(
                        f"external reference {v!r} is not supported; inline it or bundle the schema first",
                        file=path,
                        pointer=join_pointer(*where, k),
                    )
            else:
                out[k] = _rewrite_refs(v, old_prefix, path, (*where, k))
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, old_prefix, path, (*where, str(i))) for i, v in enumerate(node)]
    return node


def iter_refs(node: Any, where: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every `$ref` string below `node`, with the path to the object holding it."""
    found: list[tuple[tuple[str, ...], str]] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(node, where)]
    while stack:
        cur, at = stack.pop()
        if isinstance(cur, dict):
            ref = cur.get("$ref")
            if isinstance(ref, str):
                found.append((at, ref))
            for k, v in cur.items():
                if isinstance(v, (dict, list)):
                    stack.append((v, (*at, k)))
        elif isinstance(cur, list):
            for i, v in enumerate(cur):
                if isinstance(v, (dict, list)):
                    stack.append((v, (*at, str(i))))
    return found


def check_refs(doc: SchemaDocument) -> None:
    for at, ref in iter_refs(doc.defs, (DEFS,)):
        if not ref.startswith(REF_PREFIX) or ref_name(ref) not in doc.defs:
            raise doc.error(f"unresolved reference {ref!r}", join_pointer(*at, "$ref"))
