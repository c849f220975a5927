"""Inbound routing, tested synchronously: the version, era and table row a request is served with, the
modern ladder (`_meta`, headers, version) and its HTTP statuses, gates, handlers and params."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import Server
from mcpgen.runtime.protocol.errors import (
    UnsupportedProtocolVersion,
)
from mcpgen.runtime.protocol.routing import Call, Rejection, Route
from mcpgen.runtime.protocol.tables import VersionRegistry
from support.peers import V25, V26, meta

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


# -- extensions ------------------------------------------------------------------------------------

TASKS = "io.modelcontextprotocol/tasks"


def tasks_server() -> Server:
    server = make_server()

    @server.tool(task_support="optional")
    def crunch() -> str:
        return "crunched"

    return server


def test_an_extension_s_rows_are_served_only_when_the_server_enables_it() -> None:
    params = {"taskId": "t", "_meta": meta(caps={"extensions": {TASKS: {}}})}
    rejected(route(make_server(), "tasks/get", params), -32601)  # no task-capable tool: not in its tables
    found = route(tasks_server(), "tasks/get", params)
    assert isinstance(found, Route) and found.spec.capability.keys == ("extensions", TASKS)
    call = route(tasks_server(), "tools/call", {"name": "crunch", "_meta": meta()})
    assert isinstance(call, Route) and "task" in dict(call.spec.result_tags)  # the augmented row


def test_a_method_gated_on_both_sides_needs_the_request_to_declare_it() -> None:
    found = rejected(route(tasks_server(), "tasks/cancel", {"taskId": "t", "_meta": meta()}), -32021)
    assert found.http_status == 400
    assert found.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}  # the id is one key, dots and all
    # A self-contained request declares for itself, whatever its connection said before; in an era
    # with sessions, what the client declared when the session opened counts.
    server = tasks_server()
    declared = {"extensions": {TASKS: {}}}
    call = Call("tasks/cancel", {"taskId": "t", "_meta": meta()}, session_capabilities=declared)
    rejected(server.router.resolve(call, V26, server.eras.of(V26)), -32021)
    assert isinstance(server.router.resolve(call, V26, server.eras.of(V25)), Route)


def test_the_answers_of_tasks_update_are_left_to_its_handler() -> None:
    params = {
        "taskId": "t",
        "inputResponses": {"k": {"not": "an answer"}},
        "_meta": meta(caps={"extensions": {TASKS: {}}}),
    }
    assert isinstance(route(tasks_server(), "tasks/update", params), Route)
    rejected(route(tasks_server(), "tasks/update", {**params, "inputResponses": 7}), -32602)
