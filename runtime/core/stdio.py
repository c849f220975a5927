"""stdio: newline-delimited JSON-RPC over a child process's pipes or this process's stdin/stdout.

- `stdio_client(command, args, ...)`: spawn a server and talk over its stdin/stdout; on exit
  close stdin, wait, then terminate and kill if it will not stop.
- `stdio_server()`: serve over this process's stdin/stdout (logs belong on stderr).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream, Process

from .pipe import pipe
from .transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    HEAD_BYTES,
    Frame,
    Inbound,
    Outgoing,
    Oversized,
    Transport,
    TransportContext,
)

STDIO = TransportContext("stdio")


class LineSplitter:
    """Cut a byte stream into newline-delimited messages, never holding more than `limit` bytes
    (of a longer line only its first `HEAD_BYTES` are kept, to read its id)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._head = b""
        self._discarding = False
        self._dropped = 0

    @property
    def buffered(self) -> int:
        """Bytes held for the message being read."""
        return len(self._buf) + len(self._head)

    def feed(self, chunk: bytes) -> list[Inbound]:
        out: list[Inbound] = []
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
                    self._head = bytes(self._buf[:HEAD_BYTES])
                    self._buf.clear()
            if nl < 0:
                return out
            out.extend(self._take())
            start = nl + 1

    def _take(self) -> list[Inbound]:
        if self._discarding:
            found: list[Inbound] = [Oversized(self._dropped, self.limit, self._head.strip())]
            self._discarding, self._dropped, self._head = False, 0, b""
            return found
        line = bytes(self._buf).strip()
        self._buf.clear()
        return [Frame(line)] if line else []

    def finish(self) -> list[Inbound]:
        """What is left at end of stream (a last message without its newline)."""
        return self._take()


async def _pump_lines(source: ByteReceiveStream, sink: ObjectSendStream[Inbound], limit: int) -> None:
    splitter = LineSplitter(limit)
    async with sink:
        try:
            async for chunk in source:
                for item in splitter.feed(chunk):
                    await sink.send(item)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        for item in splitter.finish():
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await sink.send(item)


async def _pump_writes(
    source: ObjectReceiveStream[Outgoing], sink: ByteSendStream, done: anyio.Event | None = None
) -> None:
    try:
        async with source:
            try:
                async for item in source:
                    frame = item.data
                    if b"\n" in frame:  # stdio messages must not contain embedded newlines
                        frame = frame.replace(b"\n", b"\\n")
                    await sink.send(frame + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            finally:
                with suppress(Exception):
                    await sink.aclose()
    finally:
        if done is not None:
            done.set()


@dataclass
class ProcessTransport(Transport):
    """A transport to a child process (`pid` is the process id)."""

    pid: int = 0


@asynccontextmanager
async def stdio_client(  # noqa: PLR0913 - every keyword is a documented option
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 2.0,
) -> AsyncIterator[ProcessTransport]:
    """Spawn `command args` and yield a transport over its stdin/stdout.

    The child inherits our stderr unless `stderr` says otherwise (e.g. `subprocess.DEVNULL`).
    On exit: stdin is closed (the polite stop for a stdio server), then after `shutdown_timeout`
    seconds the process is terminated, then killed.

    Args:
        command: the program to run.
        args: its arguments.
        env: variables added to this process's environment for the child.
        cwd: the child's working directory (default: ours).
        stderr: where the child's stderr goes (a file descriptor or a `subprocess` constant).
        max_message_bytes: the largest message accepted from the child.
        shutdown_timeout: seconds between closing stdin and terminating the child.
    """
    full_env = {**os.environ, **(env or {})}
    process: Process = await anyio.open_process([command, *args], env=full_env, cwd=cwd, stderr=stderr)
    assert process.stdout is not None and process.stdin is not None
    in_send, in_receive = pipe(64)
    out_send, out_receive = pipe(64)
    transport = ProcessTransport(in_receive, out_send, max_message_bytes, STDIO, pid=process.pid)
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


@dataclass(frozen=True)
class Stdio:
    """A server to spawn and talk to over stdio: `Client(stdio(["python", "server.py"], env=...))`."""

    command: tuple[str, ...]
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    stderr: int | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    shutdown_timeout: float = 2.0

    def connect(self) -> AbstractAsyncContextManager[Transport]:
        return stdio_client(
            self.command[0],
            self.command[1:],
            env=self.env,
            cwd=self.cwd,
            stderr=self.stderr,
            max_message_bytes=self.max_message_bytes,
            shutdown_timeout=self.shutdown_timeout,
        )


def stdio(  # noqa: PLR0913 - every keyword is a documented option
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 2.0,
) -> Stdio:
    """A server command (a list: program and arguments) and how to run it: what `Client` connects
    through (`Client(stdio(["python", "server.py"]))`; a bare list does the same with the defaults).

    Args:
        command: the program and its arguments.
        env: variables added to this process's environment for the server.
        cwd: the server's working directory (default: ours).
        stderr: where the server's stderr goes (default: ours; e.g. `subprocess.DEVNULL`).
        max_message_bytes: the largest message accepted from the server.
        shutdown_timeout: seconds between closing the server's stdin and terminating it.

    Raises:
        TypeError: `command` is not a non-empty list of strings (a string is refused).
    """
    if isinstance(command, str) or not command or not all(isinstance(part, str) for part in command):
        raise TypeError(
            f'a server command is a non-empty list of strings, e.g. ["python", "server.py"], not {command!r}'
        )
    return Stdio(tuple(command), env, cwd, stderr, max_message_bytes, shutdown_timeout)


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

    Args:
        stdin_fd: the file descriptor to read (default: stdin's).
        stdout_fd: the file descriptor to write (default: stdout's).
        max_message_bytes: the largest message accepted.
    """
    in_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
    out_fd = sys.stdout.fileno() if stdout_fd is None else stdout_fd
    in_send, in_receive = pipe(64)
    out_send, out_receive = pipe(64)
    transport = Transport(in_receive, out_send, max_message_bytes, STDIO)
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
