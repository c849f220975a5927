"""Transports: stdio process lifecycle and framing, on asyncio and trio."""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from mcpgen.runtime import Client, ConnectionClosed
from mcpgen.runtime.core.stdio import stdio_client
from mcpgen.runtime.core.transport import Frame, Outgoing

pytestmark = pytest.mark.anyio

STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)   # ignores the polite ways to stop
sys.stdin.read()                                 # even after stdin closes...
time.sleep(600)                                  # ...it stays
"""


async def test_stdio_client_kills_a_server_that_will_not_stop() -> None:
    started = time.monotonic()
    async with stdio_client(sys.executable, ["-c", STUBBORN], shutdown_timeout=0.3) as transport:
        pid = transport.pid
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)  # the process is gone (reaped)


async def test_stdio_client_lets_a_polite_server_exit_on_eof() -> None:
    script = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
    async with stdio_client(sys.executable, ["-c", script]) as transport:
        await transport.send.send(Outgoing(b'{"echo": 1}', message={"echo": 1}))
        with anyio.fail_after(5):
            assert await transport.receive.receive() == Frame(b'{"echo": 1}')


async def test_a_server_that_dies_mid_request_fails_the_pending_call() -> None:
    script = "import sys\nsys.stdin.readline()\nsys.exit(1)\n"
    with pytest.raises(ConnectionClosed):
        async with Client([sys.executable, "-c", script], mode="2026-07-28") as client:
            await client.list_tools()


async def test_embedded_newlines_never_split_a_stdio_message() -> None:
    script = (
        "import sys\nline = sys.stdin.readline()\n"
        "sys.stdout.write(str(line.count(chr(10))) + chr(10))\nsys.stdout.flush()\n"
    )
    async with stdio_client(sys.executable, ["-c", script]) as transport:
        await transport.send.send(Outgoing(b'{"a": "x\ny"}', message={"a": "x\ny"}))
        with anyio.fail_after(5):
            assert await transport.receive.receive() == Frame(b"1")
