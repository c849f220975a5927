"""The Streamable HTTP client transport against a scripted server on a real loopback socket:
what goes on the wire in each era, and how the client recovers from what HTTP servers do."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import anyio
import httpx
import pytest
from mcpgen.runtime import (
    Client,
    ClientChecks,
    ClientHooks,
    ConnectionClosed,
    InputHandlers,
    McpError,
    MethodNotFound,
    NegotiationError,
    RequestTimeout,
)
from mcpgen.runtime.client import subscriptions
from mcpgen.runtime.client.http.connector import http
from mcpgen.runtime.client.subscriptions import RELISTEN_ATTEMPTS
from support.http_peer import Received, Reply, Script, http_peer
from support.leaks import no_unclosed_streams

pytestmark = pytest.mark.anyio
V25, V26 = "2025-11-25", "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"


def result_of(request: Received, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json["id"], "result": result}


# -- the modern era ------------------------------------------------------------------------------


async def test_modern_posts_carry_the_version_and_routing_headers() -> None:
    script = Script(tools=[{"name": "echo", "inputSchema": {"type": "object"}}])
    async with http_peer(script) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        assert client.protocol_version == V26
        assert [t.name async for t in client.tools()] == ["echo"]
        await client.call_tool("echo", {"text": "hi"})
    posts = peer.posts()
    assert [p.rpc_method for p in posts] == ["server/discover", "tools/list", "tools/call"]
    for post in posts:
        body = post.json
        assert post.headers["mcp-protocol-version"] == body["params"]["_meta"][META_VERSION] == V26
        assert post.headers["mcp-method"] == body["method"]
        assert "application/json" in post.headers["accept"] and "text/event-stream" in post.headers["accept"]
        assert post.headers["content-type"] == "application/json"
        assert "mcp-session-id" not in post.headers
    assert "mcp-name" not in posts[1].headers
    assert posts[2].headers["mcp-name"] == "echo"
    assert [r.method for r in peer.requests] == ["POST"] * 3, "no GET stream, no DELETE in the modern era"


async def test_mcp_name_uses_the_base64_form_when_the_value_needs_it() -> None:
    async def handler(request: Received, reply: Reply) -> None:
        message = request.json
        if message["method"] == "server/discover":
            caps = {"resources": {}, "prompts": {}}
            await reply.json(
                result_of(request, {"resultType": "complete", "supportedVersions": [V26], "capabilities": caps})
            )
        elif message["method"] == "resources/read":
            await reply.json(result_of(request, {"resultType": "complete", "contents": []}))
        else:
            await reply.json(result_of(request, {"resultType": "complete", "messages": []}))

    async with http_peer(handler) as peer, Client(peer.url) as client:
        await client.read_resource("file:///a b.txt")
        await client.get_prompt("grüße")
    read, prompt = peer.posts()[1:]
    assert read.headers["mcp-name"] == "file:///a b.txt"
    assert prompt.headers["mcp-name"] == "=?base64?" + base64.b64encode("grüße".encode()).decode() + "?="


TOOLS = [
    {
        "name": "query",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "target": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
                "sql": {"type": "string"},
            },
        },
    },
    {
        "name": "bad_type",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
    },
    {
        "name": "bad_name",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "A B"}}},
    },
    {
        "name": "bad_duplicate",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Id"},
                "b": {"type": "string", "x-mcp-header": "ID"},
            },
        },
    },
    {
        "name": "bad_place",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}},
        },
    },
]


async def test_annotated_arguments_are_mirrored_and_invalid_tools_dropped() -> None:
    async with (
        http_peer(Script(tools=TOOLS)) as peer,
        Client(peer.url, checks=ClientChecks(structured_output=False)) as client,
    ):
        assert [t.name async for t in client.tools()] == ["query"]
        args = {"region": "Hello, 世界", "priority": 42, "verbose": None, "target": {"zone": " z1"}, "sql": "SELECT 1"}
        await client.call_tool("query", args)
    call = peer.posts("tools/call")[0]
    assert call.headers["mcp-param-region"] == "=?base64?" + base64.b64encode("Hello, 世界".encode()).decode() + "?="
    assert call.headers["mcp-param-priority"] == "42"
    assert call.headers["mcp-param-zone"] == "=?base64?IHox?="
    assert "mcp-param-verbose" not in call.headers, "a null value sends no header"
    assert not any(
        h.startswith("mcp-param-") and h not in {"mcp-param-region", "mcp-param-priority", "mcp-param-zone"}
        for h in call.headers
    )


async def test_a_header_mismatch_relists_the_tools_and_calls_again() -> None:
    script = Script(tools=TOOLS[:1])
    calls = 0

    async def handler(request: Received, reply: Reply) -> None:
        nonlocal calls
        if request.rpc_method == "tools/call":
            calls += 1
            if "mcp-param-region" not in request.headers:
                error = {"code": -32020, "message": "Header mismatch: Mcp-Param-Region is missing"}
                await reply.json({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, status=400)
                return
        await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        result = await client.call_tool("query", {"region": "eu"})  # never listed: the transport knows no headers
        assert result.content[0].text == "called query"
    assert [p.rpc_method for p in peer.posts()][1:] == ["tools/call", "tools/list", "tools/call"]
    assert peer.posts("tools/call")[1].headers["mcp-param-region"] == "eu"


async def test_an_unsupported_version_on_an_ordinary_request_is_retried_with_a_supported_one() -> None:
    refused = 0

    async def handler(request: Received, reply: Reply) -> None:
        nonlocal refused
        if refused == 0:
            refused += 1
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": [V26], "requested": V26},
            }
            await reply.json({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, status=400)
            return
        await Script()(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, mode=V26) as client:  # pinned: no probe
        assert [t async for t in client.tools()] == []
    first, second = peer.posts("tools/list")
    assert first.json["id"] != second.json["id"]
    assert second.headers["mcp-protocol-version"] == second.json["params"]["_meta"][META_VERSION] == V26


async def test_a_non_modern_400_falls_back_to_initialize() -> None:
    script = Script()

    async def legacy(request: Received, reply: Reply) -> None:
        if (
            request.method == "POST"
            and "mcp-protocol-version" in request.headers
            and request.rpc_method == "server/discover"
        ):
            await reply.send(400, b"Bad Request: No valid session ID provided", content_type="text/plain")
            return
        await script(request, reply)

    async with http_peer(legacy) as peer, Client(peer.url) as client:
        assert client.protocol_version == V25
        assert client.era == "handshake"
    assert [p.rpc_method for p in peer.posts()][:3] == ["server/discover", "initialize", "notifications/initialized"]


async def test_a_modern_400_does_not_fall_back() -> None:
    async def handler(request: Received, reply: Reply) -> None:
        error = {"code": -32020, "message": "Header mismatch"}
        await reply.json({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, status=400)

    async with http_peer(handler) as peer:
        with pytest.raises(NegotiationError, match="modern server"):
            async with Client(peer.url):
                pass
    assert [p.rpc_method for p in peer.posts()] == ["server/discover"]


# -- the handshake era -----------------------------------------------------------------------------


@pytest.mark.parametrize("delete_status", [200, 405])
async def test_the_session_id_and_version_are_echoed_and_the_session_deleted_on_close(delete_status: int) -> None:
    async with http_peer(Script(get_status=405, delete_status=delete_status)) as peer:
        async with Client(peer.url, mode="handshake", checks=ClientChecks(structured_output=False)) as client:
            await client.call_tool("x")
            await peer.wait_for(lambda r: r.method == "GET")
        delete = await peer.wait_for(lambda r: r.method == "DELETE")
    initialize, initialized, call = peer.posts()
    assert "mcp-session-id" not in initialize.headers and "mcp-protocol-version" not in initialize.headers
    for later in (initialized, call, delete):
        assert later.headers["mcp-session-id"] == "session-1"
        assert later.headers["mcp-protocol-version"] == V25
    get = next(r for r in peer.requests if r.method == "GET")
    assert get.headers["accept"] == "text/event-stream" and get.headers["mcp-session-id"] == "session-1"


async def test_closing_against_a_frozen_server_is_bounded_by_the_request_timeout() -> None:
    """Defect: closing a handshake-era client waited 30 s for the DELETE of a frozen server,
    whatever the request timeout said."""
    from mcpgen.runtime import Timeouts

    frozen = anyio.Event()

    async def handler(request: Received, reply: Reply) -> None:
        if request.method == "DELETE":
            await frozen.wait()  # never answers
        await Script()(request, reply)

    async with http_peer(handler) as peer:
        with anyio.fail_after(20):  # a hang guard: 0.5 s is what closing may take here, not 30
            async with Client(peer.url, mode="handshake", timeouts=Timeouts(request=0.5)):
                pass
            await anyio.sleep(0)  # a checkpoint: the guard fires here if closing outlived it (it is shielded)
        assert "DELETE" in [r.method for r in peer.requests]
        frozen.set()


@pytest.mark.parametrize("status", [404, 405])
async def test_a_refused_get_stream_is_not_retried(status: int) -> None:
    async with http_peer(Script(get_status=status)) as peer, Client(peer.url, mode="handshake") as client:
        await peer.wait_for(lambda r: r.method == "GET")
        assert [t async for t in client.tools()] == []
    assert [r.method for r in peer.requests].count("GET") == 1


async def test_the_get_stream_delivers_what_the_server_sends_outside_requests() -> None:
    changed = anyio.Event()

    class Pushing(Script):
        async def on_get(self, request: Received, reply: Reply) -> None:
            await reply.sse()
            await reply.event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await reply.closed.wait()

    async with (
        http_peer(Pushing()) as peer,
        Client(peer.url, mode="handshake", hooks=ClientHooks(on_list_changed=lambda k: changed.set())),
    ):
        await changed.wait()


async def test_a_get_stream_that_keeps_closing_with_retry_0_is_reopened_with_backoff() -> None:
    """Defect: a server that sent `retry: 0` and closed the GET stream after each event got 2,008
    reconnections in 3 s; reconnecting now backs off (each wait at least double the last)."""
    opened: list[float] = []
    enough = anyio.Event()

    class Flapping(Script):
        async def on_get(self, request: Received, reply: Reply) -> None:
            opened.append(anyio.current_time())
            if len(opened) >= 6:
                enough.set()
            await reply.sse()
            await reply.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, retry=0)
            await reply.end()

    async with http_peer(Flapping()) as peer, Client(peer.url, mode="handshake"):
        with anyio.fail_after(60):  # a hang guard
            await enough.wait()
    gaps = [later - earlier for earlier, later in itertools.pairwise(opened)]
    for n, gap in enumerate(gaps[:4]):
        assert gap >= 0.1 * 2**n, gaps  # from 0.1 s, doubling; lower bounds: a loaded machine only waits longer


def test_reconnection_honours_the_servers_retry_and_backs_off_only_from_flapping() -> None:
    from mcpgen.runtime.client.http.channel import BACKOFF_MAX, Reconnection

    polling = Reconnection(default=1.0)
    assert [polling.delay(500, 0.01) for _ in range(20)] == [0.5] * 20, "SSE polling: the server's retry, always"
    assert polling.delay(None, 0.01) == 1.0, "no retry: the default"
    flapping = Reconnection(default=1.0)
    delays = [flapping.delay(0, 0.001) for _ in range(12)]
    assert delays[:4] == [0.1, 0.2, 0.4, 0.8] and delays[-1] == BACKOFF_MAX
    assert flapping.delay(0, 5.0) == 0.0, "a stream that stayed open resets the backoff"
    assert flapping.delay(0, 0.001) == 0.1


async def test_a_refused_resumption_of_the_get_stream_opens_it_afresh() -> None:
    """The server no longer has the events after our Last-Event-ID (410): the GET stream is opened
    again without it (the loss is logged), not abandoned."""
    changed = anyio.Event()

    class Forgetful(Script):
        async def on_get(self, request: Received, reply: Reply) -> None:
            if "last-event-id" in request.headers:
                await reply.json({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Gone"}}, status=410)
                return
            await reply.sse()
            if len([r for r in peer.requests if r.method == "GET"]) == 1:
                await reply.event(None, id="e1", retry=0)
                await reply.end()
                return
            await reply.event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await reply.closed.wait()

    async with http_peer(Forgetful()) as peer:
        hooks = ClientHooks(on_list_changed=lambda kind: changed.set())
        async with Client(peer.url, mode="handshake", hooks=hooks):
            with anyio.fail_after(30):  # a hang guard
                await changed.wait()
        gets = [r for r in peer.requests if r.method == "GET"]
        assert [r.headers.get("last-event-id") for r in gets[:3]] == [None, "e1", None]


async def test_a_404_on_the_session_starts_a_new_one_and_retries_once() -> None:
    sessions = iter(["first", "second"])
    script = Script(tools=[])

    async def handler(request: Received, reply: Reply) -> None:
        if request.rpc_method == "initialize":
            script.session_id = next(sessions)
        elif (
            request.method == "POST"
            and request.headers.get("mcp-session-id") == "first"
            and request.rpc_method == "tools/list"
        ):
            await reply.send(404, b"Session not found")
            return
        await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, mode="handshake") as client:
        assert [t async for t in client.tools()] == []
        assert client.protocol_version == V25
    methods = [(p.rpc_method, p.headers.get("mcp-session-id")) for p in peer.posts()]
    assert methods == [
        ("initialize", None),
        ("notifications/initialized", "first"),
        ("tools/list", "first"),
        ("initialize", None),
        ("notifications/initialized", "second"),
        ("tools/list", "second"),
    ]


async def test_a_404_saying_method_not_found_keeps_the_session() -> None:
    script = Script()

    async def handler(request: Received, reply: Reply) -> None:
        if request.rpc_method == "prompts/list":
            error = {"code": -32601, "message": "Method not found: prompts/list"}
            await reply.json({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, status=404)
            return
        await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, mode="handshake") as client:
        client.server_capabilities = None  # call it anyway
        with pytest.raises(MethodNotFound, match="prompts/list"):
            await client.list_prompts()
        assert [t async for t in client.tools()] == []
    assert [p.rpc_method for p in peer.posts()].count("initialize") == 1


async def test_a_stream_closed_after_an_event_id_is_resumed_after_retry() -> None:
    stream_closed: list[float] = []

    class Polling(Script):
        async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
            if message["method"] != "tools/call":
                await super().on_request(request, message, reply)
                return
            await reply.sse()
            await reply.event(id="ev-1", retry=300)
            await reply.end()  # the connection ends, the stream does not
            assert reply.closed_at is not None
            stream_closed.append(reply.closed_at)

        async def on_get(self, request: Received, reply: Reply) -> None:
            if "last-event-id" not in request.headers:
                await reply.send(405)
                return
            call = peer.posts("tools/call")[0].json
            await reply.sse()
            answer = result_of(peer.posts("tools/call")[0], {"content": [{"type": "text", "text": "resumed"}]})
            assert answer["id"] == call["id"]
            await reply.event(answer, id="ev-2")

    async with (
        http_peer(Polling()) as peer,
        Client(peer.url, mode="handshake", checks=ClientChecks(structured_output=False)) as client,
    ):
        result = await client.call_tool("slow")
        assert result.content[0].text == "resumed"
    resume = next(r for r in peer.requests if r.method == "GET" and "last-event-id" in r.headers)
    assert resume.headers["last-event-id"] == "ev-1"
    assert resume.headers["mcp-session-id"] == "session-1"
    assert resume.at - stream_closed[0] >= 0.3, "the client waited the server's retry before reconnecting"


async def test_a_stream_that_ends_without_an_event_id_fails_the_call() -> None:
    class Closing(Script):
        async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
            if message["method"] == "tools/call":
                await reply.sse()
                await reply.end()
                return
            await super().on_request(request, message, reply)

    async with http_peer(Closing()) as peer, Client(peer.url, mode="handshake") as client:
        with pytest.raises(ConnectionClosed, match="closed the stream"):
            await client.call_tool("x")
        assert [t async for t in client.tools()] == [], "the session keeps working"


async def test_the_server_asks_on_the_post_stream_and_the_answer_goes_back_by_post() -> None:
    answered = anyio.Event()

    class Asking(Script):
        async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
            if message["method"] != "tools/call":
                await super().on_request(request, message, reply)
                return
            await reply.sse()
            schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
            params = {"mode": "form", "message": "Sure?", "requestedSchema": schema}
            await reply.event({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params})
            await answered.wait()
            answer = next(p.json for p in peer.posts() if p.json.get("id") == "ask-1" and "result" in p.json)
            text = "yes" if answer["result"]["content"]["ok"] else "no"
            await reply.event(result_of(request, {"content": [{"type": "text", "text": text}]}))

        async def __call__(self, request: Received, reply: Reply) -> None:
            if request.method == "POST" and request.json.get("id") == "ask-1":
                await reply.send(202)
                answered.set()
                return
            await super().__call__(request, reply)

    async def elicit(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    async with (
        http_peer(Asking()) as peer,
        Client(
            peer.url,
            mode="handshake",
            inputs=InputHandlers(elicitation=elicit),
            checks=ClientChecks(structured_output=False),
        ) as client,
    ):
        assert (await client.call_tool("x")).content[0].text == "yes"


# -- cancellation --------------------------------------------------------------------------------


class Hanging(Script):
    """`tools/call` opens a stream and never answers; `streams` are the replies left hanging."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[Reply] = []
        self.opened = anyio.Event()

    async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
        if message["method"] != "tools/call":
            await super().on_request(request, message, reply)
            return
        await reply.sse()
        self.streams.append(reply)
        self.opened.set()
        await reply.closed.wait()


async def test_cancelling_a_modern_call_closes_its_stream_and_sends_nothing() -> None:
    script = Hanging()
    async with http_peer(script) as peer, Client(peer.url) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow")
            await script.opened.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            await script.streams[0].closed.wait()
        assert [t async for t in client.tools()] == []
    assert [p.rpc_method for p in peer.posts()] == ["server/discover", "tools/call", "tools/list"]


async def test_cancelling_a_handshake_call_sends_cancelled_and_closes_the_stream() -> None:
    script = Hanging()
    async with http_peer(script) as peer, Client(peer.url, mode="handshake") as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow")
            await script.opened.wait()
            tg.cancel_scope.cancel()
        call = peer.posts("tools/call")[0]
        cancelled = await peer.wait_for(lambda r: r.rpc_method == "notifications/cancelled")
        with anyio.fail_after(10):
            await script.streams[0].closed.wait()
    assert cancelled.json["params"]["requestId"] == call.json["id"]
    assert cancelled.headers["mcp-session-id"] == "session-1"


# -- connections and errors ----------------------------------------------------------------------


async def test_a_reset_pooled_connection_is_retried_once() -> None:
    script = Script()

    async def handler(request: Received, reply: Reply) -> None:
        if request.rpc_method == "tools/list" and request.connection == 1:
            await reply.abort()  # the server dropped the idle connection as the request arrived
            return
        await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url) as client:
        assert [t async for t in client.tools()] == []
    lists = peer.posts("tools/list")
    assert [r.connection for r in lists] == [1, 2]
    assert lists[0].json == lists[1].json, "the same request, sent again"


async def test_a_reset_fresh_connection_is_not_retried() -> None:
    script = Script()

    async def handler(request: Received, reply: Reply) -> None:
        if request.rpc_method == "tools/list":
            await reply.abort()
            return
        await script(request, reply)

    transport = http("http://placeholder")
    async with http_peer(handler) as peer:
        transport.url = peer.url
        # A client that opens a connection per request: nothing is ever reused.
        async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)) as own:
            transport.client = own
            async with Client(transport) as client:
                with pytest.raises(ConnectionClosed, match="tools/list"):
                    await client.list_tools()
    assert len(peer.posts("tools/list")) == 1


async def test_a_modern_stream_that_breaks_is_issued_again_with_a_new_id() -> None:
    script = Script()
    broken = 0

    async def handler(request: Received, reply: Reply) -> None:
        nonlocal broken
        if request.rpc_method == "tools/call" and not broken:
            broken += 1
            await reply.sse()
            await reply.event(
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
            )
            await reply.abort()
            return
        await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        assert (await client.call_tool("x")).content[0].text == "called x"
    first, second = peer.posts("tools/call")
    assert first.json["id"] != second.json["id"]
    assert first.json["params"] == second.json["params"]


async def test_a_request_on_a_modern_stream_is_ignored() -> None:
    async def handler(request: Received, reply: Reply) -> None:
        if request.rpc_method == "tools/call":
            await reply.sse()
            await reply.event({"jsonrpc": "2.0", "id": 99, "method": "roots/list"})
            await reply.event(result_of(request, {"resultType": "complete", "content": []}))
            return
        await Script()(request, reply)

    async with (
        http_peer(handler) as peer,
        Client(
            peer.url, inputs=InputHandlers(roots=["file:///x"]), checks=ClientChecks(structured_output=False)
        ) as client,
    ):
        assert (await client.call_tool("x")).content == []
    assert all("result" not in p.json and "error" not in p.json for p in peer.posts()), "no response was sent"


async def test_an_auth_flow_signs_every_request() -> None:
    class Token(httpx.Auth):
        def __init__(self) -> None:
            self.refusals = 0

        def auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
            request.headers["Authorization"] = "Bearer old" if not self.refusals else "Bearer new"
            response = yield request
            if response.status_code == 401:
                self.refusals += 1
                request.headers["Authorization"] = "Bearer new"
                yield request

    script = Script()

    async def handler(request: Received, reply: Reply) -> None:
        if request.headers.get("authorization") != "Bearer new":
            await reply.send(401, headers=[("www-authenticate", "Bearer")])
            return
        await script(request, reply)

    auth = Token()
    async with http_peer(handler) as peer, Client(peer.url, auth=auth) as client:
        assert [t async for t in client.tools()] == []
    assert auth.refusals == 1
    assert [r.headers.get("authorization") for r in peer.requests] == ["Bearer old", "Bearer new", "Bearer new"]


async def test_http_errors_become_errors_of_the_call() -> None:
    script = Script()

    async def handler(request: Received, reply: Reply) -> None:
        name = (request.json.get("params") or {}).get("name") if request.method == "POST" else None
        if name == "plain":
            await reply.send(500, b"it broke", content_type="text/plain")
        elif name == "rpc":
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad arguments"}}
            await reply.json(error, status=400)
        elif name == "gone":
            await reply.send(404)
        elif name == "moved":
            await reply.send(307, headers=[("location", "http://elsewhere/mcp")])
        elif name == "accepted":
            await reply.send(202)
        elif name == "odd":
            await reply.send(200, b"hello", content_type="text/plain")
        else:
            await script(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        with pytest.raises(McpError, match=r"HTTP 500.*it broke") as plain:
            await client.call_tool("plain")
        assert plain.value.data == {"httpStatus": 500}
        with pytest.raises(McpError, match="bad arguments") as rpc:
            await client.call_tool("rpc")
        assert rpc.value.code == -32602
        with pytest.raises(MethodNotFound):
            await client.call_tool("gone")
        with pytest.raises(McpError, match="elsewhere"):
            await client.call_tool("moved")
        with pytest.raises(McpError, match="202"):
            await client.call_tool("accepted")
        with pytest.raises(McpError, match="text/plain"):
            await client.call_tool("odd")
        assert (await client.call_tool("fine")).content[0].text == "called fine"


async def test_an_oversized_answer_fails_the_call_and_the_session_goes_on() -> None:
    from mcpgen.runtime import RemoteProtocolError

    async def handler(request: Received, reply: Reply) -> None:
        name = (request.json.get("params") or {}).get("name")
        if name == "json":
            await reply.json(
                result_of(request, {"resultType": "complete", "content": [{"type": "text", "text": "x" * 5000}]})
            )
        elif name == "id_last":  # nothing in the first bytes says which request this answers
            big = {"resultType": "complete", "content": [{"type": "text", "text": "x" * 5000}]}
            await reply.json({"jsonrpc": "2.0", "result": big, "id": request.json["id"]})
        elif name == "sse":
            await reply.sse()
            await reply.event(
                result_of(request, {"resultType": "complete", "content": [{"type": "text", "text": "x" * 5000}]})
            )
        else:
            await Script()(request, reply)

    endpoint = http("http://placeholder", max_message_bytes=2000)
    async with http_peer(handler) as peer:
        endpoint.url = peer.url
        async with Client(endpoint, checks=ClientChecks(structured_output=False)) as client:
            for name in ("json", "id_last", "sse"):
                with pytest.raises(RemoteProtocolError, match="over the 2000-byte"):
                    await client.call_tool(name)
            assert (await client.call_tool("small")).content[0].text == "called small"


NOT_THE_RESPONSE = {
    "empty": (b"", "an empty body"),
    "array": (b"[1, 2]", "not a JSON object"),
    "string": (b'"ok"', "not a JSON object"),
    "other-id": (b'{"jsonrpc": "2.0", "id": "someone-else", "result": {}}', "another request"),
    "notification": (b'{"jsonrpc": "2.0", "method": "notifications/message"}', "notification"),
    "nan": (None, "not valid JSON"),
}


@pytest.mark.parametrize("mode", ["handshake", V26])
@pytest.mark.parametrize("case", list(NOT_THE_RESPONSE))
async def test_an_answer_without_the_calls_response_fails_the_call_at_once(mode: str, case: str) -> None:
    """Defect: a 200 whose body was empty, not an object, or another request's response left the
    call waiting for ever (with no timeout set): the exchange had ended without its answer."""
    from mcpgen.runtime import RemoteProtocolError, Timeouts

    body, message = NOT_THE_RESPONSE[case]

    async def handler(request: Received, reply: Reply) -> None:
        if request.method == "POST" and request.rpc_method == "tools/call" and request.json["params"]["name"] == "x":
            sent = body if body is not None else b'{"jsonrpc": "2.0", "id": %d, "result": NaN}' % request.json["id"]
            await reply.send(200, sent, content_type="application/json")
        else:
            await Script()(request, reply)

    async with (
        http_peer(handler) as peer,
        Client(
            peer.url, mode=mode, timeouts=Timeouts(request=None), checks=ClientChecks(structured_output=False)
        ) as client,
    ):
        with anyio.fail_after(30):  # a hang guard only: the failure comes as soon as the body is read
            with pytest.raises(RemoteProtocolError, match=message):
                await client.call_tool("x")
        assert (await client.call_tool("fine")).content[0].text == "called fine"


async def test_a_parse_error_without_an_id_answering_a_post_is_that_calls_error() -> None:
    async def handler(request: Received, reply: Reply) -> None:
        if request.method == "POST" and request.rpc_method == "tools/call":
            await reply.json({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        else:
            await Script()(request, reply)

    from mcpgen.runtime import ParseError, Timeouts

    async with http_peer(handler) as peer, Client(peer.url, mode=V26, timeouts=Timeouts(request=None)) as client:
        with anyio.fail_after(30), pytest.raises(ParseError):
            await client.call_tool("x")


@pytest.mark.parametrize("mode", ["auto", "handshake", V26])
async def test_a_wrong_path_says_what_was_not_found_and_where_endpoints_usually_are(mode: str) -> None:
    """Defect: a URL with a wrong path (404) was reported as a failed version negotiation."""
    from mcpgen.runtime import EndpointNotFound

    async def nothing_here(request: Received, reply: Reply) -> None:
        await reply.send(404, b"Not Found", content_type="text/plain")

    async with http_peer(nothing_here) as peer:
        wrong = peer.url.replace("/mcp", "/api")
        with pytest.raises(EndpointNotFound, match=r"HTTP 404.*no MCP endpoint") as caught:
            async with Client(wrong, mode=mode) as client:
                await client.call_tool("x")  # a pinned modern version sends nothing before the first call
    assert f"try {peer.url}" in str(caught.value)
    assert len(peer.posts()) == 1, "nothing else is tried against a URL where nothing is"


async def test_an_unreachable_server_fails_the_connection() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now
    with pytest.raises(ConnectionClosed, match="ConnectError"):
        async with Client(f"http://127.0.0.1:{port}/mcp"):
            pass


def test_a_url_is_checked_and_auth_needs_a_url() -> None:
    with pytest.raises(ValueError, match="http"):
        http("ftp://example.com/mcp")
    with pytest.raises(TypeError, match="auth"):
        Client(["python", "server.py"], auth=httpx.BasicAuth("a", "b"))
    assert isinstance(Client("http://localhost:1/mcp").target, type(http("http://x")))


async def test_an_older_handshake_version_is_spoken_only_when_accepted() -> None:
    script = Script(version="2025-03-26")
    async with http_peer(script) as peer:
        with pytest.raises(NegotiationError, match="2025-03-26"):
            async with Client(peer.url, mode="handshake"):
                pass
        async with Client(peer.url, mode="handshake", checks=ClientChecks(older_handshake=True)) as client:
            assert client.protocol_version == V25  # the tables it speaks with
            assert [t async for t in client.tools()] == []
        with pytest.raises(NegotiationError, match="2030-01-01"):
            script.version = "2030-01-01"  # newer than ours: no tables can speak it
            async with Client(peer.url, mode="handshake", checks=ClientChecks(older_handshake=True)):
                pass
    listed = peer.posts("tools/list")[0]
    assert listed.headers["mcp-protocol-version"] == "2025-03-26", "the header names what the server agreed"


class _Listening(Script):
    """A modern server whose listen streams break: `breaks` of them after the acknowledgement and
    one change, then the rest stay open and announce one change each."""

    def __init__(self, breaks: int, ack: bool = True, refuse: int = 0) -> None:
        super().__init__()
        self.breaks, self.ack, self.refuse = breaks, ack, refuse
        self.opened = 0

    async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
        if message["method"] == "server/discover":
            result = {"supportedVersions": [V26], "capabilities": {"tools": {"listChanged": True}}}
            await reply.json(result_of(request, {"resultType": "complete", "ttlMs": 0, **result}))
            return
        if message["method"] != "subscriptions/listen":
            await super().on_request(request, message, reply)
            return
        if self.opened and self.refuse:  # a re-open while the server restarts
            self.refuse -= 1
            await reply.send(503, b"restarting", content_type="text/plain")
            return
        self.opened += 1
        tag = {"_meta": {"io.modelcontextprotocol/subscriptionId": message["id"]}}
        await reply.sse()
        if self.ack or self.opened == 1:
            ack = {"notifications": {"toolsListChanged": True}, **tag}
            await reply.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
        change = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": tag}
        await reply.event(change)
        if self.opened <= self.breaks:
            await reply.abort()
            return
        await reply.closed.wait()


async def test_a_broken_listen_stream_is_opened_again_and_the_gap_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "RELISTEN_STABLE", 3600.0)  # every stream here counts as short-lived
    script = _Listening(breaks=2)
    async with http_peer(script) as peer, Client(peer.url) as client, client.listen(tools=True) as sub:
        events = [await sub.next(timeout=30) for _ in range(5)]
    assert [(e.kind, e.resumed) for e in events] == [
        ("tools", False),  # the first stream's change
        ("tools", True),  # re-opened: the gap
        ("tools", False),
        ("tools", True),
        ("tools", False),  # the third stream holds
    ]
    listens = peer.posts("subscriptions/listen")
    assert len(listens) == 3 and len({p.json["id"] for p in listens}) == 3
    # Streams that keep breaking are re-opened after a growing delay, never in a tight loop.
    assert listens[1].at - listens[0].at >= subscriptions.RELISTEN_BACKOFF[1]
    assert listens[2].at - listens[1].at >= subscriptions.RELISTEN_BACKOFF[2]
    assert all(p.json["params"] == listens[0].json["params"] for p in listens)


async def test_a_listen_stream_that_never_comes_back_ends_with_the_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "RELISTEN_BACKOFF", (0.0, 0.01))
    script = _Listening(breaks=1000, ack=False)  # re-opened streams are never acknowledged again
    async with http_peer(script) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        async with client.listen(tools=True) as sub:
            kinds = [event.kind async for event in sub]  # ends once the client gives up
            with pytest.raises(ConnectionClosed, match="broke"):
                await sub.next()
        assert (await client.call_tool("x")).content[0].text == "called x", "the session keeps working"
    assert len(peer.posts("subscriptions/listen")) == 1 + RELISTEN_ATTEMPTS
    assert kinds == ["tools"] * (1 + RELISTEN_ATTEMPTS)


async def test_a_refused_re_open_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "RELISTEN_BACKOFF", (0.0, 0.01))
    script = _Listening(breaks=1, refuse=2)
    async with http_peer(script) as peer, Client(peer.url) as client, client.listen(tools=True) as sub:
        events = [await sub.next(timeout=30) for _ in range(3)]
    assert [e.resumed for e in events] == [False, True, False]
    assert len(peer.posts("subscriptions/listen")) == 1 + 2 + 1  # the first, two refused, the one that held


async def test_a_re_open_that_is_never_acknowledged_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "RELISTEN_BACKOFF", (0.0, 0.01))
    monkeypatch.setattr(subscriptions, "RELISTEN_ACK_TIMEOUT", 0.2)
    script = _Listening(breaks=1, ack=False)  # re-opened streams stay open, unacknowledged
    async with http_peer(script) as peer, Client(peer.url, checks=ClientChecks(structured_output=False)) as client:
        async with client.listen(tools=True) as sub:
            assert [event.resumed async for event in sub] == [False] * (1 + RELISTEN_ATTEMPTS)
            with pytest.raises(RequestTimeout, match="not acknowledged"):
                await sub.next()
        assert (await client.call_tool("x")).content[0].text == "called x", "the session keeps working"
    assert len(peer.posts("subscriptions/listen")) == 1 + RELISTEN_ATTEMPTS


@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_a_connection_leaves_no_stream_unclosed(mode: str) -> None:
    """Defect: the connector's streams to and from the session were left to the garbage
    collector, unclosed (anyio's ResourceWarning, seen in a later test)."""
    script = Script(get_status=405, tools=[{"name": "echo", "inputSchema": {"type": "object"}}])
    with no_unclosed_streams():
        async with http_peer(script) as peer, Client(peer.url, mode=mode) as client:
            await client.ping()
