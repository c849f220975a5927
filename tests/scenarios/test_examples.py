"""The examples run as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("mode", ["auto", "handshake"])
def test_example_client_answers_the_everything_server(mode: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "client.py"), mode], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    expected_version = "2026-07-28" if mode == "auto" else "2025-11-25"
    assert f"connected with {expected_version}" in done.stdout
    assert "confirm_action: ['deploy: confirmed ((none given))']" in done.stdout
    assert "client_roots: ['file:///home/me/projects']" in done.stdout
    assert "'nights': 2" in done.stdout
