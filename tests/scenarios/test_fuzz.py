"""Whatever bytes arrive, the server answers or ignores them and keeps serving (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcpgen.runtime import Client, RequestContext, Server, ServerLimits, Timeouts, memory_pair
from support.peers import RawPeer, meta, raw_server

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
methods = st.sampled_from(
    [
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/get",
        "resources/read",
        "server/discover",
        "subscriptions/listen",
        "notifications/cancelled",
        "notifications/initialized",
        "completion/complete",
        "x/y",
    ]
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", None]), "method": methods},
    optional={
        "id": st.one_of(st.integers(-5, 5), st.text(max_size=3), st.none(), st.booleans()),
        "params": json_values,
    },
)
modern_calls = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.integers(1000, 2000),
        "method": methods,
        "params": st.fixed_dictionaries(
            {"_meta": st.just(meta())},
            optional={
                "name": json_values,
                "arguments": json_values,
                "uri": json_values,
                "cursor": json_values,
                "requestState": json_values,
                "inputResponses": json_values,
            },
        ),
    },
)
odd_ids = st.one_of(st.booleans(), st.floats(allow_nan=False), st.none(), st.lists(st.integers(), max_size=2))
non_ascii = st.text(alphabet="éü☃ÿ\u0000\u200b.v1", min_size=1, max_size=12)
hostile = st.one_of(
    # tokens that are not JSON, ids that are not ids, methods and params of the wrong type
    st.sampled_from([b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', b"Infinity", b"-Infinity", b"[]"]),
    odd_ids.map(lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).encode()),
    st.sampled_from([None, 5, [], {}]).map(lambda m: json.dumps({"jsonrpc": "2.0", "id": 3, "method": m}).encode()),
    st.sampled_from(["x", 5, [1], True]).map(
        lambda p: json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": p}).encode()
    ),
    odd_ids.map(
        lambda i: json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}
        ).encode()
    ),
    # forged cursors and request state, whatever their bytes
    non_ascii.map(
        lambda c: json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta(), "cursor": c}}
        ).encode()
    ),
    non_ascii.map(
        lambda c: json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "tools/call",
                "params": {"_meta": meta(), "name": "ask", "requestState": c},
            }
        ).encode()
    ),
    # over the 4096-byte limit, with the id first or last
    st.integers(4097, 9000).map(
        lambda n: b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"p":"' + b"x" * n + b'"}}'
    ),
    st.integers(4097, 9000).map(
        lambda n: b'{"params":{"p":"' + b"x" * n + b'"},"jsonrpc":"2.0","id":8,"method":"ping"}'
    ),
)
frames = st.one_of(
    st.binary(max_size=60),
    messages.map(lambda m: json.dumps({k: v for k, v in m.items() if v is not None}).encode()),
    modern_calls.map(lambda m: json.dumps(m).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    hostile,
)
backends = st.sampled_from(["asyncio", "trio"])


def make_server() -> Server:
    server = Server("fuzz", limits=ServerLimits(page_size=1))

    @server.tool()
    def echo(text: str = "") -> str:
        return text

    @server.prompt()
    def greet(name: str) -> str:
        return name

    @server.resource("mem://{x}")
    def thing(x: str) -> str:
        return x

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        from mcpgen.runtime.protocol.input_requests import elicit

        if ctx.input_response("q") is None:
            return ctx.input_required(q=elicit("?", {"type": "object", "properties": {"a": {"type": "string"}}}))
        return "ok"

    return server


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(batch=st.lists(frames, min_size=1, max_size=8), backend=backends)
def test_random_frames_never_break_the_server(batch: list[bytes], backend: str) -> None:
    async def main() -> None:
        async with raw_server(make_server(), max_message_bytes=4096) as peer:
            for frame in batch:
                await peer.send_raw(frame)
            probe: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": "probe",
                "method": "tools/call",
                "params": {"_meta": meta(), "name": "echo", "arguments": {"text": "alive"}},
            }
            await peer.send(probe)
            with anyio.fail_after(5):
                while True:
                    reply = await peer.receive()
                    if reply.get("id") == "probe":
                        break
            assert reply["result"]["content"] == [{"type": "text", "text": "alive"}]

    anyio.run(main, backend=backend)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(batch=st.lists(frames, min_size=1, max_size=8), backend=backends)
def test_random_frames_never_break_the_client(batch: list[bytes], backend: str) -> None:
    async def main() -> None:
        client_end, server_end = memory_pair(max_message_bytes=4096)
        peer = RawPeer(server_end)
        async with Client(client_end, mode="2026-07-28", timeouts=Timeouts(request=5)) as client:
            for frame in batch:
                await peer.send_raw(frame)

            async def answer() -> None:
                while True:
                    message = await peer.receive()
                    if message.get("method") == "tools/list":
                        result = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}
                        await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                        return

            async with anyio.create_task_group() as tg:
                tg.start_soon(answer)
                with anyio.fail_after(5):
                    assert (await client.list_tools()).tools == []

    anyio.run(main, backend=backend)
