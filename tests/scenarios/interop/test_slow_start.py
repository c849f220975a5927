"""`mode="auto"` against servers that take seconds to start: start-up never counts against the
probe, so a server that speaks the modern era is never downgraded or refused."""

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
