"""The client's output checks: compiled once per schema for the clients of a process."""

from __future__ import annotations

import pytest
from mcpgen.runtime import Server
from mcpgen.runtime.client import calls
from support.peers import connected

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    server = Server("t", "1")

    @server.tool()
    def add(a: int, b: int) -> int:  # its outputSchema: {"result": integer}
        return a + b

    return server


def test_one_check_per_schema_whatever_its_key_order() -> None:
    one = calls.shared_check({"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}})
    same = calls.shared_check({"properties": {"x": {"type": "string"}}, "required": ["x"], "type": "object"})
    other = calls.shared_check({"type": "object", "required": ["y"], "properties": {"y": {"type": "string"}}})
    assert one is same
    assert other is not one
    assert one.problem({"x": "a"}) is None
    assert one.problem({"x": 1}) is not None


def test_the_shared_checks_are_bounded_and_the_least_recently_used_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls, "_checks", {})
    monkeypatch.setattr(calls, "SHARED_CHECKS", 2)
    schemas = [{"type": "object", "required": [name]} for name in ("a", "b", "c")]
    first = calls.shared_check(schemas[0])
    calls.shared_check(schemas[1])
    assert calls.shared_check(schemas[0]) is first  # used again: now the most recent
    calls.shared_check(schemas[2])  # the bound: "b" goes, "a" stays
    assert len(calls._checks) == 2
    assert calls.shared_check(schemas[0]) is first
    assert calls.shared_check(schemas[1]) is not None and len(calls._checks) == 2


async def test_clients_of_a_server_share_its_output_checks() -> None:
    server = make_server()
    async with connected(server, mode="handshake") as one, connected(server, mode="handshake") as two:
        for client in (one, two):
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        assert one.output_checker is not None and two.output_checker is not None
        check = one.output_checker._validators["add"]  # learned from tools/list
        assert two.output_checker._validators["add"] is check
        assert check.problem({"result": 3}) is None
        assert check.problem({"result": "three"}) is not None
