"""Every code block of the README runs, in order, as a user would run it (see
support/doc_pages.py for how each kind of block runs)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest
from support.doc_pages import REPO, run_page, wait_for_port
from support.processes import free_port


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_every_readme_block_runs(project: Path) -> None:
    ran = run_page(REPO / "README.md", project)
    assert ran >= 4, "the README lost its quick start (the set-up commands, a server and a client)"


def test_the_readme_command_serves_the_documentation_site() -> None:
    """The README's `mkdocs serve` command, run from the checkout, serves the site (on a free port)."""
    command = re.search(r"`(\S*mkdocs serve)`", (REPO / "README.md").read_text(encoding="utf-8"))
    assert command, "the README names the command that serves the documentation"
    port = free_port()
    argv = [*shlex.split(command.group(1)), "--dev-addr", f"127.0.0.1:{port}", "--no-livereload"]
    argv[0] = str(REPO / argv[0]) if argv[0].startswith(".venv/") else argv[0]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, server, seconds=300)
            page = httpx.get(f"http://127.0.0.1:{port}/", timeout=60)
            tutorial = httpx.get(f"http://127.0.0.1:{port}/tutorial/", timeout=60)
        finally:
            server.terminate()
            server.wait(timeout=30)
        assert page.status_code == 200 and "<title>mcpgen</title>" in page.text
        assert tutorial.status_code == 200 and "Tutorial" in tutorial.text
