"""Every code block of the README runs, in order, as a user would run it (see
support/doc_pages.py for how each kind of block runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.doc_pages import REPO, run_page


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_every_readme_block_runs(project: Path) -> None:
    ran = run_page(REPO / "README.md", project)
    assert ran >= 10, "the README lost its examples"
