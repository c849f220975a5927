"""The app under real servers: uvicorn on asyncio, hypercorn on trio, spoken to by httpx over TCP."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx
import pytest
from mcpgen.runtime import RequestContext, Server
from support.asgi_driver import V25, meta, modern_headers, request
from support.live import live

pytestmark = pytest.mark.anyio
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def make_server() -> Server:
    server = Server("live-test")

    @server.tool()
    async def count(ctx: RequestContext, n: int) -> str:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return f"counted {n}"

    return server


def sse_messages(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line[6:].strip()]


async def test_both_eras_over_a_real_socket() -> None:
    async with live(make_server()) as (url, _), httpx.AsyncClient(timeout=30) as http:
        params = {"name": "count", "arguments": {"n": 2}, "_meta": {**meta(), "progressToken": "p"}}
        modern = await http.post(
            url, json=request(1, "tools/call", params), headers={**HEADERS, **modern_headers("tools/call", "count")}
        )
        assert modern.status_code == 200 and modern.headers["content-type"] == "text/event-stream"
        messages = sse_messages(modern.text)
        assert [m.get("method") for m in messages] == ["notifications/progress"] * 2 + [None]
        assert messages[-1]["result"]["content"][0]["text"] == "counted 2"
        init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        opened = await http.post(url, json=request(0, "initialize", init), headers=HEADERS)
        sid = opened.headers["mcp-session-id"]
        session = {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": V25}
        assert (
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        ).status_code == 202
        legacy = await http.post(
            url, json=request(1, "tools/call", {"name": "count", "arguments": {"n": 1}}), headers=session
        )
        assert legacy.json()["result"]["content"][0]["text"] == "counted 1"
        assert (await http.delete(url, headers=session)).status_code == 200
        evil = await http.post(
            url, json=request(2, "tools/list", {"_meta": meta()}), headers={**HEADERS, "host": "evil.example.com"}
        )
        assert evil.status_code == 421


async def test_shutdown_ends_listen_streams_with_their_result() -> None:
    async with live(make_server()) as (url, stop), httpx.AsyncClient(timeout=30) as http:
        params = {"notifications": {"toolsListChanged": True}, "_meta": meta()}
        body = request("sub", "subscriptions/listen", params)
        async with http.stream(
            "POST", url, json=body, headers={**HEADERS, **modern_headers("subscriptions/listen")}
        ) as stream:
            lines = stream.aiter_lines()
            async for line in lines:
                if line.startswith("data: "):
                    assert json.loads(line[6:])["method"] == "notifications/subscriptions/acknowledged"
                    break
            stop.set()  # the server shuts down: the stream ends with the listen result
            rest = [json.loads(line[6:]) async for line in lines if line.startswith("data: ")]
        assert rest == [{"jsonrpc": "2.0", "id": "sub", "result": rest[0]["result"]}]
        assert rest[0]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"


async def test_closing_the_response_cancels_the_handler() -> None:
    server = make_server()
    started, cancelled = anyio.Event(), anyio.Event()

    @server.tool()
    async def hang(ctx: RequestContext) -> str:
        await ctx.report_progress(1)
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    async with live(server) as (url, _), httpx.AsyncClient(timeout=30) as http:
        params = {"name": "hang", "arguments": {}, "_meta": {**meta(), "progressToken": 1}}
        headers = {**HEADERS, **modern_headers("tools/call", "hang")}
        async with http.stream("POST", url, json=request(1, "tools/call", params), headers=headers) as stream:
            assert stream.status_code == 200
            await started.wait()
        with anyio.fail_after(10):
            await cancelled.wait()


@pytest.mark.parametrize("keepalive", [None, 15.0])
async def test_hanging_up_on_a_handler_that_sent_nothing_cancels_it(keepalive: float | None) -> None:
    """The POST's watcher starts only once the handler has run a while (on asyncio): a client
    that hangs up before any byte of the response still cancels the handler."""
    server = make_server()
    started, cancelled = anyio.Event(), anyio.Event()

    @server.tool()
    async def silent() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    async with live(server, keepalive=keepalive) as (url, _):
        port = int(url.split(":")[2].split("/")[0])
        body = json.dumps(request(1, "tools/call", {"name": "silent", "arguments": {}, "_meta": meta()})).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: silent\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(head + body)
            await started.wait()
        with anyio.fail_after(10):  # a hang guard: the watcher sees the hang-up within WATCH_AFTER
            await cancelled.wait()


@pytest.mark.parametrize("protocol", ["h11", "httptools"])
async def test_header_values_are_read_without_trailing_whitespace(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httptools hands header values over with the whitespace that trails them (h11 strips it):
    the routing headers of a call are read the same on either protocol."""
    from mcpgen.runtime.server.http import protocols

    if protocol == "httptools":
        pytest.importorskip("httptools")
    monkeypatch.setattr(protocols, "http_protocol", lambda: protocols.H11 if protocol == "h11" else protocols.HTTPTOOLS)
    async with live(make_server()) as (url, _):
        port = int(url.split(":")[2].split("/")[0])
        params = {"name": "count", "arguments": {"n": 1}, "_meta": meta()}
        body = json.dumps(request(1, "tools/call", params)).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json  \r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28  \r\n"
            f"Mcp-Method: tools/call  \r\nMcp-Name: count \t\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(head + body)
            answer = b""
            with anyio.fail_after(20):  # a hang guard: until the result (or the connection's end)
                while b"counted 1" not in answer:
                    try:
                        answer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        break
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert b"counted 1" in answer


async def read_until_closed(stream: anyio.abc.SocketStream) -> bytes:
    """Everything the server writes until it closes the connection."""
    received = b""
    while True:
        try:
            received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return received


async def trickle(stream: anyio.abc.SocketStream, data: bytes) -> None:
    """Send `data` a byte at a time (as a slowloris client does), until done or cut off."""
    for byte in data:
        try:
            await stream.send(bytes([byte]))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        await anyio.sleep(0.05)


@pytest.mark.parametrize("protocol", ["h11", "httptools"])
@pytest.mark.parametrize("slow", ["head", "body"])
async def test_a_client_that_sends_a_byte_at_a_time_loses_its_connection(
    slow: str, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect: the server never closed a connection that sent its headers, or its body, a byte at
    a time (200 slowloris and 100 slow-body connections stayed open). On asyncio uvicorn runs
    either of its HTTP/1.1 protocols (httptools when installed), each with the head deadline."""
    from mcpgen.runtime.server.http import protocols
    from mcpgen.runtime.server.http.security import HttpSecurity

    if protocol == "httptools":
        pytest.importorskip("httptools")
    monkeypatch.setattr(protocols, "http_protocol", lambda: protocols.H11 if protocol == "h11" else protocols.HTTPTOOLS)

    security = HttpSecurity(header_timeout=0.5, body_timeout=0.5)
    async with live(make_server(), security=security) as (url, _):
        port = int(url.split(":")[2].split("/")[0])
        body = json.dumps(request(1, "tools/list", {"_meta": meta()})).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/list\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream, anyio.create_task_group() as tg:
            if slow == "head":
                tg.start_soon(trickle, stream, head)
            else:
                await stream.send(head)
                tg.start_soon(trickle, stream, body)
            with anyio.fail_after(20):  # a hang guard: the server cuts the connection after 0.5 s
                answer = await read_until_closed(stream)
            tg.cancel_scope.cancel()
        if slow == "body":
            assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        else:  # cut off before its head was complete: no request, so no answer (not a 408 for the body)
            assert answer == b"", answer[:100]


@pytest.mark.parametrize("protocol", ["h11", "httptools"])
async def test_a_pipelined_request_slower_than_the_head_deadline_is_answered(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect: when a response completed with a request pipelined behind it already being served,
    the head deadline was armed again as if the connection were idle, and closed it (that request
    unanswered) when its handler took longer than the deadline."""
    from mcpgen.runtime.server.http import protocols
    from mcpgen.runtime.server.http.security import HttpSecurity

    if protocol == "httptools":
        pytest.importorskip("httptools")
    monkeypatch.setattr(protocols, "http_protocol", lambda: protocols.H11 if protocol == "h11" else protocols.HTTPTOOLS)
    server = Server("live-test")

    @server.tool()
    async def slow() -> str:
        await anyio.sleep(1.5)  # three head deadlines: the time must pass, whatever the load
        return "done"

    async with live(server, security=HttpSecurity(header_timeout=0.5)) as (url, _):
        port = int(url.split(":")[2].split("/")[0])

        def post(message: dict[str, Any], method: str, name: str | None = None) -> bytes:
            body = json.dumps(message).encode()
            named = f"Mcp-Name: {name}\r\n" if name else ""
            return (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                f"Mcp-Method: {method}\r\n{named}Content-Length: {len(body)}\r\n\r\n"
            ).encode() + body

        first = post(request(1, "tools/list", {"_meta": meta()}), "tools/list")
        second = post(
            request(2, "tools/call", {"name": "slow", "arguments": {}, "_meta": meta()}), "tools/call", "slow"
        )
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(first + second)  # both at once: the second is pipelined
            received = b""
            with anyio.fail_after(30):  # a hang guard
                while received.count(b"HTTP/1.1 200") < 2 or b'"done"' not in received:
                    try:
                        received += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        break
        assert received.count(b"HTTP/1.1 200") == 2 and b"done" in received, received[-300:]


def test_a_trio_being_imported_by_another_thread_is_not_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: a server started in a thread while another thread imported trio (httpcore does, on
    `import httpx`) found the half-made module in sys.modules and failed with AttributeError."""
    import types

    from mcpgen.runtime.server.http.run import running_on_trio

    monkeypatch.setitem(sys.modules, "trio", types.ModuleType("trio"))  # as while its import runs
    assert running_on_trio() is False


class Recording:
    """A transport that keeps what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        if data:  # (asyncio's transports write nothing for nothing)
            self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_response_head_is_written_with_its_body_or_on_the_next_turn(anyio_backend: str) -> None:
    """uvicorn writes a response's head and its body one after the other: two system calls, two
    TCP segments. mcpgen serve's protocols write a new request's response head with the write that
    follows it at once, or on the loop's next turn when none does (an SSE head, `100 Continue`),
    and before the connection closes."""
    import asyncio

    from mcpgen.runtime.server.http.protocols import OneWriteHead

    head, sse_head = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n"
    transport = Recording()
    writes = OneWriteHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    writes.hold = True
    writes.write(head)
    assert transport.writes == []
    writes.write(b"BODY")
    writes.write(b"")
    assert transport.writes == [head + b"BODY"]
    writes.write(b"MORE")  # the rest of the response passes through
    assert transport.writes[-1] == b"MORE"
    await asyncio.sleep(0)
    assert transport.writes == [head + b"BODY", b"MORE"]  # (nothing held: nothing more written)

    writes.hold = True
    writes.write(sse_head)
    await asyncio.sleep(0)  # the loop's next turn: a head that nothing followed goes out alone
    assert transport.writes[-1] == sse_head
    writes.write(b"EVENT")
    assert transport.writes[-2:] == [sse_head, b"EVENT"]

    # A request pipelined while a stream is open: the stream's next chunk is no head (even one
    # that reads like a header) and goes out at once; the next head is the one held.
    writes.hold = True
    writes.write(b"data: Content-Length: 5\n\n")
    assert transport.writes[-1] == b"data: Content-Length: 5\n\n"
    writes.write(head)
    assert transport.writes[-1] == b"data: Content-Length: 5\n\n"
    writes.write(b"BODY")
    assert transport.writes[-1] == head + b"BODY"

    writes.hold = True  # a head with a length waits for its body (no turn of the loop spent on it)...
    writes.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    await asyncio.sleep(0)
    assert transport.writes[-1] == head + b"BODY"
    writes.flush()  # ...or for the response to be complete (the protocol flushes then)
    assert transport.writes[-1] == b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    writes.hold = True
    writes.write(sse_head)
    writes.close()
    assert transport.writes[-1] == sse_head and transport.closed


async def test_a_stream_without_a_first_event_gets_its_head() -> None:
    """A standalone GET stream with no priming event (no event store, no retry) and no keep-alive
    sends its head and then nothing until an event: the client sees the stream open (the held head
    is written on the loop's next turn, not kept for a body that does not come)."""
    async with (
        live(make_server(), event_store=None, retry_ms=None, keepalive=None) as (url, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        opened = await http.post(url, json=request(0, "initialize", init), headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": V25}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        with anyio.fail_after(10):  # a hang guard: the head comes at once
            async with http.stream("GET", url, headers={**session, "accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"] == "text/event-stream"


@pytest.mark.parametrize("access_log", [False, True])
async def test_serve_http_logs_a_line_per_request_only_when_asked(
    access_log: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """No line per request by default (uvicorn logs one unless told not to; hypercorn does not),
    one with `access_log`, on either ASGI server."""
    from mcpgen.runtime.server.http.run import bind, serve_http

    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: serve_http(
                make_server().http_app(), sockets=[sock], shutdown=stop, log_level="info", access_log=access_log
            )
        )
        try:
            async with httpx.AsyncClient(timeout=30) as client:
                body = request(1, "tools/call", {"name": "count", "arguments": {"n": 0}, "_meta": meta()})
                headers = {**HEADERS, **modern_headers("tools/call", "count")}
                reply = await client.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
                assert reply.json()["result"]["content"][0]["text"] == "counted 0"
        finally:
            stop.set()
    sock.close()
    out, err = capsys.readouterr()
    logged = [line for line in (out + err).splitlines() if "POST /mcp" in line]
    assert bool(logged) is access_log, out + err
