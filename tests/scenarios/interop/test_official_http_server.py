"""Interop over Streamable HTTP: our client against the official SDK's server (`mcp` under uvicorn, in
a subprocess), in each negotiation mode, with SSE and with JSON answers; elicitation and a two-round
call; and `mcpgen inspect|call --url`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcpgen.runtime import Client, InputHandlers, Timeouts

pytestmark = pytest.mark.anyio
SUPPORT = Path(__file__).resolve().parents[2] / "support"
SERVER = SUPPORT / "official_http_server.py"
EXPECTED = {"auto": "2026-07-28", "handshake": "2025-11-25", "2026-07-28": "2026-07-28"}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _serve(*options: str) -> Iterator[str]:
    process = subprocess.Popen([sys.executable, str(SERVER), *options], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())  # printed once the socket listens
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def sse_server() -> Iterator[str]:
    yield from _serve()


@pytest.fixture(scope="module")
def json_server() -> Iterator[str]:
    yield from _serve("--json")


async def answer(params: Any) -> dict[str, Any]:
    """The user: confirms, is called Ada, likes blue."""
    message = params.message
    if "name" in message:
        return {"action": "accept", "content": {"name": "Ada"}}
    if "colour" in message:
        return {"action": "accept", "content": {"colour": "blue"}}
    return {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_our_client_against_the_official_http_server(sse_server: str, mode: str) -> None:
    progress: list[float] = []
    async with Client(
        sse_server, mode=mode, inputs=InputHandlers(elicitation=answer), timeouts=Timeouts(request=30)
    ) as client:
        assert client.protocol_version == EXPECTED[mode]
        assert {t.name async for t in client.tools()} == {"add", "protocol_info", "count", "delete", "preference"}
        assert (await client.call_tool("add", {"a": 2, "b": 40})).structured_content == {"result": 42}
        served = await client.call_tool("protocol_info")
        assert served.content[0].text == EXPECTED[mode], "the server saw the version we negotiated"
        counted = await client.call_tool("count", {"upto": 3}, progress=lambda done, total, note: progress.append(done))
        assert counted.content[0].text == "done"
        assert progress == [1.0, 2.0, 3.0], "notifications on the request's stream reach the call"
        deleted = await client.call_tool("delete", {"item": "report"})
        assert deleted.content[0].text == "deleted report (ok=True)"
        liked = await client.call_tool("preference")  # the second question needs the first answer
        assert liked.content[0].text == "Ada likes blue"


@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_json_answers(json_server: str, mode: str) -> None:
    async with Client(
        json_server, mode=mode, inputs=InputHandlers(elicitation=answer), timeouts=Timeouts(request=30)
    ) as client:
        assert client.protocol_version == EXPECTED[mode]
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        if EXPECTED[mode] == "2026-07-28":  # input rides the results: no stream needed
            assert (await client.call_tool("preference")).content[0].text == "Ada likes blue"


def _mcpgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.codegen.cli", *args], check=False, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_the_cli_over_http(sse_server: str, mode: str, anyio_backend: str) -> None:
    inspected = _mcpgen("inspect", "--url", sse_server, "--mode", mode, "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["protocol_version"] == EXPECTED[mode]
    assert report["server_info"]["name"] == "official-http-peer"
    assert {t["name"] for t in report["tools"]} >= {"add", "count"}
    called = _mcpgen("call", "add", "--args", '{"a": 20, "b": 22}', "--url", sse_server, "--mode", mode, "--json")
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["structuredContent"] == {"result": 42}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_cli_explains_an_unreachable_url(anyio_backend: str) -> None:
    failed = _mcpgen("inspect", "--url", "http://127.0.0.1:9/mcp")
    assert failed.returncode == 1
    assert "no answer from http://127.0.0.1:9/mcp" in failed.stderr and "Traceback" not in failed.stderr
    both = _mcpgen("inspect", "--url", "http://127.0.0.1:9/mcp", "--", "python", "server.py")
    assert both.returncode == 2 and "not both" in both.stderr
