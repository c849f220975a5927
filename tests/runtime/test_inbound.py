"""The pure parts of the runtime, tested synchronously: the JSON-RPC envelope, inbound routing
(the modern ladder and its HTTP statuses), the HTTP routing headers, and the negotiation decisions."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import V25, V26, meta
from mcpgen.runtime import Server
from mcpgen.runtime.protocol import http_headers as h
from mcpgen.runtime.protocol import wire
from mcpgen.runtime.protocol.eras import Eras
from mcpgen.runtime.protocol.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    UnsupportedProtocolVersion,
    http_status,
)
from mcpgen.runtime.protocol.negotiation import Adopt, Fail, Initialize, Negotiation, Probe
from mcpgen.runtime.protocol.routing import Call, Rejection, Route
from mcpgen.runtime.protocol.tables import VersionRegistry

REGISTRY = VersionRegistry()


def make_server(**options: Any) -> Server:
    server = Server("pure", **options)

    @server.tool()
    def hello(region: str = "") -> str:
        return region

    @server.prompt()
    def greet() -> str:
        return "hi"

    return server


def modern_headers(method: str, version: str = V26, **extra: str) -> dict[str, str]:
    return {"mcp-protocol-version": version, "mcp-method": method, **{k.lower(): v for k, v in extra.items()}}


# -- the envelope ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', wire.Request(1, "ping", None)),
        (
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            wire.Notification("notifications/initialized", None),
        ),
        (b'{"jsonrpc":"2.0","id":"a","result":{}}', wire.Response("a", result={})),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', wire.Response(1, error={"code": 1}, is_error=True)),
        (b"{nope", PARSE_ERROR),
        (b'{"x": NaN}', PARSE_ERROR),
        (b"[]", INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":4,"method":null}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}', INVALID_PARAMS),
        (b'{"jsonrpc":"1.0","id":4,"method":"ping"}', INVALID_REQUEST),
    ],
)
def test_decode_classifies_every_message(data: bytes, expected: object) -> None:
    found = wire.decode(data)
    if isinstance(expected, int):
        assert isinstance(found, wire.Invalid) and found.code == expected
    else:
        assert found == expected


def test_refusals_keep_the_id_when_there_is_one_and_answer_only_requests() -> None:
    found = wire.decode(b'{"jsonrpc":"2.0","id":4,"method":null}')
    assert isinstance(found, wire.Invalid) and found.id == 4 and found.answer
    silent = wire.decode(b'{"jsonrpc":"1.0","method":"x"}')
    assert isinstance(silent, wire.Invalid) and not silent.answer
    assert wire.partial_id(b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"aaaa') == ("big", True)
    assert wire.partial_id(b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"te') == (3, False)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (-32700, 400),
        (-32600, 400),
        (-32602, 400),
        (-32020, 400),
        (-32021, 400),
        (-32022, 400),
        (-32601, 404),
        (-32603, 200),
    ],
)
def test_error_codes_map_to_http_statuses(code: int, status: int) -> None:
    assert http_status(code) == status


# -- routing ---------------------------------------------------------------------------------------


def route(server: Server, method: str, params: dict[str, Any] | None, **call: Any) -> Route | Rejection:
    return server.router.route(Call(method, params, **call))


def rejected(found: Route | Rejection, code: int) -> Rejection:
    assert isinstance(found, Rejection), found
    assert found.code == code, found
    return found


def test_a_modern_request_routes_to_its_version_row_and_parsed_params() -> None:
    found = route(make_server(), "tools/call", {"name": "hello", "_meta": meta()})
    assert isinstance(found, Route)
    assert (found.version, found.era.name, found.spec.method, found.params.name) == (
        V26,
        "modern",
        "tools/call",
        "hello",
    )


def test_the_modern_ladder_runs_meta_then_headers_then_version() -> None:
    server = make_server()
    no_version = {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}
    # _meta incomplete + a valid header -> -32602 (not -32020)
    found = rejected(route(server, "tools/list", no_version, headers=modern_headers("tools/list")), -32602)
    assert found.http_status == 400
    # header and body disagree on the version (body unsupported) -> -32020 (not -32022)
    body = {"_meta": meta("v999.0.0")}
    rejected(route(server, "tools/list", body, headers=modern_headers("tools/list")), -32020)
    # both unsupported -> -32022 naming requested and supported
    found = rejected(route(server, "tools/list", body, headers=modern_headers("tools/list", "v999.0.0")), -32022)
    assert found.data == {"supported": [V26, V25], "requested": "v999.0.0"}
    assert "v999.0.0" in found.message and V26 in found.message


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("tools/list", {}, {"mcp-method": "tools/list"}),  # no MCP-Protocol-Version
        ("tools/list", {}, {"mcp-protocol-version": V26}),  # no Mcp-Method
        ("tools/list", {}, modern_headers("TOOLS/LIST")),  # values are case-sensitive
        ("tools/call", {"name": "hello"}, modern_headers("tools/call")),  # no Mcp-Name
        ("tools/call", {"name": "hello"}, modern_headers("tools/call", **{"Mcp-Name": "other"})),
        ("tools/call", {"name": "hello"}, modern_headers("tools/call", **{"Mcp-Name": "=?base64?!!!?="})),
    ],
)
def test_routing_headers_must_match_the_body(method: str, params: dict[str, Any], headers: dict[str, str]) -> None:
    rejected(route(make_server(), method, {**params, "_meta": meta()}, headers=headers), -32020)


def test_routing_headers_that_match_pass_in_every_form() -> None:
    server = make_server()
    for name in ("hello", "  hello ", "=?base64?aGVsbG8=?="):
        headers = modern_headers("tools/call", **{"Mcp-Name": name})
        assert isinstance(route(server, "tools/call", {"name": "hello", "_meta": meta()}, headers=headers), Route)


def test_methods_absent_from_the_modern_table_are_method_not_found_with_404() -> None:
    server = make_server()
    for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"):
        found = rejected(route(server, method, {"_meta": meta()}), -32601)
        assert found.http_status == 404


def test_handshake_routing_initialize_session_and_ping() -> None:
    server = make_server()
    init = {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    found = route(server, "initialize", init)
    assert isinstance(found, Route) and found.version == V25 and found.era.name == "handshake"
    assert isinstance(route(server, "ping", None), Route), "ping may come before initialize"
    rejected(route(server, "tools/list", None), -32602)  # neither initialized nor modern
    on_session = route(server, "tools/list", None, session_version=V25)
    assert isinstance(on_session, Route) and on_session.version == V25
    modern_on_session = route(server, "tools/list", {"_meta": meta()}, session_version=V25)
    assert isinstance(modern_on_session, Route) and modern_on_session.version == V26


def test_a_modern_only_server_answers_initialize_as_an_unsupported_version() -> None:
    found = rejected(route(make_server(versions=[V26]), "initialize", {"protocolVersion": V25}), -32022)
    assert found.data == {"supported": [V26], "requested": V25}
    assert isinstance(found.error(), UnsupportedProtocolVersion)


def test_gates_handlers_and_params() -> None:
    server = make_server()
    rejected(route(server, "completion/complete", {"_meta": meta(), "ref": {}, "argument": {}}), -32601)  # not offered
    rejected(route(server, "tools/call", {"_meta": meta()}), -32602)  # name missing
    server.handlers.pop("prompts/list")
    rejected(route(server, "prompts/list", {"_meta": meta()}), -32601)  # no handler


# -- HTTP header values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        (42, "42"),
        (False, "false"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        (None, None),
    ],
)
def test_header_values_encode_and_decode(value: object, header: str | None) -> None:
    assert h.encode_value(value) == header
    if header is not None and isinstance(value, str):
        assert h.decode_value(header) == value


def test_header_names_are_tokens() -> None:
    assert h.valid_header_name("Region") and h.valid_header_name("X-Trace_1")
    for bad in ("", "two words", "a:b", "é", "tab\t", None, 5):
        assert not h.valid_header_name(bad)


# -- negotiation decisions ---------------------------------------------------------------------------


def plan(mode: str = "auto", versions: tuple[str, ...] = (V25, V26)) -> Negotiation:
    return Negotiation(Eras(REGISTRY), versions, mode)


DISCOVER = {"resultType": "complete", "supportedVersions": [V26, V25], "capabilities": {}}


def test_negotiation_starts_by_mode() -> None:
    assert plan().start() == Probe(V26)
    assert plan("handshake").start() == Initialize(V25, exact=False)
    assert plan(V26).start() == Adopt(V26, None)
    assert plan(V25).start() == Initialize(V25, exact=True)
    assert plan(versions=(V25,)).start() == Initialize(V25, exact=False)
    assert isinstance(plan("handshake", (V26,)).start(), Fail)


def test_negotiation_after_discover() -> None:
    p = plan()
    p.start()
    assert p.after_discover(DISCOVER, V26) == Adopt(V26, DISCOVER)
    assert p.after_discover({**DISCOVER, "supportedVersions": [V25]}, V26) == Initialize(V25, exact=False)
    assert p.after_discover({"supportedVersions": [V26]}, V26) == Initialize(V25, exact=False), "no resultType: legacy"
    assert isinstance(p.after_discover({**DISCOVER, "supportedVersions": ["2030-01-01"]}, V26), Fail)


def test_negotiation_after_a_refused_probe() -> None:
    p = plan()
    p.start()
    refusal = UnsupportedProtocolVersion("no", data={"supported": [V26], "requested": V26})
    assert p.after_probe_error(refusal, V26) == Probe(V26), "one retry with the version the server lists"
    assert isinstance(p.after_probe_error(refusal, V26), Fail), "but not forever"
    from mcpgen.runtime.protocol.errors import HeaderMismatch, MethodNotFound

    assert isinstance(p.after_probe_error(HeaderMismatch("h"), V26), Fail), "a modern error never falls back"
    assert p.after_probe_error(MethodNotFound("m"), V26) == Initialize(V25, exact=False)


def test_negotiation_after_initialize() -> None:
    answer = {"protocolVersion": V25, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    assert plan().after_initialize(answer, V25, exact=False) == Adopt(V25, answer)
    assert isinstance(plan().after_initialize({**answer, "protocolVersion": "2024-11-05"}, V25, exact=False), Fail)
    assert isinstance(plan().after_initialize({"protocolVersion": V25}, V25, exact=True), Fail), "invalid result"
