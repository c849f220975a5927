"""A wheel carries what `mcpgen` needs outside a checkout: templates, data files, generated tree."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_contents(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("mcpgen-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {
        f"mcpgen/codegen/{p.relative_to(REPO / 'codegen').as_posix()}"
        for p in (REPO / "codegen" / "templates").rglob("*.jinja2")
    }
    assert templates and templates <= names, templates - names
    data = {f"mcpgen/schema/{p.name}" for p in (REPO / "schema").glob("*.toml")}
    assert data <= names, data - names
    assert {
        "mcpgen/generated/versions.py",
        "mcpgen/generated/v2026_07_28/models.py",
        "mcpgen/generated/v2025_11_25/methods.py",
    } <= names
    assert not [n for n in names if n.endswith("schema.json")], "no upstream schema text is shipped"
