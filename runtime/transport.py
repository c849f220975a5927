"""Transports: a pair of anyio message streams carrying one JSON-RPC message per item.

`Transport.receive` yields `bytes` (one message) or `Oversized` (a message over the size limit
was dropped, without buffering it); `Transport.send` takes `bytes`. A transport knows nothing of
JSON-RPC, which keeps Streamable HTTP (a later issue) a matter of producing these two streams.

- `memory_pair()`: two connected in-process transports.
- `stdio_client(command, ...)`: spawn a server process and talk over its stdin/stdout
  (newline-delimited); on exit close stdin, wait, then terminate and kill if it will not stop.
- `stdio_server()`: serve over this process's stdin/stdout (logs belong on stderr).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream, Process

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Oversized:
    """A message longer than the limit arrived and was discarded."""

    size_at_least: int
    limit: int


Frame = bytes | Oversized


@dataclass
class Transport:
    """One end of a connection: frames in, frames out."""

    receive: ObjectReceiveStream[Frame]
    send: ObjectSendStream[bytes]
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    info: dict[str, Any] = field(default_factory=dict)

    async def aclose(self) -> None:
        await self.send.aclose()
        await self.receive.aclose()


def memory_pair(
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, buffer: float = math.inf
) -> tuple[Transport, Transport]:
    """Two connected transports (client end, server end), in process."""
    a_send, b_receive = anyio.create_memory_object_stream[Frame](buffer)
    b_send, a_receive = anyio.create_memory_object_stream[Frame](buffer)
    return (
        Transport(a_receive, a_send, max_message_bytes, {"kind": "memory"}),
        Transport(b_receive, b_send, max_message_bytes, {"kind": "memory"}),
    )


class LineSplitter:
    """Cut a byte stream into newline-delimited messages, never holding more than `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._discarding = False
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[Frame]:
        out: list[Frame] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            if self._discarding:
                self._dropped += end - start
            else:
                self._buf += chunk[start:end]
                if len(self._buf) > self.limit:
                    self._discarding = True
                    self._dropped = len(self._buf)
                    self._buf.clear()
            if nl < 0:
                return out
            if self._discarding:
                out.append(Oversized(self._dropped, self.limit))
                self._discarding = False
                self._dropped = 0
            else:
                line = bytes(self._buf).strip()
                if line:
                    out.append(line)
            self._buf.clear()
            start = nl + 1

    def finish(self) -> list[Frame]:
        """What is left at end of stream (a last message without its newline)."""
        out: list[Frame] = []
        if self._discarding:
            out.append(Oversized(self._dropped, self.limit))
        elif self._buf.strip():
            out.append(bytes(self._buf).strip())
        self._buf.clear()
        return out


async def _pump_lines(source: ByteReceiveStream, sink: ObjectSendStream[Frame], limit: int) -> None:
    splitter = LineSplitter(limit)
    async with sink:
        try:
            async for chunk in source:
                for frame in splitter.feed(chunk):
                    await sink.send(frame)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        for frame in splitter.finish():
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await sink.send(frame)


async def _pump_writes(
    source: ObjectReceiveStream[bytes], sink: ByteSendStream, done: anyio.Event | None = None
) -> None:
    try:
        await _write_all(source, sink)
    finally:
        if done is not None:
            done.set()


async def _write_all(source: ObjectReceiveStream[bytes], sink: ByteSendStream) -> None:
    async with source:
        try:
            async for frame in source:
                if b"\n" in frame:  # stdio messages must not contain embedded newlines
                    frame = frame.replace(b"\n", b"\\n")
                await sink.send(frame + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            with suppress(Exception):
                await sink.aclose()


@asynccontextmanager
async def stdio_client(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 2.0,
) -> AsyncIterator[Transport]:
    """Spawn `command args` and yield a transport over its stdin/stdout.

    The child's stderr goes to ours unless `stderr` says otherwise (e.g. `subprocess.DEVNULL`).
    On exit: stdin is closed (the polite stop for a stdio server), then after `shutdown_timeout`
    the process is terminated, then killed.
    """
    full_env = {**os.environ, **(env or {})}
    process: Process = await anyio.open_process(
        [command, *args], env=full_env, cwd=cwd, stderr=stderr if stderr is not None else sys.stderr
    )
    assert process.stdout is not None and process.stdin is not None
    in_send, in_receive = anyio.create_memory_object_stream[Frame](64)
    out_send, out_receive = anyio.create_memory_object_stream[bytes](64)
    transport = Transport(in_receive, out_send, max_message_bytes, {"kind": "stdio", "pid": process.pid})
    drained = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump_lines, process.stdout, in_send, max_message_bytes)
            tg.start_soon(_pump_writes, out_receive, process.stdin, drained)
            try:
                yield transport
            finally:
                # Let queued messages reach the child (the writer then closes its stdin), wait for it to go.
                await out_send.aclose()
                with anyio.move_on_after(shutdown_timeout, shield=True):
                    await drained.wait()
                await _stop(process, shutdown_timeout)
                tg.cancel_scope.cancel()
    finally:
        with suppress(Exception):
            await in_receive.aclose()


async def _stop(process: Process, timeout: float) -> None:
    with anyio.CancelScope(shield=True):
        with suppress(Exception):
            if process.stdin is not None:
                await process.stdin.aclose()
        with anyio.move_on_after(timeout):
            await process.wait()
            return
        with suppress(ProcessLookupError):
            process.terminate()
        with anyio.move_on_after(timeout):
            await process.wait()
            return
        with suppress(ProcessLookupError):
            process.kill()
        await process.wait()


class _Fd:
    """A descriptor of this process (stdin or stdout) used without blocking.

    On POSIX it is made non-blocking and waited on through the event loop, so nothing blocks
    in a thread: the process can exit whenever serving ends, even while the client keeps the
    pipe open. Elsewhere a worker thread does the blocking call. `close` restores the mode.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._polled = os.name == "posix"
        self._was_blocking = os.get_blocking(fd) if self._polled else True
        if self._polled:
            os.set_blocking(fd, False)

    def close(self) -> None:
        if self._polled and self._was_blocking:
            with suppress(OSError):
                os.set_blocking(self._fd, True)


class _FileReceive(_Fd, ByteReceiveStream):
    """This process's stdin as a byte stream."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._polled:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    continue
            else:  # pragma: no cover - non-POSIX
                data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        self.close()


class _FileSend(_Fd, ByteSendStream):
    """This process's stdout as a byte stream."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._polled:
                try:
                    written = os.write(self._fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
                    continue
            else:  # pragma: no cover - non-POSIX
                written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            view = view[written:]

    async def aclose(self) -> None:
        self.close()


@asynccontextmanager
async def stdio_server(
    *, stdin_fd: int | None = None, stdout_fd: int | None = None, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> AsyncIterator[Transport]:
    """A transport over this process's stdin/stdout, newline-delimited.

    Nothing else may write to stdout while it runs: log to stderr.
    """
    in_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
    out_fd = sys.stdout.fileno() if stdout_fd is None else stdout_fd
    in_send, in_receive = anyio.create_memory_object_stream[Frame](64)
    out_send, out_receive = anyio.create_memory_object_stream[bytes](64)
    transport = Transport(in_receive, out_send, max_message_bytes, {"kind": "stdio"})
    source, sink = _FileReceive(in_fd), _FileSend(out_fd)
    try:
        async with anyio.create_task_group() as writer:
            writer.start_soon(_pump_writes, out_receive, sink)
            async with anyio.create_task_group() as reader:
                reader.start_soon(_pump_lines, source, in_send, max_message_bytes)
                try:
                    yield transport
                finally:
                    reader.cancel_scope.cancel()
            await out_send.aclose()  # the writer drains what is queued, then ends
    finally:
        await source.aclose()
        await sink.aclose()


__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Frame",
    "LineSplitter",
    "Oversized",
    "Transport",
    "memory_pair",
    "stdio_client",
    "stdio_server",
]
