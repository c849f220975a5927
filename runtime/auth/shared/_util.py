"""Small helpers shared by the client and server sides: base64url, PKCE, scopes, URLs, bounded JSON documents."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import secrets
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio

from .errors import DiscoveryError

if TYPE_CHECKING:
    import httpx

MAX_DOCUMENT_BYTES = 1 << 20


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_state() -> str:
    return secrets.token_urlsafe(32)


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier (43 unreserved characters) and its S256 challenge (RFC 7636 §4)."""
    verifier = secrets.token_urlsafe(48)[:64]
    challenge = b64url(hashlib.sha256(verifier.encode("ascii")).digest())
    return verifier, challenge


def now() -> float:
    return time.time()


def split_scopes(value: object) -> list[str]:
    """Scopes from a space-separated string (or a list of strings, as some JWTs carry them)."""
    if isinstance(value, str):
        return [s for s in value.split(" ") if s]
    if isinstance(value, (list, tuple)):
        return [s for s in value if isinstance(s, str) and s]
    return []


def union_scopes(*groups: Iterable[str]) -> list[str]:
    """The union of scope lists, first-seen order kept (so requests are deterministic)."""
    seen: dict[str, None] = {}
    for group in groups:
        for scope in group:
            seen.setdefault(scope, None)
    return list(seen)


def basic_auth_header(client_id: str, client_secret: str) -> str:
    """`Authorization: Basic` value for client_secret_basic: both parts form-urlencoded first (RFC 6749 §2.3.1)."""
    raw = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707 §2): lower-case scheme and host, no fragment,
    no query, and no trailing slash on an empty path."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"not an absolute URL: {url!r}")
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((parts.scheme.lower(), _lower_host(parts.netloc), path, "", ""))


def origin(url: str) -> str:
    """`scheme://host[:port]` of an absolute URL (scheme and host lower-cased)."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{_lower_host(parts.netloc)}"


def _lower_host(netloc: str) -> str:
    userinfo, at, hostport = netloc.rpartition("@")
    return f"{userinfo}{at}{hostport.lower()}"


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme)


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether a protected resource identifier covers the server URL being accessed: same scheme,
    host and port, and the resource path is the server path or a parent of it at a segment boundary.
    (A server at `https://h/mcp` may publish `https://h` or `https://h/mcp`, never `https://h/other`.)"""
    try:
        res, srv = urlsplit(resource), urlsplit(server_url)
        res_port = res.port or _default_port(res.scheme.lower())
        srv_port = srv.port or _default_port(srv.scheme.lower())
    except ValueError:
        return False
    if res.fragment or res.scheme.lower() != srv.scheme.lower():
        return False
    if (res.hostname or "").lower() != (srv.hostname or "").lower() or res_port != srv_port:
        return False
    res_path = res.path.rstrip("/")
    srv_path = srv.path.rstrip("/")
    return srv_path == res_path or srv_path.startswith(res_path + "/")


def is_https_or_loopback(url: str) -> bool:
    """True for an `https://` URL, and for `http://` on a loopback host (`localhost`, 127.0.0.0/8, ::1)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost":  # not `*.localhost`: the system resolver may send those to DNS
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _running_loop() -> object:
    """The running event loop (asyncio) or root task (trio): what an anyio lock is tied to."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return trio.lowlevel.current_root_task()


class LoopLock:
    """An `anyio.Lock` per event loop, so an object made once (say, at import) can serve several
    `anyio.run()` calls, on either backend. Use `async with lock.get():`."""

    def __init__(self) -> None:
        self._loop: object = None
        self._lock: anyio.Lock | None = None

    def get(self) -> anyio.Lock:
        loop = _running_loop()
        if self._lock is None or self._loop is not loop:
            self._loop, self._lock = loop, anyio.Lock()
        return self._lock


async def read_capped(response: httpx.Response, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The body of a streamed response, refusing more than `limit` bytes."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise DiscoveryError(f"response from {response.request.url} exceeds {limit} bytes")
    return bytes(body)


def decode_json(body: bytes) -> Any:
    """Parsed JSON, or None when the body is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return None
