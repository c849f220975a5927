"""MkDocs hooks for mcpgen's site (named in mkdocs.yml; not a page).

setuptools maps the checkout's folders onto `mcpgen.*` (`runtime/` is `mcpgen.runtime`, ...) with an
import hook that griffe, mkdocstrings' loader, cannot follow; this builds the same layout as links
under build/docs, the folder mkdocs.yml gives mkdocstrings as its search path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LINKS = ROOT / "build" / "docs" / "mcpgen"
MAPPED = ("codegen", "generated", "runtime")


def link_tree() -> None:
    LINKS.mkdir(parents=True, exist_ok=True)
    for name in MAPPED:
        link = LINKS / name
        target = Path("..", "..", "..", name)
        if link.is_symlink() and Path(link.readlink()) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)


def on_startup(**_: Any) -> None:
    link_tree()
