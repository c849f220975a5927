"""`mcpgen serve FILE_OR_MODULE:ATTR` and the app factory's target loading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from asgi import meta, modern_headers, request
from mcpgen.runtime import Server
from mcpgen.runtime.transport.http_serve import app_factory, load_server
from processes import REPO, free_port, process

MCPGEN = str(Path(sys.executable).parent / "mcpgen")


def test_mcpgen_serve_serves_a_server_file_over_http() -> None:
    port = free_port()
    command = [MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port)]
    with process(command, "Uvicorn running on"):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        reply = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json=request(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta()}),
            headers={**headers, **modern_headers("tools/call", "add")},
            timeout=30,
        )
        assert reply.json()["result"]["structuredContent"] == {"result": 5}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("examples/nowhere.py:server", "no such file"),
        ("examples/everything_server.py:missing", "no attribute 'missing'"),
        ("examples/everything_server.py:COUNTER", "not an mcpgen Server"),
        ("no_such_module_anywhere:server", "cannot import"),
    ],
)
def test_a_bad_target_is_one_line_of_explanation(target: str, message: str) -> None:
    done = subprocess.run([MCPGEN, "serve", target], check=False, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_targets_name_files_modules_and_factories(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "made_here.py").write_text(
        "from mcpgen.runtime import Server\n\ndef build():\n    return Server('built')\n\nserver = Server('plain')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_server("made_here:build").info["name"] == "built"
    assert load_server("made_here").info["name"] == "plain"
    assert load_server(f"{tmp_path / 'made_here.py'}:server").info["name"] == "plain"
    monkeypatch.setenv("MCPGEN_SERVER", "made_here:build")
    monkeypatch.setenv("MCPGEN_PATH", "/other")
    app = app_factory()
    assert isinstance(app.server, Server) and app.path == "/other"
    monkeypatch.delenv("MCPGEN_SERVER")
    with pytest.raises(LookupError, match="MCPGEN_SERVER"):
        app_factory()
