"""`mcpgen call` of a tool the server runs as a task: the status is shown while it waits, the
result printed as for any call; Ctrl-C cancels the task on the server."""

from __future__ import annotations

import json
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from support.processes import worker

REPO = Path(__file__).resolve().parents[2]
SERVER_FILE = REPO / "tests" / "support" / "tasks_server.py"
SERVER = [sys.executable, str(SERVER_FILE)]


def run_split(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("mode", ["handshake", "2026-07-28"])
def test_call_shows_a_task_s_status_and_prints_its_result(mode: str) -> None:
    args = ("call", "confirm", "--mode", mode, "--args", '{"rounds": 2}', "--answer", "ok=true")
    code, out, err = run_split(*args, "--", *SERVER)
    assert (code, out.strip()) == (0, "confirmed 2 time(s)"), err
    shown = re.findall(r"^task \S+: (\w+)", err, re.M)
    assert shown[0] == "working" and shown[-1] == "completed", err
    if mode != "handshake":
        assert "input_required" in shown


def test_ctrl_c_cancels_the_task_on_the_server() -> None:
    with worker(str(SERVER_FILE) + ":server") as url:
        command = [sys.executable, "-m", "mcpgen.codegen.cli", "call", "sleepy", "--args", '{"seconds": 600}']
        proc = subprocess.Popen(
            [*command, "--no-auth", "--url", url], cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stderr is not None
        try:
            selector = selectors.DefaultSelector()
            selector.register(proc.stderr, selectors.EVENT_READ)
            deadline, seen = time.monotonic() + 60, ""
            while "working" not in seen:
                assert selector.select(max(0.0, deadline - time.monotonic())), f"no task status shown: {seen}"
                line = proc.stderr.readline().decode()
                assert line, f"the command ended: {seen}"
                seen += line
            task_id = re.search(r"task (\S+): working", seen)
            assert task_id is not None
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) != 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        rest = proc.stderr.read().decode()
        proc.stderr.close()
        assert proc.stdout is not None
        proc.stdout.close()
        assert f"task {task_id.group(1)}: cancelled" in rest
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id.group(1), "_meta": meta}}
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tasks/get",
            "mcp-name": task_id.group(1),
        }
        reply = httpx.post(url, json=body, headers=headers, timeout=30).json()
        assert reply["result"]["status"] == "cancelled", json.dumps(reply)
