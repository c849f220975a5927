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
