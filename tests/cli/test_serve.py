"""`mcpgen serve FILE_OR_MODULE:ATTR` and the app factory's target loading."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcpgen.runtime import Server
from mcpgen.runtime.server.http.workers import app_factory, load_server
from support.asgi_driver import meta, modern_headers, request
from support.processes import REPO, free_port, process

MCPGEN = str(Path(sys.executable).parent / "mcpgen")


def add_over_http(port: int) -> object:
    """The structured result of the example server's `add(2, 3)`, called with a modern POST."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    reply = httpx.post(
        f"http://127.0.0.1:{port}/mcp",
        json=request(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta()}),
        headers={**headers, **modern_headers("tools/call", "add")},
        timeout=30,
    )
    return reply.json()["result"]["structuredContent"]


def test_mcpgen_serve_serves_a_server_file_over_http() -> None:
    port = free_port()
    command = [MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port)]
    with process(command, "Uvicorn running on"):
        assert add_over_http(port) == {"result": 5}


def test_ctrl_c_stops_mcpgen_serve_cleanly_and_the_log_names_the_endpoint() -> None:
    """Defect: Ctrl-C made `mcpgen serve` exit 1 ("Aborted!"), and `run_http` logged the URL
    without the endpoint's path."""
    port = free_port()
    command = [MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port)]
    with process(command, f"MCP endpoint at http://127.0.0.1:{port}/mcp") as proc:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None
        rest = proc.stdout.read().decode(errors="replace")
    assert "Traceback" not in rest and "Aborted" not in rest and "stopped" in rest


def test_mcpgen_serve_workers_serves_from_several_processes_with_its_options() -> None:
    """`mcpgen serve --workers 2`: the documented multi-worker command. Every worker serves the
    target with the command's options (an allowed Origin passes, another gets 403), and Ctrl-C
    stops them all with exit status 0."""
    port = free_port()
    command = [
        MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port), "--workers", "2",
        "--allow-origin", "https://app.example.com",
    ]  # fmt: skip
    seen: list[str] = []
    with process(command, "Application startup complete", seen=seen) as proc:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        body = request(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta()})
        url = f"http://127.0.0.1:{port}/mcp"
        answers = []
        for origin in ["https://app.example.com", "https://other.example.com"] * 4:  # new connections each
            reply = httpx.post(
                url, json=body, headers={**headers, **modern_headers("tools/call", "add"), "origin": origin}, timeout=30
            )
            answers.append((origin, reply.status_code))
        for origin, status in answers:
            assert status == (200 if origin == "https://app.example.com" else 403), answers
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None
        rest = "".join(seen) + proc.stdout.read().decode(errors="replace")
    # two workers at least (uvicorn's supervisor replaces one that misses its health check on a loaded machine)
    assert rest.count("Started server process") >= 2, rest
    assert "Traceback" not in rest and "stopped" in rest


@pytest.mark.parametrize(
    ("options", "logged"),
    [([], False), (["--access-log"], True), (["--workers", "2", "--access-log"], True)],
)
def test_mcpgen_serve_logs_a_line_per_request_only_when_asked(options: list[str], logged: bool) -> None:
    """`mcpgen serve` writes no line per request unless `--access-log` says so (uvicorn's default
    writes one, which cuts the rate of short calls by a third or more); its workers too."""
    port = free_port()
    command = [MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port), *options]
    seen: list[str] = []
    with process(command, "Application startup complete", seen=seen) as proc:
        assert add_over_http(port) == {"result": 5}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None
        rest = "".join(seen) + proc.stdout.read().decode(errors="replace")
    assert ('"POST /mcp HTTP/1.1" 200' in rest) is logged, rest
    assert "Traceback" not in rest and "stopped" in rest


SLOW_TOOL = """import anyio
from mcpgen.runtime import Server

server = Server("slow")

@server.tool()
async def slow(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "done"
"""


def test_a_call_that_outlives_the_watch_delay_is_answered_without_errors(tmp_path: Path) -> None:
    """Defect: under `mcpgen serve` (uvicorn's own event loop, no anyio runner), the watcher of a
    POST whose handler outlived the watch delay failed to start (anyio found no event loop in the
    loop's timer callback), logging a traceback and leaving hang-ups unwatched."""
    (tmp_path / "slow_server.py").write_text(SLOW_TOOL)
    port = free_port()
    command = [MCPGEN, "serve", "slow_server.py:server", "--port", str(port)]
    with process(command, "MCP endpoint at", cwd=tmp_path) as proc:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        for seconds in (0.3, 0.0):  # the last one tells the log is complete up to here
            reply = httpx.post(
                f"http://127.0.0.1:{port}/mcp",
                json=request(1, "tools/call", {"name": "slow", "arguments": {"seconds": seconds}, "_meta": meta()}),
                headers={**headers, **modern_headers("tools/call", "slow")},
                timeout=30,
            )
            assert reply.json()["result"]["content"][0]["text"] == "done"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None
        rest = proc.stdout.read().decode(errors="replace")
    assert "Traceback" not in rest and "Exception in callback" not in rest, rest


QUICK_START = """from mcpgen.runtime import Server

server = Server("demo")

@server.tool()
def add(a: int, b: int) -> int:
    return a + b

server.run_stdio()
"""


@pytest.mark.parametrize("target", ["server.py:server", "notes:server"])
def test_the_quick_start_file_is_served_from_its_folder(tmp_path: Path, target: str) -> None:
    """Defect: `mcpgen serve server.py:server` on the quick start's own file hung silently (the file
    starts a stdio server when imported), and `mcpgen serve notes:server` could not import a module
    of the current folder."""
    (tmp_path / f"{target.partition(':')[0].removesuffix('.py')}.py").write_text(QUICK_START)
    port = free_port()
    seen: list[str] = []
    command = [MCPGEN, "serve", target, "--port", str(port)]
    # stdin stays open, as a terminal's would: a stdio server started at import would wait on it for ever
    with process(command, "MCP endpoint at", cwd=tmp_path, seen=seen, stdin=subprocess.PIPE):
        assert add_over_http(port) == {"result": 5}
    assert any("starts serving when imported (run_stdio())" in line for line in seen), seen


def test_a_wrong_url_path_is_reported_as_such_by_the_command_line() -> None:
    from click.testing import CliRunner
    from mcpgen.codegen.cli import main

    port = free_port()
    command = [MCPGEN, "serve", "examples/everything_server.py:server", "--port", str(port)]
    with process(command, "MCP endpoint at"):
        result = CliRunner().invoke(main, ["inspect", "--no-auth", "--url", f"http://127.0.0.1:{port}/"])
    assert result.exit_code == 1
    assert "no MCP endpoint is at that URL" in result.output and f"http://127.0.0.1:{port}/mcp" in result.output
    assert "protocol version" not in result.output


def test_run_http_logs_the_endpoints_url_with_its_path() -> None:
    from mcpgen.runtime.server.http.run import endpoint_url

    assert endpoint_url("127.0.0.1", 8000, "/mcp") == "http://127.0.0.1:8000/mcp"
    assert endpoint_url("::1", 8000, "/api/mcp") == "http://[::1]:8000/api/mcp"
    assert endpoint_url("0.0.0.0", 80, None) == "http://0.0.0.0:80/"


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


PROTECTED = """
from mcpgen.runtime import Server
from mcpgen.runtime.auth import AuthInfo, InvalidToken, ProtectedResource


class OneToken:
    async def verify(self, token: str) -> AuthInfo:
        if token != "let-me-in":
            raise InvalidToken("unknown token")
        return AuthInfo(token=token, client_id="c", subject="alice", scopes=frozenset({"read"}))


server = Server("vault")
server.add_tool(lambda: "hello", name="hello")
server.http_auth = ProtectedResource(
    resource="http://127.0.0.1/mcp", authorization_servers=["https://auth.example.com"], verifier=OneToken()
)
"""


@pytest.mark.anyio
async def test_a_server_made_protected_is_served_protected_by_the_worker_factory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "protected_here.py").write_text(PROTECTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MCPGEN_SERVER", "protected_here:server")
    app = app_factory()
    message = request(1, "tools/call", {"name": "hello", "arguments": {}, "_meta": meta()})
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    headers.update(modern_headers("tools/call", "hello"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        refused = await http.post("/mcp", json=message, headers=headers)
        assert refused.status_code == 401
        assert (
            'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"'
            in (refused.headers["www-authenticate"])
        )
        document = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert document["authorization_servers"] == ["https://auth.example.com"]
        allowed = await http.post("/mcp", json=message, headers={**headers, "authorization": "Bearer let-me-in"})
        assert allowed.json()["result"]["content"][0]["text"] == "hello"
    open_app = app.server.http_app(auth=None)  # explicitly unprotected
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=open_app), base_url="http://127.0.0.1") as http:
        assert (await http.post("/mcp", json=message, headers=headers)).status_code == 200


@pytest.mark.parametrize(("given", "expected"), [([], 30), (["--healthcheck-timeout", "45"], 45)])
def test_mcpgen_serve_workers_gives_its_workers_a_health_check_a_loaded_machine_can_meet(
    monkeypatch: pytest.MonkeyPatch, given: list[str], expected: int
) -> None:
    """Defect: under load, uvicorn's supervisor replaced `mcpgen serve --workers` workers still
    starting, because they missed its 5 s health check; the supervisor now gets 30 s (or the
    option's value) on a socket bound with the command's port."""
    import uvicorn.supervisors
    from click.testing import CliRunner
    from mcpgen.runtime.cli.serve import serve

    seen: list[tuple[int, int, int]] = []

    class Supervisor:  # stands in for uvicorn's Multiprocess: records what it was given
        def __init__(self, config: uvicorn.Config, sockets: list[object]) -> None:
            seen.append((config.workers or 0, config.timeout_worker_healthcheck, len(sockets)))

        def run(self) -> None:
            pass

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", Supervisor)
    port = free_port()
    args = ["examples/everything_server.py:server", "--port", str(port), "--workers", "2", *given]
    result = CliRunner().invoke(serve, args)
    assert result.exit_code == 0, result.output
    assert seen == [(2, expected, 1)]
