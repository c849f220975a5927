"""Every code block of the README runs, in order, as a user would run it.

- ```python blocks run in one namespace, as in an async REPL (`python -m asyncio`: top-level
  `await` and `async with` are fine), in a fresh project folder; ```python file=NAME blocks are
  written to NAME there first.
- ```sh blocks run line by line in that folder (a line ending in `&` is a server, started in
  the background, and the test waits for its `--port`); the lines that make the environment this
  test runs in (`pip install`, `.ci/...`, the test command itself) are not run again.
- ```toml blocks must parse.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

import anyio
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
ENVIRONMENT = ("pip install", ".ci/", ".venv/bin/python -m pytest")


@dataclass(frozen=True)
class Block:
    lang: str
    attrs: dict[str, str]
    code: str
    line: int


def blocks() -> Iterator[Block]:
    text = README.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        info = match.group(1).split()
        lang = info[0] if info else ""
        attrs = dict(part.split("=", 1) for part in info[1:] if "=" in part)
        yield Block(lang, attrs, match.group(2), text.count("\n", 0, match.start()) + 1)


def commands(code: str) -> Iterator[str]:
    """The shell lines of a block: comments dropped, `\\` continuations joined."""
    pending = ""
    for raw in code.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            yield line


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {seconds} s")


def compile_block(block: Block) -> CodeType:
    return compile(block.code, f"README.md:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def run_sh(block: Block, env: dict[str, str], servers: list[subprocess.Popen[bytes]]) -> None:
    where = f"README.md line {block.line}"
    for line in commands(block.code):
        if line.startswith(ENVIRONMENT):
            continue
        if line.endswith("&"):
            port = re.search(r"--port[ =](\d+)", line)
            assert port, f"{where}: a background server names its --port"
            argv = shlex.split(line[:-1])
            servers.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            wait_for_port(int(port.group(1)), servers[-1])
            continue
        done = subprocess.run(line, check=False, shell=True, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{where}: `{line}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


def run_python(block: Block, namespace: dict[str, Any]) -> None:
    result = eval(compile_block(block), namespace)  # top-level await makes a coroutine
    if result is not None:
        anyio.run(lambda: result)


def test_every_readme_block_runs(project: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    source = (REPO / ".schema-source").read_text().strip() if (REPO / ".schema-source").is_file() else None
    env.setdefault("MCPGEN_SCHEMA_SOURCE", source or str(REPO.parent / "shared" / "mcp-schema"))
    ext_source = (REPO / ".ext-source").read_text().strip() if (REPO / ".ext-source").is_file() else None
    if ext_source:  # the pinned extensions' source, as .ci/setup found it (else the schema source's extensions/)
        env.setdefault("MCPGEN_EXT_SOURCE", ext_source)
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    servers: list[subprocess.Popen[bytes]] = []
    ran = 0
    try:
        for block in blocks():
            if block.lang == "toml":
                tomllib.loads(block.code)
            elif block.lang == "python" and "file" in block.attrs:
                (project / block.attrs["file"]).write_text(block.code, encoding="utf-8")
            elif block.lang == "python":
                run_python(block, namespace)
            elif block.lang == "sh":
                run_sh(block, env, servers)
            else:
                continue
            ran += 1
    finally:
        for server in servers:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
    assert ran >= 10, "the README lost its examples"
