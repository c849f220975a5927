"""The modern era (2026-07-28) over Streamable HTTP: one self-contained request per POST."""

from __future__ import annotations

import base64
from typing import Annotated, Any

import anyio
import pytest
from mcpgen.runtime import RequestContext, Sealing, Server, mcp_header
from mcpgen.runtime.protocol.input_requests import elicit
from support.asgi_driver import V25, V26, AsgiClient, asgi_client, meta, modern_headers, request

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    server = Server("http-test", "1.0", sealing=Sealing(keys=[b"k" * 32]))

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def slow(ctx: RequestContext, steps: int = 3) -> str:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps)
        return "done"

    @server.tool()
    def region(
        where: Annotated[str, mcp_header("Region")] = "none", count: Annotated[int, mcp_header("Count")] = 0
    ) -> str:
        return f"{where}:{count}"

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        first, second = ctx.input_response("name"), ctx.input_response("color")
        if second is not None and isinstance(ctx.state, dict):
            return f"{ctx.state['n']} likes {second.content['c']}"
        if first is None:
            return ctx.input_required(name=elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}}))
        schema = {"type": "object", "properties": {"c": {"type": "string"}}}
        return ctx.input_required(state={"n": first.content["n"]}, color=elicit("Color?", schema))

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.resource("mem://a")
    def a_resource() -> str:
        return "a"

    return server


async def call(client: AsgiClient, id: Any, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
    params = {**(params or {}), "_meta": meta(caps={"elicitation": {}})}
    name = params.get("name") if method in ("tools/call", "prompts/get") else params.get("uri")
    headers = modern_headers(method, name, **kw)
    return await client.post(request(id, method, params), headers)


async def test_a_tool_call_is_answered_with_json_and_no_session() -> None:
    async with asgi_client(make_server().http_app()) as client:
        reply = await call(
            client, 1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, **{"mcp-session-id": "x"}
        )
        assert reply.status == 200 and reply.headers["content-type"] == "application/json"
        assert "mcp-session-id" not in reply.headers
        body = await reply.json()
        assert body["id"] == 1 and body["result"]["structuredContent"] == {"result": 5}
        assert body["result"]["resultType"] == "complete"


async def test_the_ladder_maps_each_refusal_to_its_status_and_echoes_the_id() -> None:
    async with asgi_client(make_server().http_app()) as client:
        no_meta = await client.post(request(7, "tools/list", {}), modern_headers("tools/list"))
        assert no_meta.status == 400 and (await no_meta.json())["error"]["code"] == -32602
        assert (await no_meta.json())["id"] == 7
        wrong_header = await client.post(
            request(8, "tools/list", {"_meta": meta("v999")}), modern_headers("tools/list", version=V26)
        )
        assert wrong_header.status == 400 and (await wrong_header.json())["error"]["code"] == -32020
        unsupported = await client.post(
            request(9, "tools/list", {"_meta": meta("v999")}), modern_headers("tools/list", version="v999")
        )
        error = (await unsupported.json())["error"]
        assert unsupported.status == 400 and error["code"] == -32022
        assert error["data"]["requested"] == "v999" and V26 in error["data"]["supported"]
        for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"):
            reply = await client.post(request(10, method, {"_meta": meta()}), modern_headers(method))
            body = await reply.json()
            assert (reply.status, body["error"]["code"], body["id"]) == (404, -32601, 10), method
        wrong_method = await client.post(request(11, "tools/list", {"_meta": meta()}), modern_headers("prompts/list"))
        assert wrong_method.status == 400 and (await wrong_method.json())["error"]["code"] == -32020
        no_name = await client.post(
            request(12, "tools/call", {"name": "add", "arguments": {}, "_meta": meta()}), modern_headers("tools/call")
        )
        assert no_name.status == 400 and (await no_name.json())["error"]["code"] == -32020


async def test_padded_and_case_insensitive_headers_are_accepted() -> None:
    async with asgi_client(make_server().http_app()) as client:
        params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta()}
        headers = {"MCP-PROTOCOL-VERSION": V26, "Mcp-Method": "tools/call", "mcp-name": "  add  "}
        reply = await client.post(request(1, "tools/call", params), headers)
        assert reply.status == 200 and "result" in await reply.json()


async def test_mcp_param_headers_are_checked_against_the_arguments() -> None:
    async with asgi_client(make_server().http_app()) as client:

        async def region(headers: dict[str, str], arguments: dict[str, Any]) -> tuple[int, Any]:
            params = {"name": "region", "arguments": arguments, "_meta": meta()}
            reply = await client.post(
                request(1, "tools/call", params), modern_headers("tools/call", "region", **headers)
            )
            return reply.status, await reply.json()

        status, body = await region({"mcp-param-region": "eu", "mcp-param-count": "3"}, {"where": "eu", "count": 3})
        assert status == 200 and body["result"]["content"][0]["text"] == "eu:3"
        encoded = "=?base64?" + base64.b64encode("über".encode()).decode() + "?="
        status, body = await region({"mcp-param-region": encoded}, {"where": "über"})
        assert status == 200 and body["result"]["content"][0]["text"] == "über:0"
        for headers, arguments in (
            ({}, {"where": "eu"}),  # omitted while the body has a value
            ({"mcp-param-region": "us"}, {"where": "eu"}),  # different
            ({"mcp-param-region": "=?base64?ZXU?="}, {"where": "eu"}),  # bad padding
            ({"mcp-param-region": "=?base64?Z!!X=?="}, {"where": "eu"}),  # not the Base64 alphabet
            ({"mcp-param-count": "three"}, {"count": 3}),
        ):
            status, body = await region(headers, arguments)
            assert (status, body["error"]["code"]) == (400, -32020), headers
        status, body = await region({"mcp-param-region": "=?base64?ZXU"}, {"where": "=?base64?ZXU"})  # literal
        assert status == 200


async def test_notifications_stream_as_sse_then_the_response() -> None:
    async with asgi_client(make_server().http_app()) as client:
        params = {"name": "slow", "arguments": {"steps": 3}, "_meta": {**meta(), "progressToken": "p"}}
        reply = await client.post(request(3, "tools/call", params), modern_headers("tools/call", "slow"))
        assert reply.status == 200 and reply.sse and reply.headers["x-accel-buffering"] == "no"
        messages = await reply.messages()
        assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
        assert messages[-1]["id"] == 3 and messages[-1]["result"]["content"][0]["text"] == "done"


async def test_multi_round_call_and_tampered_state() -> None:
    async with asgi_client(make_server().http_app()) as client:
        first = await (await call(client, 1, "tools/call", {"name": "ask", "arguments": {}})).json()
        state = first["result"]["requestState"]
        assert first["result"]["resultType"] == "input_required"
        answer = {"name": {"action": "accept", "content": {"n": "Ada"}}}
        second = await call(
            client, 2, "tools/call", {"name": "ask", "arguments": {}, "inputResponses": answer, "requestState": state}
        )
        state2 = (await second.json())["result"]["requestState"]
        answer2 = {"color": {"action": "accept", "content": {"c": "green"}}}
        params = {"name": "ask", "arguments": {}, "inputResponses": answer2, "requestState": state2}
        done = await (await call(client, 3, "tools/call", params)).json()
        assert done["result"]["content"][0]["text"] == "Ada likes green"
        tampered = await call(client, 4, "tools/call", {**params, "requestState": state2 + "-TAMPERED"})
        body = await tampered.json()
        assert tampered.status == 400 and body["error"]["code"] == -32602 and body["id"] == 4


async def test_get_and_delete_are_405_and_other_posts_are_refused() -> None:
    async with asgi_client(make_server().http_app()) as client:
        for method in ("GET", "DELETE"):
            reply = await client.send(method, None, {"mcp-protocol-version": V26, "mcp-session-id": "s"})
            assert reply.status == 405 and reply.headers["allow"] == "POST"
        note = await client.post({"jsonrpc": "2.0", "method": "notifications/cancelled"}, modern_headers("x"))
        assert note.status == 202 and await note.read() == b""
        response = await client.post({"jsonrpc": "2.0", "id": 1, "result": {}}, modern_headers("x"))
        assert response.status == 400 and (await response.json())["error"]["code"] == -32600


async def test_a_closed_response_stream_cancels_the_handler() -> None:
    server = make_server()
    started, cancelled = anyio.Event(), anyio.Event()

    @server.tool()
    async def wait_forever(ctx: RequestContext) -> str:
        await ctx.report_progress(1)
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    async with asgi_client(server.http_app()) as client:
        params = {"name": "wait_forever", "arguments": {}, "_meta": {**meta(), "progressToken": 1}}
        reply = await client.post(request(1, "tools/call", params), modern_headers("tools/call", "wait_forever"))
        assert reply.sse
        await started.wait()
        reply.disconnect()
        with anyio.fail_after(5):
            await cancelled.wait()


async def test_listen_streams_ack_first_deliver_keep_alive_and_end_gracefully() -> None:
    server = make_server()
    app = server.http_app(keepalive=0.05)
    async with asgi_client(app) as client:
        params = {"notifications": {"toolsListChanged": True, "promptsListChanged": False}, "_meta": meta()}
        reply = await client.post(request("L", "subscriptions/listen", params), modern_headers("subscriptions/listen"))
        assert reply.sse
        events = reply.events()
        ack = await anext(events)
        assert ack.json()["method"] == "notifications/subscriptions/acknowledged"
        assert ack.json()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
        assert ack.json()["params"]["notifications"] == {"toolsListChanged": True}
        server.add_prompt(lambda: "x", name="p2")  # not asked for: never sent
        server.add_tool(lambda: "x", name="t2")
        change = await next_data(events)
        assert change.json()["method"] == "notifications/tools/list_changed"
        assert change.json()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
        comment = await anext(events)  # quiet now: a keep-alive comment line comes
        assert comment.comment and comment.data is None
        app.close_streams()
        rest = [e async for e in events if e.data]
        assert [m.json()["id"] for m in rest] == ["L"]
        assert rest[0].json()["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"


async def next_data(events: Any) -> Any:
    """The next event with data (comments skipped)."""
    async for event in events:
        if event.data:
            return event
    raise AssertionError("the stream ended")


async def test_a_quiet_call_commits_to_sse_and_gets_keep_alives() -> None:
    server = make_server()
    release = anyio.Event()

    @server.tool()
    async def quiet() -> str:
        await release.wait()
        return "ok"

    async with asgi_client(server.http_app(keepalive=0.05)) as client:
        params = {"name": "quiet", "arguments": {}, "_meta": meta()}
        reply = await client.post(request(1, "tools/call", params), modern_headers("tools/call", "quiet"))
        assert reply.sse
        events = reply.events()
        assert (await anext(events)).comment
        release.set()
        assert [e.json()["result"]["content"][0]["text"] async for e in events if e.data] == ["ok"]


async def test_a_modern_body_without_the_version_header_is_a_header_mismatch() -> None:
    async with asgi_client(make_server().http_app()) as client:
        reply = await client.post(request(1, "tools/list", {"_meta": meta()}), {"mcp-method": "tools/list"})
        assert reply.status == 400 and (await reply.json())["error"]["code"] == -32020


async def test_prompts_and_resources_need_their_name_header() -> None:
    async with asgi_client(make_server().http_app()) as client:
        prompt = await call(client, 1, "prompts/get", {"name": "greet", "arguments": {"name": "Bo"}})
        assert (await prompt.json())["result"]["messages"][0]["content"]["text"] == "Hello Bo"
        read = await call(client, 2, "resources/read", {"uri": "mem://a"})
        assert (await read.json())["result"]["contents"][0]["text"] == "a"
        missing = await call(client, 3, "resources/read", {"uri": "mem://nope"})
        body = await missing.json()
        assert (
            missing.status == 400 and body["error"]["code"] == -32602 and body["error"]["data"]["uri"] == "mem://nope"
        )
        legacy_header = await client.post(
            request(4, "tools/list", {"_meta": meta()}), {"mcp-protocol-version": V25}
        )  # a handshake-era header: the session path, which wants a session
        assert legacy_header.status == 400


async def test_a_change_made_while_the_listen_ack_is_sent_is_delivered_after_it() -> None:
    """The acknowledgement tells the client it hears every change from then on; a change made
    while the acknowledgement is still being written (another request's, on a loaded machine)
    is queued for the stream and sent after it, never lost."""
    server = make_server()
    app = server.http_app()

    async def change_during_ack(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and b"subscriptions/acknowledged" in message.get("body", b""):
                server.add_prompt(lambda: "x", name="made_during_the_ack")
            await send(message)

        await app(scope, receive, sending)

    async with app.run(), asgi_client(change_during_ack, run=False) as client:
        params = {"notifications": {"toolsListChanged": True, "promptsListChanged": True}, "_meta": meta()}
        reply = await client.post(request("L", "subscriptions/listen", params), modern_headers("subscriptions/listen"))
        events = reply.events()
        ack = await next_data(events)
        assert ack.json()["method"] == "notifications/subscriptions/acknowledged"
        server.add_tool(lambda: "x", name="made_after_the_ack")
        assert (await next_data(events)).json()["method"] == "notifications/prompts/list_changed"
        assert (await next_data(events)).json()["method"] == "notifications/tools/list_changed"
        app.close_streams()
