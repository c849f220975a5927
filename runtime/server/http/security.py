"""Host and Origin validation for the Streamable HTTP server (DNS rebinding protection).

A web page can make a browser send requests to `127.0.0.1` under a hostile name (DNS rebinding):
the `Host` header then names the attacker's domain and `Origin` the attacker's page. So:

- bound to a loopback address (the default of `run_http`, and what the server sees in the ASGI
  scope), the `Host` must name the loopback (`localhost`, `127.0.0.1`, `[::1]`, any port) or an
  allowed host (421 otherwise), and an `Origin`, when present, must be a loopback origin or an
  allowed one (403 otherwise);
- bound elsewhere, an `Origin`, when present, must be the server's own (same host and port as the
  `Host` header) or an allowed one (403 otherwise); `Host` is checked only against `allowed_hosts`
  when that list is given.

Allowed entries are exact (`example.com:8443`, `https://app.example.com`), or end in `:*` for any
port; `allowed_origins=["*"]` accepts every origin (for a public server that authenticates).

How much, and how slowly: a body over `max_body_bytes` is 413; a request whose head (request line
and headers) has not all arrived `header_timeout` seconds after the connection was opened (or its
previous response completed) loses its connection, and one whose body has not all arrived
`body_timeout` seconds after its head gets 408 and loses its connection, so clients that send a
byte at a time (slowloris) cannot hold connections open.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0


def _split_host(value: str) -> tuple[str, str | None]:
    """`host[:port]` (IPv6 in brackets) as (lower-case host, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        host, rest = value[: end + 1], value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else None
    host, sep, port = value.partition(":")
    return host, port if sep else None


def _matches(value: str, allowed: Sequence[str]) -> bool:
    value = value.lower()
    for entry in allowed:
        entry = entry.lower()
        if entry == "*" or entry == value:
            return True
        if entry.endswith(":*") and value.startswith(entry[:-1]) and value[len(entry) - 1 :].isdigit():
            return True
    return False


def is_loopback(host: str | None) -> bool:
    """Is `host` (an address or a name, as the ASGI scope's `server` gives it) a loopback address?"""
    if host is None:
        return False
    if host.strip("[]").lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpSecurity:
    """Who may talk to the endpoint, how much and how slowly (see the module docstring).
    `dns_rebinding_protection=None` turns the strict loopback checks on exactly when the server is
    bound to a loopback address. `header_timeout` is applied by the servers mcpgen runs (`run_http`,
    `serve_http`, `mcpgen serve`; hypercorn's own keep-alive timeout bounds heads on trio),
    `body_timeout` by the app itself, whoever runs it."""

    dns_rebinding_protection: bool | None = None
    allowed_hosts: Sequence[str] = ()
    allowed_origins: Sequence[str] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT

    def strict(self, server_host: str | None) -> bool:
        if self.dns_rebinding_protection is not None:
            return self.dns_rebinding_protection
        return is_loopback(server_host)

    def refusal(self, headers: Mapping[str, str], server_host: str | None) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        host = headers.get("host")
        origin = headers.get("origin")
        if self.strict(server_host):
            if host is None or not (_split_host(host)[0] in LOOPBACK_NAMES or _matches(host, self.allowed_hosts)):
                return 421, f"Misdirected request: Host {host!r} is not allowed"
            if origin is not None and not self._loopback_origin(origin):
                return 403, f"Forbidden: Origin {origin!r} is not allowed"
            return None
        if self.allowed_hosts and (host is None or not _matches(host, self.allowed_hosts)):
            return 421, f"Misdirected request: Host {host!r} is not allowed"
        if origin is not None and not self._same_origin(origin, host):
            return 403, f"Forbidden: Origin {origin!r} is not allowed"
        return None

    def _loopback_origin(self, origin: str) -> bool:
        if _matches(origin, self.allowed_origins):
            return True
        try:
            parts = urlsplit(origin.strip())
            hostname = parts.hostname
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and hostname is not None and is_loopback(hostname)

    def _same_origin(self, origin: str, host: str | None) -> bool:
        if _matches(origin, self.allowed_origins):
            return True
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if host is None or parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        default = "443" if parts.scheme == "https" else "80"
        origin_host, origin_port = _split_host(parts.netloc)
        host_name, host_port = _split_host(host)
        return origin_host == host_name and (origin_port or default) == (host_port or default)
