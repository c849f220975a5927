"""What a new user tripped over: clear refusals of wrong targets, structured output held to its
schema on both sides, capability and version errors that name what is missing, safe resource
templates, and handler callbacks checked when they are registered."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientHooks,
    InputHandlers,
    McpError,
    MissingClientCapability,
    NegotiationError,
    RequestContext,
    Server,
    StructuredOutputError,
    elicit_url,
    memory_pair,
    sample,
)
from pydantic import BaseModel
from support.peers import V25, V26, RawPeer, connected, meta, raw_server

pytestmark = pytest.mark.anyio


class Area(BaseModel):
    square_metres: float


def make_server() -> Server:
    server = Server("first-use")

    @server.tool()
    def area() -> Area:
        return {"square_metres": "lots"}  # type: ignore[return-value]  # the bug the runtime must catch

    @server.tool(name="prebuilt")
    def prebuilt_result() -> Area:
        return {"content": [], "structuredContent": {"square_metres": "lots"}}  # type: ignore[return-value]

    @server.tool()
    def good() -> Area:
        return Area(square_metres=2.5)

    @server.tool()
    def wants_url(ctx: RequestContext) -> str:
        if ctx.input_response("u") is None:
            return ctx.input_required(u=elicit_url("Sign in", "https://example.com/login"))
        return "signed in"

    @server.tool()
    def wants_tools(ctx: RequestContext) -> str:
        if ctx.input_response("s") is None:
            tool = {"name": "t", "inputSchema": {"type": "object"}}
            return ctx.input_required(s=sample(["hi"], 10, tools=[tool]))
        return "sampled"

    @server.resource("file:///docs/{+path}")
    def doc(path: str) -> str:
        return f"doc {path}"

    return server


def test_a_command_string_is_refused_with_the_list_form() -> None:
    with pytest.raises(TypeError, match=r"\['python', 'server.py'\]"):
        Client("python server.py")
    with pytest.raises(TypeError, match="non-empty list"):
        Client([])


async def test_a_tool_never_sends_structured_content_its_schema_refuses() -> None:
    async with connected(make_server(), mode=V26) as client:
        for name in ("area", "prebuilt"):
            result = await client.call_tool(name)
            assert result.is_error and "outputSchema" in result.content[0].text
            assert result.structured_content is None
        good = await client.call_tool("good")
        assert good.structured_content == {"square_metres": 2.5}


async def test_the_client_refuses_structured_content_that_does_not_fit_the_tools_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    replies = {
        "tools/list": {"tools": [{"name": "count", "inputSchema": {"type": "object"}, "outputSchema": schema}]},
        "tools/call": {"content": [], "structuredContent": {"n": "three"}},
    }
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)

    async def scripted() -> None:
        while True:
            try:
                message = await peer.receive(timeout=10)
            except anyio.EndOfStream:
                return
            if message.get("method") == "ping":
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            elif message.get("method") == "initialize":
                result = {
                    "protocolVersion": V25,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                }
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif message.get("method") in replies:
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": replies[message["method"]]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted)
        async with Client(client_end, mode="handshake") as client:
            with pytest.raises(StructuredOutputError, match="n: 'three' is not of type 'integer'"):
                await client.call_tool("count")
        tg.cancel_scope.cancel()


async def test_missing_client_capabilities_are_named_by_their_full_path() -> None:
    async def form_only(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async def sampler(params: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}

    async with connected(
        make_server(), mode=V26, inputs=InputHandlers(elicitation=form_only, sampling=sampler)
    ) as client:
        with pytest.raises(MissingClientCapability, match=r"elicitation\.url") as caught:
            await client.call_tool("wants_url")
        assert caught.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}
        with pytest.raises(MissingClientCapability, match=r"sampling\.tools"):
            await client.call_tool("wants_tools")


async def test_every_unsupported_version_error_names_requested_and_supported() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "tools/list", {"_meta": meta("2099-01-01")})
        error = reply["error"]
        assert error["code"] == -32022
        assert "2099-01-01" in error["message"] and V26 in error["message"]
        assert error["data"] == {"supported": [V26, V25], "requested": "2099-01-01"}


async def test_a_modern_only_server_answers_initialize_as_an_unsupported_version() -> None:
    server = Server("modern-only", versions=[V26])
    async with raw_server(server) as peer:
        params = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
        error = (await peer.request(1, "initialize", params))["error"]
        assert error["code"] == -32022
        assert error["data"] == {"supported": [V26], "requested": V25}
        assert V26 in error["message"]
    with pytest.raises(NegotiationError, match=r"Unsupported protocol version .*code -32022"):
        async with connected(server, mode="handshake"):
            pass


@pytest.mark.parametrize(
    "uri", ["file:///docs/../../etc/passwd", "file:///docs/%2e%2e/%2e%2e/etc/passwd", "file:///docs/a/../../../x"]
)
async def test_a_reserved_template_never_hands_a_climbing_path_to_its_handler(uri: str) -> None:
    async with connected(make_server(), mode=V26) as client:
        with pytest.raises(McpError, match="resource not found"):
            await client.read_resource(uri)
        inside = await client.read_resource("file:///docs/guide/../intro.md")
        assert inside.contents[0].text == "doc intro.md"


def test_callbacks_of_the_wrong_arity_fail_when_registered() -> None:
    transport = memory_pair()[0]
    with pytest.raises(TypeError, match=r"ClientHooks\.on_log must accept 3"):
        Client(transport, hooks=ClientHooks(on_log=lambda level: None))
    with pytest.raises(TypeError, match=r"ClientHooks\.on_list_changed must accept 1"):
        Client(transport, hooks=ClientHooks(on_list_changed=lambda: None))
    with pytest.raises(TypeError, match=r"InputHandlers\.elicitation must accept 1"):
        Client(transport, inputs=InputHandlers(elicitation=lambda a, b: None))
    with pytest.raises(TypeError, match=r"InputHandlers\.sampling must be callable"):
        Client(transport, inputs=InputHandlers(sampling="nope"))  # type: ignore[arg-type]
    Client(transport, hooks=ClientHooks(on_log=lambda level, data, logger=None: None, on_resource_updated=print))


async def test_an_overlong_uri_is_refused_before_matching() -> None:
    async with connected(make_server(), mode=V26) as client:
        with pytest.raises(McpError, match="over the 65536-character limit") as caught:
            await client.read_resource("file:///docs/" + "a" * 70_000)
        assert caught.value.code == -32602


def test_tools_declare_the_scopes_a_caller_needs() -> None:
    server = Server("scoped")

    @server.tool(scopes=["files:write"])
    def write(path: str) -> str:
        return path

    @server.tool
    def read(path: str) -> str:
        return path

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    assert server.scopes_for({**call, "params": {"name": "write"}}) == {"files:write"}
    assert server.scopes_for({**call, "params": {"name": "read"}}) == frozenset()
    assert server.scopes_for({**call, "params": {"name": "nope"}}) == frozenset()
    assert server.scopes_for({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) == frozenset()


@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_a_server_object_is_served_in_process_for_the_clients_lifetime(mode: str) -> None:
    server = make_server()
    async with Client(server, mode=mode) as client:
        assert (await client.call_tool("good")).structured_content == {"square_metres": 2.5}
        assert len(server.sessions) == 1
    with anyio.fail_after(10):
        while server.sessions:
            await anyio.sleep(0.01)
