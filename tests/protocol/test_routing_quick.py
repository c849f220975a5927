"""`Router.quick`: the common self-contained request routed without the ladder. Whatever it finds must
be what `Router.route` finds; whenever a step would not pass, it must leave the request to `route`
(which words the refusal)."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcpgen.runtime import Server
from mcpgen.runtime.protocol.routing import Call, Rejection, Route
from mcpgen.runtime.server.features import mcp_header
from support.peers import V25, V26, meta

TASKS = "io.modelcontextprotocol/tasks"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"


def make_server(*, versions: list[str] | None = None, tasks: bool = False) -> Server:
    server = Server("quick", versions=versions) if versions else Server("quick")

    @server.tool()
    def hello(region: str = "") -> str:
        return region

    @server.tool()
    def routed(region: Annotated[str, mcp_header("Region")] = "") -> str:
        return region

    @server.prompt()
    def greet() -> str:
        return "hi"

    if tasks:

        @server.tool(task_support="optional")
        def crunch() -> str:
            return "crunched"

    return server


SERVERS = {
    "both eras": make_server(),
    "modern only": make_server(versions=[V26]),
    "tasks": make_server(tasks=True),
}


def same(quick: Route, full: Route | Rejection) -> None:
    assert isinstance(full, Route), full
    assert (quick.version, quick.era, quick.spec) == (full.version, full.era, full.spec)
    assert quick.params == full.params


def left_for_its_gate(found: Route, params: dict[str, Any] | None) -> bool:
    """Does the request's gate depend on the request: on both sides, or asking more of these params?"""
    gate = found.spec.capability
    if gate is None:
        return False
    return gate.side == "both" or any((params or {}).get(key) is not None for key, _ in gate.param_requires)


def plain(method: str, **params: Any) -> tuple[dict[str, Any], dict[str, str]]:
    headers = {"mcp-protocol-version": V26, "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return {**params, "_meta": meta()}, headers


# -- what it finds ---------------------------------------------------------------------------------


def test_the_common_requests_are_found_as_route_finds_them() -> None:
    for server in SERVERS.values():
        for method, params in (
            ("tools/call", {"name": "hello", "arguments": {"region": "eu"}}),
            ("tools/list", {}),
            ("prompts/get", {"name": "greet"}),
            ("server/discover", {}),
        ):
            body, headers = plain(method, **params)
            for with_headers in (headers, None):  # over HTTP, and over a transport without headers
                quick = server.router.quick(method, body, with_headers)
                assert quick is not None, (method, with_headers)
                same(quick, server.router.route(Call(method, body, with_headers)))


def test_headers_in_any_form_route_accepts_are_accepted_or_left_to_it() -> None:
    server = SERVERS["both eras"]
    body = {"name": "hello", "_meta": meta()}
    for name in ("hello", "  hello ", "=?base64?aGVsbG8=?="):
        headers = {"mcp-protocol-version": V26, "mcp-method": "tools/call", "mcp-name": name}
        quick = server.router.quick("tools/call", body, headers)
        assert quick is not None  # (the same check as route's: the header's value decoded)
        same(quick, server.router.route(Call("tools/call", body, headers)))


# -- what it leaves to route -----------------------------------------------------------------------


def left_to_route(server: Server, method: str, params: Any, headers: dict[str, str] | None, code: int) -> None:
    assert server.router.quick(method, params, headers) is None
    found = server.router.route(Call(method, params, headers))
    assert isinstance(found, Rejection) and found.code == code, found


def test_every_step_that_does_not_pass_is_left_to_route() -> None:
    server = make_server()
    body, headers = plain("tools/call", name="hello")
    left_to_route(server, "tools/call", {"name": "hello", "_meta": {VERSION_KEY: V26}}, headers, -32602)  # no caps
    left_to_route(server, "tools/call", body, {**headers, "mcp-name": "other"}, -32020)  # headers disagree
    left_to_route(server, "tools/call", body, {**headers, "mcp-method": "tools/list"}, -32020)
    left_to_route(server, "tools/call", body, {k: v for k, v in headers.items() if k != "mcp-name"}, -32020)
    routed = {"name": "routed", "arguments": {"region": "eu"}, "_meta": meta()}
    left_to_route(server, "tools/call", routed, {**headers, "mcp-name": "routed"}, -32020)  # no Mcp-Param-Region
    unsupported = {"name": "hello", "_meta": meta("2099-01-01")}
    left_to_route(server, "tools/call", unsupported, {**headers, "mcp-protocol-version": "2099-01-01"}, -32022)
    left_to_route(make_server(versions=[V25]), "tools/list", {"_meta": meta()}, None, -32022)  # not served
    left_to_route(server, "tools/call", {"_meta": meta()}, None, -32602)  # params invalid (no name)
    left_to_route(server, "tools/call", {"name": 7, "_meta": meta()}, None, -32602)
    left_to_route(server, "completion/complete", {"ref": {}, "argument": {}, "_meta": meta()}, None, -32601)  # gate
    left_to_route(server, "ping", {"_meta": meta()}, None, -32601)  # not a modern request
    left_to_route(server, "unknown/method", {"_meta": meta()}, None, -32601)
    left_to_route(SERVERS["tasks"], "tasks/cancel", {"taskId": "t", "_meta": meta()}, None, -32021)  # both sides
    server.handlers.pop("prompts/list")
    left_to_route(server, "prompts/list", {"_meta": meta()}, None, -32601)  # no handler
    assert server.router.quick("tools/call", None, None) is None


def test_a_handshake_era_request_is_left_to_route() -> None:
    server = make_server()
    assert server.router.quick("tools/list", None, None) is None
    assert server.router.quick("tools/list", {"_meta": {"progressToken": 1}}, None) is None
    assert server.router.quick("initialize", {"protocolVersion": V25, "capabilities": {}}, None) is None


# -- what it remembers follows the server ----------------------------------------------------------


def test_what_is_remembered_follows_the_capabilities_and_the_extensions() -> None:
    server = Server("empty at first")
    body = {"name": "late", "_meta": meta()}
    left_to_route(server, "tools/call", body, None, -32601)  # no tools: the tools capability is not offered

    @server.tool()
    def late() -> str:
        return "here"

    quick = server.router.quick("tools/call", body, None)
    assert quick is not None
    same(quick, server.router.route(Call("tools/call", body, None)))
    plain_row = quick.spec

    @server.tool(task_support="optional")
    def crunch() -> str:  # the tasks extension is now in force: tools/call has its augmented row
        return "crunched"

    quick = server.router.quick("tools/call", body, None)
    assert quick is not None and quick.spec is not plain_row and "task" in dict(quick.spec.result_tags)
    same(quick, server.router.route(Call("tools/call", body, None)))


def test_unknown_names_are_not_remembered() -> None:
    server = make_server()
    for n in range(50):
        server.router.quick(f"made/up{n}", {"_meta": meta()}, None)
        server.router.quick("tools/list", {"_meta": meta(f"1999-01-{n:02}")}, None)
    assert all(method in server.router.table(version) for version, method in server.router._passed)


# -- the same answer as route, whatever comes ------------------------------------------------------

VERSIONS = st.sampled_from([V26, V25, "2099-01-01", "garbage", 7, None, ["x"]])
METHODS = st.sampled_from(
    [
        "tools/call",
        "tools/list",
        "prompts/get",
        "prompts/list",
        "resources/read",
        "server/discover",
        "subscriptions/listen",
        "completion/complete",
        "initialize",
        "ping",
        "tasks/get",
        "tasks/cancel",
        "made/up",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


VALID = {  # a request of each kind that both find, which the draws below then may spoil
    "tools/call": {"name": "hello", "arguments": {"region": "eu"}},
    "tools/list": {},
    "prompts/get": {"name": "greet"},
    "prompts/list": {"cursor": "c"},
    "resources/read": {"uri": "file:///x"},
    "server/discover": {},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": ""}},
    "initialize": {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
    "ping": {},
    "tasks/get": {"taskId": "t"},
    "tasks/cancel": {"taskId": "t"},
    "made/up": {},
}


def mostly(draw: st.DrawFn, times: int) -> bool:
    """True but one time in `times` (hypothesis draws an integer's bounds far more often than that)."""
    return draw(st.sampled_from([True] * (times - 1) + [False]))


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, dict[str, Any] | None, dict[str, str] | None]:
    method = draw(st.sampled_from(sorted(VALID)))
    params: dict[str, Any] = dict(VALID[method])
    caps = draw(st.sampled_from([{}, {}, {}, {"extensions": {TASKS: {}}}, {"extensions": {TASKS: {}}}, "no", None]))
    version = draw(st.sampled_from([V26] * 6 + [V25, "2099-01-01", 7, None]))
    meta_field: dict[str, Any] = {}
    if version is not None:
        meta_field[VERSION_KEY] = version
    if caps is not None:
        meta_field[CAPS_KEY] = caps
    params["_meta"] = meta_field if mostly(draw, 10) else draw(JSON)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # spoil a field (or add one), now and then
        key = draw(st.sampled_from(["name", "arguments", "uri", "taskId", "cursor", "task", "ref"]))
        params[key] = draw(st.sampled_from(["hello", "routed", "crunch", "nope", " hello", 3, None, {"region": 3}]))
    headers: dict[str, str] | None = None
    if mostly(draw, 4):
        headers = {}
        header_version = draw(st.sampled_from([version, version, version, V26, V25, None]))
        if isinstance(header_version, str):
            headers["mcp-protocol-version"] = header_version
        if mostly(draw, 10):
            headers["mcp-method"] = draw(st.sampled_from([method, method, method, "tools/call"]))
        name = params.get("name")
        if isinstance(name, str) and mostly(draw, 10):
            headers["mcp-name"] = draw(st.sampled_from([name, name, f" {name}", "other"]))
        if not mostly(draw, 3):
            headers["mcp-param-region"] = draw(st.sampled_from(["eu", "us"]))
    return method, params if mostly(draw, 20) else None, headers


def every_request() -> list[tuple[str, dict[str, Any] | None, dict[str, str] | None]]:
    """Each kind of request, with each of its parts right or spoilt in the ways the ladder looks at."""
    found: list[tuple[str, dict[str, Any] | None, dict[str, str] | None]] = []
    metas: list[Any] = [meta(), meta(caps={"extensions": {TASKS: {}}}), meta(V25), meta("2099-01-01")]
    metas += [{VERSION_KEY: V26}, {CAPS_KEY: {}}, {VERSION_KEY: 7, CAPS_KEY: {}}]
    metas += [{VERSION_KEY: V26, CAPS_KEY: "no"}, "no meta"]
    spoils: list[dict[str, Any]] = [{}, {"name": "routed", "arguments": {"region": "eu"}}, {"name": "nope"}]
    spoils += [{"name": 3}, {"name": " hello"}, {"task": {"ttl": 5}}, {"arguments": "x"}, {"cursor": 1}]
    for method, valid in VALID.items():
        for meta_field, spoil in itertools.product(metas, spoils):
            params = {**valid, **spoil, "_meta": meta_field}
            version = meta_field.get(VERSION_KEY) if isinstance(meta_field, dict) else None
            name = params.get("name")
            exact = {"mcp-protocol-version": str(version), "mcp-method": method}
            if isinstance(name, str):
                exact["mcp-name"] = name
            variants: list[dict[str, str] | None] = [None, exact, {**exact, "mcp-param-region": "eu"}]
            variants += [{**exact, "mcp-method": "tools/list"}, {**exact, "mcp-protocol-version": V25}]
            variants += [{k: v for k, v in exact.items() if k != "mcp-name"}, {**exact, "mcp-name": " other"}]
            found.extend((method, params, headers) for headers in variants)
        found.append((method, None, None))
    return found


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_quick_finds_only_what_route_finds_for_every_kind_of_request(server: str) -> None:
    router = SERVERS[server].router
    quick_found = 0
    for method, params, headers in every_request():
        quick = router.quick(method, params, headers)
        full = router.route(Call(method, params, headers))
        if quick is not None:
            same(quick, full)
            quick_found += 1
        elif isinstance(full, Route):  # only what it cannot know without the ladder is left to it
            assert full.era.name == "handshake" or left_for_its_gate(full, params), (method, params, headers)
    assert quick_found > 100  # (what it found is a good share of what there was to find)


@pytest.mark.parametrize("server", ["both eras", "tasks"])
def test_on_a_session_quick_finds_only_what_route_finds(server: str) -> None:
    router = SERVERS[server].router
    quick_found = 0
    for method, params, headers in every_request():
        bare = None if params is None else {k: v for k, v in params.items() if k != "_meta"}
        for body in (params, bare):
            handshake_headers = None if headers is None else {**headers, "mcp-protocol-version": V25}
            for sent in (headers, handshake_headers):
                for declared in ({}, {"extensions": {TASKS: {}}}):
                    quick = router.quick(method, body, sent, V25)
                    full = router.route(Call(method, body, sent, V25, declared))
                    if quick is not None:
                        same(quick, full)
                        quick_found += 1
                    elif isinstance(full, Route):  # left to it: a modern request, initialize, or for its gate
                        left = full.era.name == "modern" or method == "initialize" or left_for_its_gate(full, body)
                        assert left, (method, body, sent)
    assert quick_found > 100


def test_on_a_session_the_request_opening_one_and_modern_requests_are_left_to_route() -> None:
    router = SERVERS["both eras"].router
    init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    assert router.quick("initialize", init, None, V25) is None
    assert router.quick("tools/list", {"_meta": meta()}, None, V25) is None  # modern, on a stdio session
    assert router.quick("tools/list", {}, {"mcp-protocol-version": V26}, V25) is None
    quick = router.quick("tools/list", {}, {"mcp-protocol-version": V25}, V25)
    assert quick is not None and quick.era.name == "handshake"
    same(quick, router.route(Call("tools/list", {}, {"mcp-protocol-version": V25}, V25, {})))


@settings(max_examples=300, deadline=None)
@given(server=st.sampled_from(sorted(SERVERS)), request=requests())
def test_quick_finds_only_what_route_finds(
    server: str, request: tuple[str, dict[str, Any] | None, dict[str, str] | None]
) -> None:
    method, params, headers = request
    router = SERVERS[server].router
    quick = router.quick(method, params, headers)
    if quick is not None:
        same(quick, router.route(Call(method, params, headers)))
