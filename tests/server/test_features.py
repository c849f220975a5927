"""Server features and the client API, in both eras, on asyncio and trio."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from mcpgen.generated.v2026_07_28.models import ImageContent, TextContent
from mcpgen.runtime import (
    CapabilityError,
    Client,
    ClientAdvertising,
    ClientHooks,
    InvalidParams,
    McpError,
    MethodNotFound,
    RequestContext,
    RequestTimeout,
    Server,
    ServerAdvertising,
    ServerLimits,
    memory_pair,
)
from pydantic import BaseModel
from support.peers import V25, V26, RawPeer, connected, meta, raw_server

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


class Point(BaseModel):
    x: int
    y: int = 0


def make_server(**options: Any) -> Server:
    server = Server("feat", "1.0", **options)

    @server.tool()
    def add(a: int, b: int = 10) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        return text.upper()

    @server.tool()
    def norm(point: Point) -> dict[str, int]:
        return {"l1": abs(point.x) + abs(point.y)}

    @server.tool()
    def broken() -> str:
        raise ValueError("bad things")

    @server.tool()
    async def steps(ctx: RequestContext, n: int) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n)
            await ctx.log("info", f"step {i + 1}")
            await ctx.log("debug", f"detail {i + 1}")
        return "ok"

    @server.tool()
    async def forever() -> str:
        await anyio.sleep_forever()
        return "never"

    @server.prompt(argument_descriptions={"who": "Whom to greet"})
    def greet(who: str, style: str = "plain") -> str:
        """Greet someone."""
        return f"{style} hello {who}"

    @server.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        return "some text"

    @server.resource("mem://bytes")
    def blob() -> bytes:
        return b"\x00\x01\x02"

    @server.resource("mem://users/{id}/name")
    def user_name(id: str) -> str:
        return f"user-{id}"

    @server.completion
    def complete(ref: dict[str, Any], argument: dict[str, str], context: Any) -> list[str]:
        return [f"{argument['value']}{i}" for i in range(150)]

    return server


# -- tools -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_tool_schemas_come_from_signatures(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        tools = {t.name: t async for t in client.tools()}
        schema = dict(tools["add"].input_schema)  # a JSON Schema object: a TypedDict keyed by its wire keys
        assert schema["type"] == "object"
        assert schema["required"] == ["a"]
        assert set(schema["properties"]) == {"a", "b"}
        assert tools["add"].description == "Add two numbers."
        assert tools["add"].output_schema is not None
        norm = dict(tools["norm"].input_schema)
        assert set(norm["properties"]) == {"x", "y"}, "a pydantic-model argument gives the model's schema"


@pytest.mark.parametrize("mode", MODES)
async def test_tool_results_text_structured_and_errors(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        result = await client.call_tool("add", {"a": 2})
        assert result.structured_content == {"result": 12}
        assert (await client.call_tool("shout", {"text": "hi"})).content[0].text == "HI"
        assert (await client.call_tool("norm", {"x": -3, "y": 4})).structured_content == {"l1": 7}
        failed = await client.call_tool("broken")  # an unexpected exception: its message stays on the server
        assert failed.is_error is True and "error id" in failed.content[0].text
        assert "bad things" not in failed.content[0].text
        invalid = await client.call_tool("add", {"a": "two"})
        assert invalid.is_error is True and "a" in invalid.content[0].text
        with pytest.raises(InvalidParams, match="unknown tool"):
            await client.call_tool("nope")


@pytest.mark.parametrize("mode", MODES)
async def test_progress_reaches_the_callback(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    async with connected(make_server(), mode=mode) as client:
        await client.call_tool("steps", {"n": 3}, progress=lambda p, t, m: seen.append((p, t, m)))
    assert seen == [(1.0, 3.0, None), (2.0, 3.0, None), (3.0, 3.0, None)]


async def test_timeout_cancels_at_the_server() -> None:
    server = make_server()
    async with connected(server, mode="handshake") as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("forever", timeout=0.2)
        session = next(iter(server.sessions))
        with anyio.fail_after(2):
            while session.in_flight:
                await anyio.sleep(0.01)
        assert (await client.call_tool("shout", {"text": "x"})).content[0].text == "X"


async def test_caller_cancellation_cancels_at_the_server() -> None:
    server = make_server()
    started, stopped = anyio.Event(), anyio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"

    async with connected(server, mode=V26) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "wait")
            with anyio.fail_after(10):
                await started.wait()
            tg.cancel_scope.cancel()  # the caller gives up
        with anyio.fail_after(10):
            await stopped.wait()  # the server's handler was cancelled too
        session = next(iter(server.sessions))
        assert session.in_flight == 0


async def test_request_ids_are_unique_while_pending() -> None:
    server = make_server()
    ids: list[Any] = []
    original = server.handlers["tools/call"]

    async def spy(ctx: RequestContext, params: Any) -> Any:
        ids.append(ctx.request_id)
        await anyio.sleep(0.01)
        return await original(ctx, params)

    server.handlers["tools/call"] = spy
    async with connected(server, mode=V26) as client, anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(client.call_tool, "add", {"a": i})
    assert len(ids) == 50 and len(set(ids)) == 50


# -- logging -----------------------------------------------------------------------------------


async def test_legacy_logging_follows_set_level() -> None:
    logs: list[Any] = []
    async with connected(
        make_server(),
        mode="handshake",
        hooks=ClientHooks(on_log=lambda level, data, logger: logs.append((level, data))),
    ) as client:
        await client.call_tool("steps", {"n": 1})
        assert ("debug", "detail 1") in logs
        logs.clear()
        await client.set_log_level("info")
        await client.call_tool("steps", {"n": 1})
        assert logs == [("info", "step 1")]


async def test_modern_logging_only_when_the_request_asks() -> None:
    logs: list[Any] = []
    async with connected(
        make_server(), mode=V26, hooks=ClientHooks(on_log=lambda level, data, logger: logs.append((level, data)))
    ) as client:
        await client.call_tool("steps", {"n": 1})
        assert logs == [], "no logLevel in _meta: no notifications/message"
        await client.set_log_level("info")
        await client.call_tool("steps", {"n": 1})
        assert logs == [("info", "step 1")]


class Leaf(BaseModel):
    name: str


class Branch(BaseModel):
    leaves: list[Leaf]
    best: Leaf | None = None


def structured_server() -> Server:
    server = Server("structured")

    @server.tool()
    def many() -> list[Leaf]:
        return [Leaf(name="a"), Leaf(name="b")]

    @server.tool()
    def maybe() -> Leaf | None:
        return Leaf(name="m")

    @server.tool()
    def nothing() -> Leaf | None:
        return None

    @server.tool()
    def tree() -> list[Branch]:
        return [Branch(leaves=[Leaf(name="x")], best=Leaf(name="x"))]

    @server.tool()
    def blocks() -> list[TextContent | ImageContent]:
        return [TextContent(type="text", text="hello"), ImageContent(type="image", data="AAAA", mimeType="image/png")]

    @server.tool()
    def unchecked() -> Leaf:
        return Leaf.model_construct(name=5)  # never validated: a wrong type in a model instance

    @server.tool()
    def unchecked_many() -> list[Leaf]:
        return [Leaf.model_construct()]  # a required field missing, inside a list

    return server


@pytest.mark.parametrize("mode", [*MODES, V25, V26])
async def test_structured_output_of_lists_optionals_and_nested_models(mode: str) -> None:
    """Defect: the `$defs` of a wrapped value stayed under `properties.result`, so its `$ref`s pointed
    at nothing and the client's own check raised jsonschema's internal error on every call."""
    from mcpgen.runtime.protocol.schema_check import defects

    async with connected(structured_server(), mode=mode) as client:
        tools = {tool.name: tool async for tool in client.tools()}
        for name in ("many", "maybe", "nothing", "tree"):
            schema = dict(tools[name].output_schema or {})  # a JSON Schema object: a TypedDict
            assert defects(schema) == [], name
        assert (await client.call_tool("many")).structured_content == {"result": [{"name": "a"}, {"name": "b"}]}
        assert (await client.call_tool("maybe")).structured_content == {"result": {"name": "m"}}
        assert (await client.call_tool("nothing")).structured_content == {"result": None}
        tree = (await client.call_tool("tree")).structured_content
        assert tree == {"result": [{"leaves": [{"name": "x"}], "best": {"name": "x"}}]}


@pytest.mark.parametrize("mode", MODES)
async def test_a_list_of_content_blocks_is_content_not_structured_output(mode: str) -> None:
    async with connected(structured_server(), mode=mode) as client:
        tools = {tool.name: tool async for tool in client.tools()}
        assert tools["blocks"].output_schema is None
        result = await client.call_tool("blocks")
        assert result.structured_content is None
        assert [block.type for block in result.content] == ["text", "image"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_unvalidated_model_is_checked_by_its_value(mode: str) -> None:
    """Defect: a model built with `model_construct` passed as valid (its type was checked, not its
    value), so the tool sent structured content that broke its own outputSchema."""
    async with connected(structured_server(), mode=mode) as client:
        for name in ("unchecked", "unchecked_many"):
            result = await client.call_tool(name)
            assert result.is_error is True, name
            assert result.structured_content is None
            assert "outputSchema" in result.content[0].text


def test_a_return_type_whose_schema_would_be_unusable_is_refused_at_registration() -> None:
    from mcpgen.runtime.server.features.tools import _output_schema
    from pydantic import TypeAdapter

    broken = TypeAdapter(list[Leaf])
    broken.json_schema = lambda **_: {"type": "array", "items": {"$ref": "#/$defs/Gone"}}  # type: ignore[method-assign]
    with pytest.raises(TypeError, match="points at nothing"):
        _output_schema(broken, list[Leaf], "odd")


async def test_the_client_never_raises_the_validators_own_errors() -> None:
    """A server that advertises a schema whose `$ref` points at nothing: the client says so with its
    own `StructuredOutputError`, not jsonschema's internal exception."""
    from mcpgen.runtime import StructuredOutputError

    schema = {
        "type": "object",
        "properties": {"result": {"$defs": {"Leaf": {"type": "object"}}, "items": {"$ref": "#/$defs/Leaf"}}},
    }
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)

    async def scripted() -> None:
        while True:
            try:
                message = await peer.receive(timeout=10)
            except anyio.EndOfStream:
                return
            method, answer = message.get("method"), None
            if method == "initialize":
                info = {"name": "s", "version": "1"}
                answer = {"protocolVersion": V25, "capabilities": {"tools": {}}, "serverInfo": info}
            elif method == "tools/list":
                answer = {"tools": [{"name": "many", "inputSchema": {"type": "object"}, "outputSchema": schema}]}
            elif method == "tools/call":
                answer = {"content": [], "structuredContent": {"result": [{}]}}
            if answer is not None:
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})

    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted)
        async with Client(client_end, mode="handshake") as client:
            with pytest.raises(StructuredOutputError, match="cannot be checked"):
                await client.call_tool("many")
        tg.cancel_scope.cancel()


# -- prompts, resources, completions ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_prompts(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        prompts = [p async for p in client.prompts()]
        assert prompts[0].name == "greet"
        assert [(a.name, a.required) for a in prompts[0].arguments] == [("who", True), ("style", False)]
        result = await client.get_prompt("greet", {"who": "ann", "style": "loud"})
        assert result.messages[0].content.text == "loud hello ann"
        with pytest.raises(InvalidParams, match="missing required arguments: who"):
            await client.get_prompt("greet", {})
        with pytest.raises(InvalidParams, match="unknown prompt"):
            await client.get_prompt("nope")


@pytest.mark.parametrize("mode", MODES)
async def test_resources_and_templates(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        assert [r.uri async for r in client.resources()] == ["mem://text", "mem://bytes"]
        assert [t.uri_template async for t in client.resource_templates()] == ["mem://users/{id}/name"]
        assert (await client.read_resource("mem://text")).contents[0].text == "some text"
        blob = (await client.read_resource("mem://bytes")).contents[0]
        assert base64.b64decode(blob.blob) == b"\x00\x01\x02"
        assert (await client.read_resource("mem://users/42/name")).contents[0].text == "user-42"
        with pytest.raises(McpError) as err:
            await client.read_resource("mem://users/42/age")
        assert err.value.code == (-32002 if mode == "handshake" else -32602)


@pytest.mark.parametrize("mode", MODES)
async def test_completions_are_capped_at_100(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        result = await client.complete({"type": "ref/prompt", "name": "greet"}, {"name": "who", "value": "a"})
        assert len(result.completion.values) == 100
        assert result.completion.total == 150 and result.completion.has_more is True


# -- pagination --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_pagination_with_opaque_cursors(mode: str) -> None:
    server = Server("pages", limits=ServerLimits(page_size=3))
    for i in range(8):
        server.add_tool(lambda: "x", name=f"t{i}")
    async with connected(server, mode=mode) as client:
        first = await client.list_tools()
        assert [t.name for t in first.tools] == ["t0", "t1", "t2"]
        assert first.next_cursor
        assert [t.name async for t in client.tools()] == [f"t{i}" for i in range(8)]
        flipped = first.next_cursor[:-1] + ("1" if first.next_cursor.endswith("0") else "0")
        for bad in ["garbage", flipped, first.next_cursor.split(".")[0] + ".abc"]:
            with pytest.raises(InvalidParams, match="invalid cursor"):
                await client.list_tools(cursor=bad)


async def test_cursor_of_another_list_is_refused() -> None:
    server = Server("pages", limits=ServerLimits(page_size=1))
    for i in range(3):
        server.add_tool(lambda: "x", name=f"t{i}")
        server.add_prompt(lambda: "p", name=f"p{i}")
    async with connected(server, mode=V26) as client:
        cursor = (await client.list_tools()).next_cursor
        with pytest.raises(InvalidParams):
            await client.list_prompts(cursor=cursor)


# -- capabilities ---------------------------------------------------------------------------


async def test_capabilities_are_inferred_and_overridable() -> None:
    assert Server("empty", advertising=ServerAdvertising(logging=False)).capabilities() == {}
    inferred = make_server().capabilities()
    assert inferred == {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "completions": {},
        "logging": {},
    }
    quiet = make_server(
        advertising=ServerAdvertising(list_changed=False, capabilities={"logging": None, "experimental": {"x": {}}})
    ).capabilities()
    assert quiet["tools"] == {"listChanged": False}
    assert "logging" not in quiet and quiet["experimental"] == {"x": {}}


@pytest.mark.parametrize("mode", ["handshake", "auto"])
async def test_client_refuses_calls_the_server_did_not_advertise_before_sending(mode: str) -> None:
    server = Server("tools-only", advertising=ServerAdvertising(logging=False))
    server.add_tool(lambda: "x", name="x")
    async with connected(server, mode=mode) as client:
        before = client.session.next_id()
        with pytest.raises(CapabilityError, match="prompts"):
            await client.list_prompts()
        with pytest.raises(CapabilityError, match="resources"):
            await client.read_resource("mem://x")
        with pytest.raises(CapabilityError, match="not a method"):
            await client.request("tools/nope")
        assert client.session.next_id() == before + 1, "no request id was used: nothing was sent"


async def test_server_answers_method_not_found_for_a_feature_it_lacks() -> None:
    server = Server("tools-only")
    server.add_tool(lambda: "x", name="x")
    async with raw_server(server) as peer:
        reply = await peer.request(1, "prompts/list", {"_meta": meta()})
        assert reply["error"]["code"] == -32601
        reply = await peer.request(
            2,
            "completion/complete",
            {"_meta": meta(), "ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}},
        )
        assert reply["error"]["code"] == -32601


async def test_client_validates_params_before_sending() -> None:
    async with connected(make_server(), mode=V26) as client:
        with pytest.raises(InvalidParams, match="uri"):
            await client.request("resources/read", {})


# -- change notifications ----------------------------------------------------------------------


async def test_legacy_list_changed_is_pushed() -> None:
    server = make_server()
    changed: list[str] = []
    async with connected(server, mode="handshake", hooks=ClientHooks(on_list_changed=changed.append)) as client:
        server.add_tool(lambda: "n", name="new")
        server.remove_prompt("greet")
        with anyio.fail_after(2):
            while len(changed) < 2:
                await anyio.sleep(0.01)
        assert changed == ["tools", "prompts"]
        assert "new" in [t.name async for t in client.tools()]


async def test_legacy_list_changed_not_sent_when_turned_off() -> None:
    server = make_server(advertising=ServerAdvertising(list_changed=False))
    changed: list[str] = []
    async with connected(server, mode="handshake", hooks=ClientHooks(on_list_changed=changed.append)):
        server.add_tool(lambda: "n", name="new")
        await anyio.sleep(0.1)
    assert changed == []


async def test_modern_listen_stream() -> None:
    server = make_server()
    async with connected(server, mode=V26) as client:
        async with client.listen(tools=True, resource_uris=["mem://text"]) as sub:
            assert sub.honoured == {"toolsListChanged": True, "resourceSubscriptions": ["mem://text"]}
            server.add_tool(lambda: "n", name="new")
            server.add_prompt(lambda: "p", name="not-asked-for")
            server.notify_resource_updated("mem://text")
            server.notify_resource_updated("mem://other")
            first = await sub.next(timeout=2)
            second = await sub.next(timeout=2)
            assert (first.kind, second.kind, second.uri) == ("tools", "resource", "mem://text")
            assert first.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub.id
            with pytest.raises(TimeoutError):
                await sub.next(timeout=0.2)
        with anyio.fail_after(2):
            while server.listening:
                await anyio.sleep(0.01)


async def test_modern_listen_honours_only_advertised_flags() -> None:
    server = make_server(advertising=ServerAdvertising(list_changed=False))
    async with connected(server, mode=V26) as client, client.listen(tools=True, prompts=True) as sub:
        assert sub.honoured == {}


async def test_modern_listen_ends_gracefully_when_the_server_stops() -> None:
    server = make_server()
    async with connected(server, mode=V26) as client, client.listen(tools=True) as sub:
        server.stop_listening()
        events = [e async for e in sub]
        assert events == []


async def test_legacy_resource_subscriptions() -> None:
    server = make_server()
    updates: list[str] = []
    async with connected(server, mode="handshake", hooks=ClientHooks(on_resource_updated=updates.append)) as client:
        async with client.listen(resource_uris=["mem://text"]) as sub:
            server.notify_resource_updated("mem://text")
            event = await sub.next(timeout=2)
            assert (event.kind, event.uri) == ("resource", "mem://text")
        session = next(iter(server.sessions))
        with anyio.fail_after(2):
            while session.subscriptions:
                await anyio.sleep(0.01)
        server.notify_resource_updated("mem://text")
        await anyio.sleep(0.05)
    assert updates == ["mem://text"]


# -- server-to-client requests and cancellation the other way -----------------------------------------


async def test_server_to_client_request_can_be_cancelled_by_the_server() -> None:
    stopped = anyio.Event()
    server = make_server()
    client_end, server_end = memory_pair()
    client = Client(client_end, mode="handshake", advertising=ClientAdvertising(capabilities={"roots": {}}))

    async def slow_roots(params: Any) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()

    client.inputs.handlers["roots/list"] = slow_roots
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with client:
            session = next(iter(server.sessions))
            with pytest.raises(RequestTimeout):
                await session.send_request("roots/list", None, timeout=0.2)
            with anyio.fail_after(2):
                await stopped.wait()
        tg.cancel_scope.cancel()


async def test_client_answers_unknown_server_requests_with_method_not_found() -> None:
    server = make_server()
    async with connected(server, mode="handshake") as client:
        session = next(iter(server.sessions))
        with pytest.raises(MethodNotFound):
            await session.send_request("roots/list", None, timeout=2)  # the client declared no roots
        assert await session.send_request("ping", None, timeout=2) == {}
        assert client.protocol_version == V25


async def test_a_modern_client_refuses_server_requests() -> None:
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    async with Client(client_end, mode=V26):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        reply = await peer.receive()
        assert reply["error"]["code"] == -32601


async def test_task_augmented_calls_need_the_servers_task_support() -> None:
    async with connected(make_server(), mode="handshake") as client:
        with pytest.raises(CapabilityError, match=r"tasks\.requests\.tools\.call"):
            await client.request("tools/call", {"name": "add", "arguments": {"a": 1}, "task": {"ttl": 1000}})
        assert (await client.call_tool("add", {"a": 1})).structured_content == {"result": 11}
