"""Helpers for runtime tests: a raw peer that speaks bytes, and a connected client/server pair."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcpgen.runtime import Client, Server, memory_pair
from mcpgen.runtime.core.transport import Frame, Transport

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

V25 = "2025-11-25"
V26 = "2026-07-28"


def meta(version: str = V26, caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": caps or {},
    }


class RawPeer:
    """The other end of a transport, driven message by message."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    async def send_raw(self, data: bytes) -> None:
        """Bytes as they would arrive on a pipe (not necessarily JSON: the session decodes them)."""
        await self.transport.send.send(Frame(data))  # type: ignore[arg-type]  # a raw peer sends what it likes

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode())

    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            frame = await self.transport.receive.receive()
        assert isinstance(frame, Frame)
        message: dict[str, Any] = json.loads(frame.data)
        return message

    async def request(self, id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            reply = await self.receive()
            if "method" not in reply:
                return reply

    async def nothing_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self.transport.receive.receive()
            return False
        return True


@asynccontextmanager
async def raw_server(server: Server, **options: Any) -> AsyncIterator[RawPeer]:
    client_end, server_end = memory_pair(**options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        yield RawPeer(client_end)
        tg.cancel_scope.cancel()


@asynccontextmanager
async def connected(server: Server, **client_options: Any) -> AsyncIterator[Client]:
    """A client connected to `server` in memory; errors come out unwrapped from the task group."""
    client_end, server_end = memory_pair()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Client(client_end, **client_options) as client:
                yield client
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
