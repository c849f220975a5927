"""What changed on a server, as both sides see it: list changes and resource updates. Pure.

A `Change` is a list change (`tools`, `prompts`, `resources`) or an update of one resource; the
notification it travels as follows from it. A subscription to a URI also covers the URIs below it
(`uri_covered`), for the server deciding whom to tell and for the client filtering what it hears.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .keys import SUBSCRIPTION_ID_KEY
from .wire import RequestId

LIST_KINDS = ("tools", "prompts", "resources")


@dataclass(frozen=True)
class Change:
    """A list change (`kind` in tools/prompts/resources) or a resource update (`uri` set)."""

    kind: str
    uri: str | None = None

    @property
    def method(self) -> str:
        if self.uri is not None:
            return "notifications/resources/updated"
        return f"notifications/{self.kind}/list_changed"

    def params(self, subscription_id: RequestId | None = None) -> dict[str, Any] | None:
        params: dict[str, Any] = {"uri": self.uri} if self.uri is not None else {}
        if subscription_id is not None:
            params["_meta"] = {SUBSCRIPTION_ID_KEY: subscription_id}
        return params or None


def uri_covered(prefixes: Iterable[str], uri: str) -> bool:
    """Is `uri` one of `prefixes`, or below one of them (a subscription covers sub-resources)?"""
    return any(uri == p or uri.startswith(p.rstrip("/") + "/") for p in prefixes)
