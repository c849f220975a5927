"""The Python of the README and of every page of the site passes `mypy --strict` and pyright's strict
mode as written, as the pages promise users' code does (`.ci/typecheck` checks tests/typing and
examples/ the same way; these are the pages' own blocks).

Each page's files are checked as themselves and the blocks a reader runs in an async REPL as one
module (see `write_typed_sources` in support/doc_pages.py), against mcpgen laid out as a wheel
installs it. That the blocks also run is tests/docs/test_site.py's and test_readme.py's part.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.doc_pages import REPO, blocks, wheel_layout, write_typed_sources

ALL_PAGES = [REPO / "README.md", *sorted(path for path in (REPO / "docs").rglob("*.md") if "hooks" not in path.parts)]
PAGES = [page for page in ALL_PAGES if any(block.lang == "python" for block in blocks(page))]
BIN = Path(sys.executable).parent


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def folder_name(page: Path) -> str:
    return re.sub(r"\W", "_", page_id(page).removesuffix(".md"))


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, list[Path]]:
    root = tmp_path_factory.mktemp("typed-pages")
    return {page: write_typed_sources(page, root / folder_name(page)) for page in PAGES}


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every page's run: mcpgen is analysed once."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.fixture(scope="module")
def pyright_errors(sources: dict[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """One pyright run over every page, each page's folder an execution environment of its own
    (its `server.py` is not another page's)."""
    folders = sorted({files[0].parent for files in sources.values() if files})
    root = folders[0].parent
    layout = wheel_layout()
    config = {
        "typeCheckingMode": "strict",
        "pythonVersion": "3.10",
        "venvPath": str(Path(sys.prefix).parent),
        "venv": Path(sys.prefix).name,
        "extraPaths": [layout],
        "executionEnvironments": [{"root": folder.name, "extraPaths": [layout]} for folder in folders],
    }
    (root / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [str(BIN / "pyright"), "--outputjson"], cwd=root, capture_output=True, text=True, check=False, timeout=1200
    )
    report = json.loads(done.stdout)
    assert report["summary"]["filesAnalyzed"] >= len(folders), done.stdout[-2000:]
    return [
        f"{diagnostic['file']}:{diagnostic['range']['start']['line'] + 1}: {diagnostic['message']}"
        for diagnostic in report["generalDiagnostics"]
        if diagnostic["severity"] == "error"
    ]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_the_page_passes_mypy_strict(page: Path, sources: dict[Path, list[Path]], mypy_cache: Path) -> None:
    files = sources[page]
    assert files, "the page's Python blocks all import what the page makes: nothing is type-checked"
    config = mypy_cache / "mypy.ini"
    config.write_text("[mypy]\n", encoding="utf-8")  # no plugin, no settings: --strict as users run it
    done = subprocess.run(
        [str(BIN / "mypy"), "--strict", "--config-file", str(config), "--cache-dir", str(mypy_cache)]
        + [file.name for file in files],
        cwd=files[0].parent,
        env={**os.environ, "MYPYPATH": wheel_layout()},
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert done.returncode == 0, f"{page_id(page)} under mypy --strict:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_the_page_passes_pyright_strict(page: Path, sources: dict[Path, list[Path]], pyright_errors: list[str]) -> None:
    files = sources[page]
    assert files, "the page's Python blocks all import what the page makes: nothing is type-checked"
    folder = str(files[0].parent)
    errors = [error for error in pyright_errors if error.startswith(folder + os.sep)]
    assert errors == [], f"{page_id(page)} under pyright strict:\n" + "\n".join(errors)
