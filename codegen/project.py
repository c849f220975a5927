"""Where `mcpgen` reads and writes: the user's project, never the installed package.

The project is the nearest folder, from the current directory up, that has a `pyproject.toml`
(else the current directory). Its folders default to `<project>/schema` (pins and synced schema
files) and `<project>/generated` (the generated tree), and can be set in the project's
`pyproject.toml`:

    [tool.mcpgen]
    schema-dir = "schema"          # versions.toml, <version>/schema.json, extensions/<name>/<release>/schema.json
    out = "src/myapp/mcp"          # the generated package
    data-dir = "mcpgen-data"       # own fix rules and table data (default: the ones mcpgen ships)

Paths in the table are relative to the `pyproject.toml` that holds them. A command-line option
beats `$MCPGEN_SCHEMA_DIR`, which beats the table, which beats the defaults.

The generator's data files (`fixes.toml`, `roles.toml`, `gates.toml`, `deprecations.toml`,
`results.toml`, `headers.toml`, `extensions.toml`) and the pins a release knows (`versions.toml`,
versions and extensions) ship inside mcpgen as the
`mcpgen.schema` package; a data folder of the user's (`--data-dir`, `data-dir`, or a schema
folder that has its own `fixes.toml`) replaces them as a whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import _toml as tomllib
from .errors import GenerationError

PACKAGED_DATA = Path(__file__).resolve().parent.parent / "schema"
"""mcpgen's own data files and pins (`mcpgen/schema/` in an install, `schema/` in a checkout)."""

DATA_FILES = (  # the generator's data files, each replaceable by a project's own
    "fixes.toml",
    "roles.toml",
    "gates.toml",
    "deprecations.toml",
    "results.toml",
    "headers.toml",
    "extensions.toml",
)

DATA_MARKER = "fixes.toml"
CONFIG_KEYS = ("schema-dir", "out", "data-dir")


@dataclass(frozen=True)
class Project:
    root: Path
    schema_dir: Path
    out: Path
    data_dir: Path | None  # configured data folder, if any
    pyproject: Path | None


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_project(cwd: Path | None = None) -> Project:
    """The project around `cwd` (default: the current directory) and its configured folders."""
    here = (cwd or Path.cwd()).resolve()
    pyproject = find_pyproject(here)
    root = pyproject.parent if pyproject is not None else here
    table: dict[str, object] = {}
    if pyproject is not None:
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise GenerationError(f"cannot read [tool.mcpgen]: {exc}", file=pyproject) from exc
        found = data.get("tool", {}).get("mcpgen", {})
        if not isinstance(found, dict):
            raise GenerationError("[tool.mcpgen] is not a table", file=pyproject)
        unknown = sorted(set(found) - set(CONFIG_KEYS))
        if unknown:
            raise GenerationError(
                f"[tool.mcpgen] has unknown keys {', '.join(unknown)} (known: {', '.join(CONFIG_KEYS)})", file=pyproject
            )
        for key, value in found.items():
            if not isinstance(value, str) or not value:
                raise GenerationError(f"[tool.mcpgen] {key} must be a non-empty path string", file=pyproject)
        table = found

    def path(key: str, default: str | None) -> Path | None:
        value = table.get(key, default)
        return None if value is None else root / str(value)

    env = os.environ.get("MCPGEN_SCHEMA_DIR")
    schema_dir = Path(env) if env else path("schema-dir", "schema")
    out = path("out", "generated")
    assert schema_dir is not None and out is not None
    return Project(root=root, schema_dir=schema_dir, out=out, data_dir=path("data-dir", None), pyproject=pyproject)


def data_dir_for(schema_dir: Path, explicit: Path | None, configured: Path | None = None) -> Path:
    """Fix rules and table data: `--data-dir`, else `[tool.mcpgen] data-dir`, else the schema folder
    if it has its own `fixes.toml`, else the data mcpgen ships."""
    for given in (explicit, configured):
        if given is not None:
            if not (given / DATA_MARKER).is_file():
                raise GenerationError(f"{given} has no {DATA_MARKER}: it is not an mcpgen data folder")
            return given
    if (schema_dir / DATA_MARKER).is_file():
        return schema_dir
    if (PACKAGED_DATA / DATA_MARKER).is_file():
        return PACKAGED_DATA
    raise GenerationError(f"mcpgen's data files are missing from {PACKAGED_DATA}; reinstall mcpgen")
