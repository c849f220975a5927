"""Pagination: opaque, tamper-evident cursors (base64url JSON + HMAC) and page slicing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from ..protocol.errors import InvalidParams


class CursorSealer:
    """Cursors a client cannot forge: any cursor not issued by this server is -32602, whatever its bytes."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def encode(self, kind: str, offset: int) -> str:
        payload = base64.urlsafe_b64encode(json.dumps({"k": kind, "o": offset}).encode()).decode().rstrip("=")
        return payload + "." + self._sign(payload)

    def decode(self, kind: str, cursor: str) -> int:
        payload, _, signature = cursor.partition(".")
        if (
            not signature
            or not cursor.isascii()
            or not hmac.compare_digest(signature.encode(), self._sign(payload).encode())
        ):
            raise InvalidParams("invalid cursor", data={"cursor": cursor[:100]})
        try:
            data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            offset = data["o"]
            if data["k"] != kind or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise InvalidParams("invalid cursor", data={"cursor": cursor[:100]}) from None
        return offset

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode(), hashlib.sha256).hexdigest()[:24]


def page(
    cursors: CursorSealer, page_size: int | None, kind: str, items: list[dict[str, Any]], cursor: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `items` from `cursor`, and the cursor of the next page (None at the end)."""
    start = cursors.decode(kind, cursor) if cursor is not None else 0
    if start > len(items):
        raise InvalidParams("invalid cursor: past the end of the list")
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], cursors.encode(kind, end) if end < len(items) else None
