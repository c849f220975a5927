"""Streamable HTTP, the client side: `connector.http(url)` (a `Connector`), the reading half of a
connection (`channel`) and the tool-argument headers learned from `tools/list` (`tool_headers`)."""

from .connector import Http, http

__all__ = ["Http", "http"]
