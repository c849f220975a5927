"""examples/conformance_client.py, the client the conformance suite drives, against a scripted HTTP
server: the lifecycle follows MCP_CONFORMANCE_PROTOCOL_VERSION, the scenario decides the calls, and
the process exits 0 when it ran through (1, with a reason, when it did not)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.http_peer import Received, Reply, Script, http_peer

pytestmark = pytest.mark.anyio
CLIENT = Path(__file__).resolve().parents[2] / "examples" / "conformance_client.py"
ADD = {"name": "add_numbers", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}


async def run_client(url: str, scenario: str, version: str, context: dict[str, Any] | None = None) -> tuple[int, str]:
    env = {
        **os.environ,
        "MCP_CONFORMANCE_SCENARIO": scenario,
        "MCP_CONFORMANCE_PROTOCOL_VERSION": version,
        "MCP_CONFORMANCE_CONTEXT": json.dumps(context or {}),
    }
    done = await anyio.run_process([sys.executable, str(CLIENT), url], env=env, check=False)
    return done.returncode, done.stderr.decode()


@pytest.mark.parametrize(("version", "first"), [("2025-11-25", "initialize"), ("2026-07-28", "server/discover")])
async def test_tools_call_in_the_lifecycle_of_the_revision(version: str, first: str) -> None:
    async with http_peer(Script(tools=[ADD])) as peer:
        status, errors = await run_client(peer.url, "tools_call", version)
    assert status == 0, errors
    assert peer.posts()[0].rpc_method == first
    call = peer.posts("tools/call")[0].json["params"]
    assert call["name"] == "add_numbers" and call["arguments"] == {"a": 5, "b": 3}


async def test_request_state_is_echoed_and_a_result_without_result_type_is_complete() -> None:
    tools = [
        {"name": n, "inputSchema": {"type": "object"}} for n in ("test_mrtr_echo_state", "test_mrtr_no_result_type")
    ]
    script = Script(tools=tools)
    ask = {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Sure?",
            "requestedSchema": {"type": "object", "properties": {"confirmed": {"type": "boolean"}}},
        },
    }

    async def handler(request: Received, reply: Reply) -> None:
        params = (request.json.get("params") or {}) if request.method == "POST" else {}
        result: dict[str, Any] | None = None
        if request.rpc_method == "tools/call" and params["name"] == "test_mrtr_echo_state":
            if "inputResponses" not in params:
                result = {
                    "resultType": "input_required",
                    "inputRequests": {"confirm": ask},
                    "requestState": ' {"n": 1} ',
                }
            else:
                result = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        elif request.rpc_method == "tools/call":
            result = {"content": [{"type": "text", "text": "no resultType"}]}
        if result is None:
            await script(request, reply)
        else:
            await reply.json({"jsonrpc": "2.0", "id": request.json["id"], "result": result})

    async with http_peer(handler) as peer:
        status, errors = await run_client(peer.url, "sep-2322-client-request-state", "2026-07-28")
    assert status == 0, errors
    first, retry = [p.json for p in peer.posts("tools/call") if p.json["params"]["name"] == "test_mrtr_echo_state"]
    assert retry["params"]["requestState"] == ' {"n": 1} ' and retry["id"] != first["id"]
    assert retry["params"]["inputResponses"]["confirm"] == {"action": "accept", "content": {"confirmed": True}}


async def test_custom_header_calls_are_replayed_from_the_context() -> None:
    tool = {
        "name": "test_custom_headers",
        "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
    }
    calls = {"toolCalls": [{"name": "test_custom_headers", "arguments": {"region": "Hello, 世界"}}]}
    async with http_peer(Script(tools=[tool])) as peer:
        status, errors = await run_client(peer.url, "http-custom-headers", "2026-07-28", calls)
    assert status == 0, errors
    assert peer.posts("tools/call")[0].headers["mcp-param-region"].startswith("=?base64?")


async def test_a_failing_scenario_exits_1_with_a_reason() -> None:
    async def handler(request: Received, reply: Reply) -> None:
        await reply.send(500, b"down")

    async with http_peer(handler) as peer:
        status, errors = await run_client(peer.url, "tools_call", "2025-11-25")
    assert status == 1
    assert "conformance client (tools_call)" in errors and "HTTP 500" in errors
