"""Server processes for multi-process tests, started and awaited by what they print (no sleeps)."""

from __future__ import annotations

import os
import selectors
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def process(
    command: list[str],
    ready: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    cwd: Path | None = None,
    seen: list[str] | None = None,
    stdin: int | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `command` (in `cwd`, default the repository; `stdin` as `subprocess.Popen` takes it)
    until the block ends; enter once a line of its output contains `ready` (the lines up to it
    are appended to `seen` when given)."""
    proc = subprocess.Popen(
        command,
        cwd=cwd or REPO,
        stdin=stdin,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
    )  # unbuffered: readline never reads past the line select() saw
    assert proc.stdout is not None
    seen = [] if seen is None else seen
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"{command[0]} did not print {ready!r} within {timeout} s: {''.join(seen)[-2000:]}")
            line = proc.stdout.readline().decode(errors="replace")
            if not line:
                raise RuntimeError(f"{command} exited ({proc.wait()}): {''.join(seen)[-2000:]}")
            seen.append(line)
            if ready in line:
                break
        selector.close()
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if proc.stdin is not None:
            proc.stdin.close()


def redis_binary(where: str = "") -> str:
    """The redis-server binary: a missing one skips the test, or fails it when
    MCPGEN_REQUIRE_REDIS is set (CI installs it, so a missing install step cannot hide)."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("MCPGEN_REQUIRE_REDIS"):
            pytest.fail(f"{where}redis-server is missing (CI installs it: apt-get install redis-server)")
        pytest.skip(f"{where}redis-server is not installed")
    return binary


@contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away redis-server on a free port (skipped when the binary is missing, unless
    MCPGEN_REQUIRE_REDIS is set, as CI sets it)."""
    binary = redis_binary()
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    with process(command, "Ready to accept connections"):
        yield f"redis://127.0.0.1:{port}/0"


@contextmanager
def worker(target: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """One uvicorn process serving `target` (FILE:ATTR) through the app factory; yields its URL."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "mcpgen.runtime.server.http.workers:app_factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "info",
    ]
    with process(command, "Uvicorn running on", {"MCPGEN_SERVER": target, **(env or {})}):
        yield f"http://127.0.0.1:{port}/mcp"
