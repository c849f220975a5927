"""JSON-RPC on the wire, tested synchronously: classifying envelopes, refusals with and without ids, and
the HTTP status of each error code."""

from __future__ import annotations

import pytest
from mcpgen.runtime.protocol import wire
from mcpgen.runtime.protocol.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    http_status,
)

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


@pytest.mark.parametrize(
    ("data", "answers"),
    [
        (b'{"jsonrpc": "2.0", "id": 3, "result": {"content": {"n": NaN}}}', 3),
        (b'{"jsonrpc": "2.0", "id": "a", "result": -Infinity}', "a"),
        (b'{"jsonrpc": "2.0", "id": 4, "error": {"code": 1, "message": "\xff"}}', 4),
        (b'{"jsonrpc": "2.0", "id": 5, "result": ' + b"[" * 5000 + b"]" * 5000 + b"}", 5),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "x", "params": {"n": NaN}}', None),  # a request: answered -32700
        (b'{"jsonrpc": "2.0", "result": {"n": NaN}, "id": 7}', 7),
        (b'{"jsonrpc": "2.0", "result": {"n": x}, "id": 7}', None),  # the readable head does not show the id
        (b'{"jsonrpc": "2.0", "id": true, "result": NaN}', None),
        (b"not json", None),
    ],
)
def test_a_damaged_response_names_the_request_it_answers(data: bytes, answers: object) -> None:
    decoded = wire.decode(data)
    assert isinstance(decoded, wire.Invalid) and decoded.code == -32700
    assert decoded.response_to == answers
    assert decoded.answer is (answers is None), "a response never gets an answer"
    assert decoded.id is None
