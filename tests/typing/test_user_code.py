"""The user-style server and client (type-checked strictly by .ci/typecheck) also run as written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcpgen.runtime import Client, MissingClientCapability, stdio

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "user_server.py")]

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_the_user_client_runs_against_the_user_server(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(HERE))
    try:
        import user_client
    finally:
        sys.path.remove(str(HERE))
    await user_client.main(SERVER)
    out = capsys.readouterr().out
    assert "2026-07-28 modern" in out
    assert "deleted x" in out  # the elicitation round trip, written once for both eras
    assert "True counted to 3 (as a task)" in out and "enrolled in python" in out


async def test_tools_that_ask_for_input_publish_only_their_own_output() -> None:
    async with Client(stdio(SERVER), mode="handshake") as client:
        tools = {tool.name: tool async for tool in client.tools()}
        assert tools["delete"].output_schema is None, "`-> str`: text, no structured output"
        assert "InputRequired" not in json.dumps(tools["delete"].model_dump(mode="json"))
        assert tools["add"].output_schema is not None
        with pytest.raises(MissingClientCapability, match="elicitation"):  # no elicitation handler declared
            await client.call_tool("delete", {"item": "y"})


async def test_the_user_toolkit_server_runs_as_written() -> None:
    sys.path.insert(0, str(HERE))
    try:
        import user_toolkit
    finally:
        sys.path.remove(str(HERE))
    stats = user_toolkit.timing.stats.get("tools/call lookup")
    before = stats.count if stats else 0
    seen = await user_toolkit.main()
    assert seen[0] == "chart,count,crash,lookup,raw,report", "`wipe` needs a scope the caller lacks"
    assert "text='A'" in seen[1], "the second `lookup` replaced the first"
    assert seen[2] == "{'result': 1}", "the generator provider's view of the lifespan's database"
    assert seen[3] == "crash is_error=True"
    assert seen[4] == "text image audio resource"
    assert seen[5].startswith("not found -32")
    assert "modern tools/call crash" in user_toolkit.audit.seen
    assert user_toolkit.timing.stats["tools/call lookup"].count == before + 1
