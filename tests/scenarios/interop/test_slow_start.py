"""Clients against servers that take seconds to start: in `mode="auto"` start-up never counts
against the probe, so a server that speaks the modern era is never downgraded or refused; with a
modern version pinned (nothing is sent to connect) it never counts against the first call's
request timeout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcpgen.runtime import Client, Timeouts

pytestmark = pytest.mark.anyio
SUPPORT = Path(__file__).resolve().parents[2] / "support"
EXAMPLES = SUPPORT.parent.parent / "examples"
DELAY = 5.0


def delayed(script: Path) -> list[str]:
    """Run `script` as a stdio server after sleeping `DELAY` seconds (a slow start)."""
    return [
        sys.executable,
        "-c",
        f"import runpy, sys, time; time.sleep({DELAY}); sys.argv = [{str(script)!r}]; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')",
    ]


async def _adopts_modern(script: Path) -> None:
    async with Client(delayed(script), mode="auto", timeouts=Timeouts(probe=1.0, request=60)) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.era == "modern"
        tools = [tool.name async for tool in client.tools()]
        assert tools, "the session works after the slow start"


async def test_auto_mode_adopts_the_modern_era_of_mcpgens_slow_starting_dual_era_server() -> None:
    await _adopts_modern(EXAMPLES / "everything_server.py")


@pytest.mark.parametrize(
    "anyio_backend", ["asyncio"]
)  # the server runs in its own process: one client backend suffices
async def test_auto_mode_adopts_the_modern_era_of_the_official_slow_starting_server(anyio_backend: str) -> None:
    await _adopts_modern(SUPPORT / "official_server.py")


async def test_a_modern_pin_waits_for_a_slow_starting_server_on_its_first_call() -> None:
    """The server starts after `DELAY` seconds, longer than a request may take: the first call still
    gets its answer (it may take until `Timeouts.startup`, not just `Timeouts.request`)."""
    server = delayed(EXAMPLES / "everything_server.py")
    async with Client(server, mode="2026-07-28", timeouts=Timeouts(request=DELAY / 2, startup=60)) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
