"""The Streamable HTTP routing headers' values and names, tested synchronously."""

from __future__ import annotations

import pytest
from mcpgen.runtime.protocol import http_headers as h

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


def test_mcp_name_mirrors_the_field_the_table_names() -> None:
    from mcpgen.runtime.protocol.http_headers import mismatch
    from mcpgen.runtime.protocol.tables import VersionRegistry

    registry = VersionRegistry()
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tasks/get", "mcp-name": "t1"}
    params = {"taskId": "t1", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    field = registry.name_param("tasks/get", "2026-07-28")  # the tasks extension's row
    assert field == "taskId"
    assert mismatch("tasks/get", params, headers, {}, field) is None
    assert "Mcp-Name" in str(mismatch("tasks/get", {**params, "taskId": "t2"}, headers, {}, field))
    assert mismatch("tasks/get", params, {k: v for k, v in headers.items() if k != "mcp-name"}, {}, field)
    assert registry.name_param("tools/call", "2026-07-28") == "name"
    assert registry.name_param("resources/read", "not-a-version") == "uri"  # the newest version that has it
    assert registry.name_param("tasks/get", "2026-07-28", extensions=()) is None  # without the extension
    assert registry.name_param("ping", "2025-11-25") is None
