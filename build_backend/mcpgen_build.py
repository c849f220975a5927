"""mcpgen's build backend: setuptools, plus the generated tree a wheel must ship.

A wheel carries `mcpgen.generated` (the models and tables of every pinned protocol version and
pinned extension). That tree is a build product, not in git, so building from a checkout (or an
sdist made without it) makes it first: the pinned schemas are synced from `$MCPGEN_SCHEMA_SOURCE`
(a folder or URL laid out as `<source>/<version>/schema.json`, extensions under
`<source>/extensions/<name>/<release>/schema.json` unless `$MCPGEN_EXT_SOURCE` names a folder or
URL laid out as `<ext source>/<name>/<release>/schema.json`) or, without them, from each pin's
repository at its commit, and generated with the project's own generator. For that the build environment gets the
generator toolchain (the `codegen` extra), and only then. When the tree cannot be made, the build
fails with one line that says what to run. An sdist carries the tree, so a wheel built from it
needs neither the toolchain nor the schemas. Editable installs never need the tree at build time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the rest of the PEP 517/660 interface, unchanged)
    build_editable,
    get_requires_for_build_editable,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "generated"
WHAT_TO_RUN = (
    "set MCPGEN_SCHEMA_SOURCE to a folder or URL with <version>/schema.json and "
    "extensions/<name>/<release>/schema.json (or MCPGEN_EXT_SOURCE to one with <name>/<release>/schema.json), "
    "or make the tree first in the checkout (.ci/setup, or: mcpgen sync && mcpgen generate)"
)


def _tree_ready() -> bool:
    return (TREE / "versions.py").is_file() and (TREE / "manifest.json").is_file()


def _codegen_requirements() -> list[str]:
    from setuptools.config.pyprojecttoml import read_configuration

    project = read_configuration(ROOT / "pyproject.toml", expand=False)["project"]
    requirements: list[str] = project["optional-dependencies"]["codegen"]
    return [*requirements, *project["dependencies"]]


def _fail(reason: str) -> None:
    print(f"mcpgen: cannot build without the generated tree ({reason}): {WHAT_TO_RUN}", file=sys.stderr)
    raise SystemExit(1)


def _make_tree() -> None:
    """Sync the pinned schemas and generate `generated/`, with the generator of this source tree."""
    if _tree_ready():
        return
    sys.path.insert(0, str(ROOT))  # `codegen/` is importable as a package of its own
    try:
        from codegen.errors import GenerationError, PinError
        from codegen.generate import generate
        from codegen.sync import RAW_BASE, read_extension_pins, read_pins, sync
    except ImportError as exc:
        _fail(f"the generator toolchain is missing: {exc}")
        return
    schema = ROOT / "schema"
    source = os.environ.get("MCPGEN_SCHEMA_SOURCE") or None
    ext_source = os.environ.get("MCPGEN_EXT_SOURCE") or None
    try:
        sync(source, schema, ext_source=ext_source, raw_base=os.environ.get("MCPGEN_RAW_BASE") or RAW_BASE)
        pins = {p.version: p.sha256 for p in read_pins(schema)}
        extensions = read_extension_pins(schema)
        generate(schema, TREE, list(pins), schema, extensions=extensions, prune=True, jobs=1, pins=pins)
    except (PinError, GenerationError, OSError) as exc:
        _fail(" ".join(str(exc).split()))


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    extra = [] if _tree_ready() else _codegen_requirements()
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *extra]


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    extra = [] if _tree_ready() else _codegen_requirements()
    return [*_setuptools.get_requires_for_build_sdist(config_settings), *extra]


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    _make_tree()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    _make_tree()
    return _setuptools.build_sdist(sdist_directory, config_settings)
