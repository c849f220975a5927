"""What reaches the endpoint before JSON-RPC: Host/Origin checks, methods, media types, sizes, paths;
and a fuzz test: no request makes the app raise or answer 5xx."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcpgen.runtime import Server
from mcpgen.runtime.server.http.events import MemoryEventStore
from mcpgen.runtime.server.http.security import HttpSecurity, is_loopback
from support.asgi_driver import V25, V26, asgi_client, meta, modern_headers, request
from support.named_tokens import as_user, protection

pytestmark = pytest.mark.anyio
LIST = request(1, "tools/list", {"_meta": meta()})


def make_server() -> Server:
    server = Server("input-test")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def status_of(app: Any, headers: dict[str, str], server: tuple[str, int] = ("127.0.0.1", 8000)) -> int:
    async with asgi_client(app, server=server) as client:
        return (await client.post(LIST, {**modern_headers("tools/list"), **headers})).status


async def test_loopback_binding_refuses_other_hosts_and_origins() -> None:
    app = make_server().http_app()
    assert await status_of(app, {}) == 200
    assert await status_of(app, {"host": "evil.example.com", "origin": "http://evil.example.com"}) == 421
    assert await status_of(app, {"host": "localhost:9999"}) == 200
    assert await status_of(app, {"host": "[::1]:8000", "origin": "http://[::1]:8000"}) == 200
    assert await status_of(app, {"origin": "http://evil.example.com"}) == 403
    assert await status_of(app, {"origin": "null"}) == 403
    allowed = make_server().http_app(
        security=HttpSecurity(allowed_hosts=["mcp.test:*"], allowed_origins=["https://ok.test"])
    )
    assert await status_of(allowed, {"host": "mcp.test:443", "origin": "https://ok.test"}) == 200
    assert await status_of(allowed, {"host": "mcp.test"}) == 421


async def test_other_bindings_refuse_cross_origin_requests_only() -> None:
    app = make_server().http_app()
    public = ("10.1.2.3", 443)
    assert await status_of(app, {"host": "mcp.example.com"}, public) == 200
    assert await status_of(app, {"host": "mcp.example.com", "origin": "https://mcp.example.com"}, public) == 200
    assert await status_of(app, {"host": "mcp.example.com", "origin": "https://evil.example.com"}, public) == 403
    everyone = make_server().http_app(security=HttpSecurity(allowed_origins=["*"]))
    assert await status_of(everyone, {"host": "mcp.example.com", "origin": "https://evil.example.com"}, public) == 200
    strict = make_server().http_app(security=HttpSecurity(dns_rebinding_protection=True))
    assert await status_of(strict, {"host": "mcp.example.com"}, public) == 421
    assert is_loopback("127.0.0.2") and is_loopback("::1") and not is_loopback("10.0.0.1") and not is_loopback(None)


async def test_verdicts_kept_per_header_value_follow_the_values_and_the_settings() -> None:
    """The app keeps its Host/Origin and Content-Type/Accept verdicts per value seen: the same
    values get the same answer again, other values (or another bound address) their own, and
    replaced settings apply from the next request on."""
    app = make_server().http_app()
    public = ("10.1.2.3", 443)
    for _ in range(2):
        assert await status_of(app, {"host": "mcp.example.com"}, public) == 200
        assert await status_of(app, {"host": "mcp.example.com"}) == 421  # bound to loopback: strict
        assert await status_of(app, {"content-type": "text/plain"}) == 415
        assert await status_of(app, {"accept": "application/json"}) == 406
        assert await status_of(app, {}) == 200
    app.security = HttpSecurity(dns_rebinding_protection=True)
    assert await status_of(app, {"host": "mcp.example.com"}, public) == 421


@pytest.mark.parametrize("parts", [1, 3])
async def test_a_body_in_several_messages_is_read_whole_refused_past_the_limit_or_dropped_on_hang_up(
    parts: int,
) -> None:
    app = make_server().http_app(security=HttpSecurity(max_body_bytes=2000))

    async def post(text: str, hang_up: bool = False) -> tuple[int | None, bytes]:
        call = request(7, "tools/call", {"name": "echo", "arguments": {"text": text}, "_meta": meta()})
        raw = json.dumps(call).encode()
        size = -(-len(raw) // parts)
        pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1} for i, piece in enumerate(pieces)
        ]
        if hang_up:
            messages = messages[:-1]  # the client goes away before the body's end
        sent: list[dict[str, Any]] = []
        complete = anyio.Event()

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            if not hang_up:  # as ASGI servers do: a disconnect once the response is complete
                await complete.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                complete.set()

        headers = {
            "host": "127.0.0.1:8000",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **modern_headers("tools/call", "echo"),
        }
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "root_path": "",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            "server": ("127.0.0.1", 8000),
        }
        await app(scope, receive, send)
        status = sent[0]["status"] if sent else None
        return status, b"".join(m.get("body", b"") for m in sent[1:])

    async with app.run():
        status, body = await post("hello")
        assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "hello"
        status, body = await post("x" * 5000)  # no Content-Length: counted as it arrives
        assert status == 413 and json.loads(body)["error"]["data"]["limit"] == 2000
        if parts > 1:
            assert await post("hello", hang_up=True) == (None, b"")  # nothing to answer


async def test_media_types_methods_sizes_and_paths_get_their_4xx() -> None:
    app = make_server().http_app(security=HttpSecurity(max_body_bytes=2000))
    async with asgi_client(app) as client:
        headers = modern_headers("tools/list")
        assert (await client.post(LIST, headers, content_type="text/plain")).status == 415
        assert (await client.post(LIST, headers, content_type=None)).status == 415
        assert (await client.post(LIST, headers, accept="application/json")).status == 406
        assert (await client.post(LIST, headers, accept=None)).status == 406
        assert (await client.post(LIST, headers, accept="*/*")).status == 200
        assert (await client.post(LIST, headers, content_type="application/json; charset=utf-8")).status == 200
        big = request(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * 5000}, "_meta": meta()})
        too_big = await client.post(big, modern_headers("tools/call", "echo"))
        assert too_big.status == 413 and (await too_big.json())["error"]["data"]["limit"] == 2000
        declared = await client.post(b"{}", {**headers, "content-length": "999999"})
        assert declared.status == 413
        assert (await client.send("PUT", LIST, headers)).status == 405
        assert (await client.post(LIST, headers, path="/elsewhere")).status == 404
        assert (await client.post(LIST, headers, path="/mcp/")).status == 200
        parse = await client.post(b"{not json", headers)
        assert parse.status == 400 and (await parse.json())["error"]["code"] == -32700
        batch = await client.post(b"[]", headers)
        assert batch.status == 400 and (await batch.json())["error"]["code"] == -32600
        legacy_parse = await client.post(b"{not json", {"mcp-protocol-version": V25})
        assert legacy_parse.status == 400 and (await legacy_parse.json())["error"]["code"] == -32700


def deep(levels: int) -> bytes:
    head = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": '
    return head + b"[" * levels + b"]" * levels + b"}}"


BAD_BODIES = [
    pytest.param(deep(1_000), id="1000-deep"),
    pytest.param(deep(100_000), id="100000-deep"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": NaN}}', id="nan"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}', id="invalid-utf8-in-a-string"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}', id="lone-surrogate"),
    pytest.param(b"\xff\xfe{}", id="not-utf8"),
    pytest.param(b"{not json", id="syntax"),
]


@pytest.mark.parametrize("body", BAD_BODIES)
@pytest.mark.parametrize("protected", [False, True], ids=["open", "protected"])
async def test_bad_json_gets_one_answer_with_or_without_oauth(body: bytes, protected: bool) -> None:
    """Defect: a body nested ~1,000 levels deep, sent with a valid token to a protected endpoint,
    gave HTTP 500 (the auth middleware parsed bodies itself and caught only ValueError)."""
    app = make_server().http_app(auth=protection() if protected else None)
    authorization = as_user("alice") if protected else {}
    async with asgi_client(app) as client:
        for era in (modern_headers("tools/list"), {"mcp-protocol-version": V25}):
            reply = await client.post(body, {**era, **authorization})
            assert reply.status == 400, era
            assert (await reply.json())["error"]["code"] == -32700, era


async def test_a_protected_endpoint_parses_each_body_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpgen.runtime.protocol import wire

    decoded: list[bytes] = []
    original = wire.decode

    def counting(data: bytes | str) -> wire.Message:
        decoded.append(bytes(data) if isinstance(data, bytes) else data.encode())
        return original(data)

    monkeypatch.setattr(wire, "decode", counting)
    async with asgi_client(make_server().http_app(auth=protection())) as client:
        reply = await client.post(LIST, {**modern_headers("tools/list"), **as_user("alice")})
        assert reply.status == 200 and [t["name"] for t in (await reply.json())["result"]["tools"]] == ["echo"]
    assert len(decoded) == 1


async def test_an_app_mounted_under_a_prefix_serves_its_path() -> None:
    async with asgi_client(make_server().http_app()) as client:
        reply = await client.post(LIST, modern_headers("tools/list"), root_path="/tenant")
        assert reply.status == 200


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mounted_inside_starlette_with_its_lifespan(anyio_backend: str) -> None:
    import httpx
    from starlette.applications import Starlette
    from starlette.routing import Mount

    mcp = make_server().http_app()
    outer = Starlette(routes=[Mount("/api", app=mcp)], lifespan=mcp.lifespan)
    transport = httpx.ASGITransport(app=outer)
    async with outer.router.lifespan_context(outer):
        assert mcp.running
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
            init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            opened = await client.post("/api/mcp", json=request(0, "initialize", init), headers=headers)
            assert opened.status_code == 200 and opened.headers["mcp-session-id"]
            listed = await client.post("/api/mcp", json=LIST, headers={**headers, **modern_headers("tools/list")})
            assert [t["name"] for t in listed.json()["result"]["tools"]] == ["echo"]
    assert not mcp.running


async def test_the_event_store_keeps_the_most_recent_events_of_each_stream() -> None:
    store = MemoryEventStore(per_stream=3, max_streams=2)
    first = await store.store("s/1", None)
    ids = [await store.store("s/1", f"{n}".encode()) for n in range(3)]
    assert len(store) == 3 and await store.replay(first) is None  # pushed out by its own stream
    assert await store.replay(ids[0]) == ("s/1", [(ids[1], b"1"), (ids[2], b"2")])
    busy = [await store.store("t/1", b"t") for _ in range(50)]
    assert await store.replay(ids[0]) is not None, "another stream's events never evict this one's"
    assert await store.replay(busy[-3]) == ("t/1", [(busy[-2], b"t"), (busy[-1], b"t")])
    await store.store("u/1", b"u")  # a third stream: the one written to least recently goes, whole
    assert await store.replay(ids[1]) is None and await store.replay(busy[-1]) is not None
    await store.forget("t/")
    assert await store.replay(busy[-1]) is None and len(store) == 1
    assert await store.replay("garbage") is None and await store.replay("u/1#x") is None
    with pytest.raises(ValueError):
        MemoryEventStore(0)
    with pytest.warns(DeprecationWarning, match="per_stream"):
        assert MemoryEventStore(max_events=5).per_stream == 5


headers_strategy = st.dictionaries(
    st.sampled_from(
        [
            "mcp-protocol-version",
            "mcp-method",
            "mcp-name",
            "mcp-session-id",
            "last-event-id",
            "origin",
            "host",
            "content-type",
            "accept",
            "mcp-param-region",
            "content-length",
        ]
    ),
    st.one_of(
        st.sampled_from([V25, V26, "v999", "tools/call", "", "localhost", "=?base64?!!?=", "1e9"]), st.text(max_size=20)
    ),
    max_size=6,
)
message_strategy = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda m, i, p: json.dumps(
            {"jsonrpc": "2.0", **({"id": i} if i is not None else {}), "method": m, "params": p}
        ).encode(),
        st.sampled_from(
            ["initialize", "tools/list", "tools/call", "ping", "subscriptions/listen", "notifications/initialized", "x"]
        ),
        st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans()),
        st.one_of(
            st.none(),
            st.just({"_meta": meta()}),
            st.just({"name": "echo", "arguments": {"text": 1}}),
            st.lists(st.integers(), max_size=2),
        ),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["POST", "GET", "DELETE", "PATCH"]), headers=headers_strategy, body=message_strategy)
async def test_no_request_crashes_the_app(method: str, headers: dict[str, str], body: bytes) -> None:
    app = FUZZ_APP
    async with asgi_client(app) as client:
        with anyio.fail_after(10):
            reply = await client.send(
                method,
                body,
                {k: v.encode("latin-1", "replace").decode("latin-1") for k, v in headers.items()},
                accept=headers.get("accept", "application/json, text/event-stream"),
            )
            if reply.sse:
                reply.disconnect()  # a GET stream or a listen stream stays open: hang up
            else:
                await reply.read()
        assert 200 <= reply.status < 500, (method, headers, body, reply.status)


FUZZ_APP = make_server().http_app(keepalive=None)
