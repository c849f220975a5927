"""Getting the user through the authorization endpoint and the authorization response back.

`RedirectHandler` is the interface: a `redirect_uri` to register, and `authorize(url)` that sends
the user agent to the authorization URL and returns the query parameters of the redirect back.
`BrowserRedirectHandler` opens the user's browser and listens on a loopback port for the callback;
`HeadlessRedirectHandler` fetches the authorization URL itself without following the redirect and
reads `Location` (for servers that authorize without user interaction, such as test servers).
"""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urljoin, urlsplit

import anyio
import anyio.abc
import anyio.to_thread
import httpx

from ..shared.errors import AuthorizationResponseError

MAX_REQUEST_HEAD = 16 * 1024
_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body><p>{message}</p></body></html>"
)


@runtime_checkable
class RedirectHandler(Protocol):
    """Sends the user agent to the authorization endpoint and returns the authorization response."""

    @property
    def redirect_uri(self) -> str:
        """The redirect URI the authorization server sends the user agent back to."""
        ...

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        """Send the user agent to `authorization_url`; the query parameters the authorization
        server redirected back with (`code`, `state`, `iss`, or `error`...). Validating them is the
        caller's job.

        Raises:
            AuthorizationResponseError: no response came back (`reason="no_response"`).
        """
        ...


def _default_open(url: str) -> None:
    print(f"Open this URL in a browser to authorize:\n  {url}", file=sys.stderr, flush=True)
    try:
        webbrowser.open(url)
    except webbrowser.Error:
        pass


class BrowserRedirectHandler:
    """Opens the authorization URL in the user's browser (or calls `open_browser` with it) and
    serves one loopback HTTP callback at `http://host:port/path`.

    With `port=0` a free port is picked when the handler is made, so the redirect URI is known before
    client registration; RFC 8252 §7.3 has authorization servers accept any port on a loopback
    redirect URI, but one that does not needs a fixed `port`. A stored registration's port is reused
    when it is free (see `adopt`), so a new process does not register again. `timeout` bounds the
    wait for the user (seconds); `host` and `path` are the callback's, on the loopback interface.

    Raises:
        ValueError: `path` does not start with `/`.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: Callable[[str], object] | None = None,
        timeout: float = 300.0,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.host = host
        self.path = path
        self.timeout = timeout
        self._open = open_browser or _default_open
        self._port_chosen = port != 0
        self._set_port(port or _free_port(host))

    def _set_port(self, port: int) -> None:
        self.port = port
        url_host = f"[{self.host}]" if ":" in self.host else self.host
        self._redirect_uri = f"http://{url_host}:{port}{self.path}"

    @property
    def redirect_uri(self) -> str:
        """The redirect URI the authorization server sends the user agent back to."""
        return self._redirect_uri

    def adopt(self, redirect_uris: Sequence[str]) -> bool:
        """Take the port of one of `redirect_uris` (an earlier registration's) that is this handler's
        host and path and free now; True when `redirect_uri` is then one of them. A handler made with
        an explicit `port` keeps it."""
        if self._redirect_uri in redirect_uris:
            return True
        if self._port_chosen:
            return False
        for uri in redirect_uris:
            parts = urlsplit(uri)
            try:
                port = parts.port
            except ValueError:
                continue
            same_place = parts.scheme == "http" and parts.hostname == self.host and parts.path == self.path
            if same_place and port and _is_free(self.host, port):
                self._set_port(port)
                return True
        return False

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        """Open `authorization_url` and wait (at most `timeout` seconds) for the callback; its query parameters.

        Raises:
            AuthorizationResponseError: no callback within the timeout (`reason="no_response"`).
        """
        received: dict[str, str] = {}
        done = anyio.Event()
        try:
            listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        except OSError as exc:
            raise AuthorizationResponseError(
                f"cannot listen for the authorization response on {self.redirect_uri}: {exc}", reason="no_response"
            ) from exc

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                params = await self._serve_one(stream)
                if params is not None and not done.is_set():
                    received.update(params)
                    done.set()

        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle)
            await anyio.to_thread.run_sync(self._open, authorization_url)
            with anyio.move_on_after(self.timeout):
                await done.wait()
            tg.cancel_scope.cancel()
        if not done.is_set():
            raise AuthorizationResponseError(
                f"no authorization response within {self.timeout:g} s", reason="no_response"
            )
        return received

    async def _serve_one(self, stream: anyio.abc.SocketStream) -> dict[str, str] | None:
        """Read one request head; answer it; the query parameters if it was the callback."""
        head = b""
        with anyio.move_on_after(30):
            while b"\r\n\r\n" not in head and len(head) < MAX_REQUEST_HEAD:
                try:
                    head += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        target = parts[1].decode("latin-1") if len(parts) == 3 and parts[0] == b"GET" else None
        if target is None or urlsplit(target).path != self.path:
            await _respond(stream, 404, "Not found", "Nothing here.")
            return None
        params = dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
        if "error" in params:
            await _respond(stream, 200, "Authorization failed", "Authorization failed. You can close this window.")
        else:
            await _respond(stream, 200, "Authorized", "Authorization complete. You can close this window.")
        return params


async def _respond(stream: anyio.abc.SocketStream, status: int, title: str, message: str) -> None:
    body = _PAGE.format(title=title, message=message).encode()
    reason = {200: "OK", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
    )
    try:
        await stream.send(head.encode() + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


def _free_port(host: str, port: int = 0) -> int:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if sys.platform != "win32":  # as the listener will: TIME_WAIT is no obstacle (Windows: exclusive use)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        bound: int = sock.getsockname()[1]
        return bound


def _is_free(host: str, port: int) -> bool:
    try:
        _free_port(host, port)
    except OSError:
        return False
    return True


class HeadlessRedirectHandler:
    """Fetches the authorization URL without following redirects and returns the query of the
    `Location` it answers with, which must point at `redirect_uri`. For authorization servers that
    redirect at once (no login page), e.g. test and conformance servers. `http_client` makes the
    request (default: one per authorization, with `timeout` seconds)."""

    def __init__(
        self,
        redirect_uri: str = "http://localhost:3000/callback",
        *,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._redirect_uri = redirect_uri
        self._http = http_client
        self.timeout = timeout

    @property
    def redirect_uri(self) -> str:
        """The redirect URI the authorization server sends the user agent back to."""
        return self._redirect_uri

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        """Fetch `authorization_url`; the query parameters of the `Location` it redirects to.

        Raises:
            AuthorizationResponseError: the request failed, or it did not redirect to `redirect_uri`.
        """
        try:
            if self._http is not None:
                response = await self._http.get(authorization_url, follow_redirects=False)
            else:
                async with httpx.AsyncClient(timeout=self.timeout) as http:
                    response = await http.get(authorization_url, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise AuthorizationResponseError(f"authorization request failed: {exc!r}", reason="no_response") from exc
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise AuthorizationResponseError(
                f"authorization endpoint answered HTTP {response.status_code} without a redirect "
                "(it needs a user agent: use BrowserRedirectHandler)",
                reason="no_response",
            )
        target = urljoin(authorization_url, location)
        expected, got = urlsplit(self._redirect_uri), urlsplit(target)
        if (got.scheme, got.netloc, got.path) != (expected.scheme, expected.netloc, expected.path):
            raise AuthorizationResponseError(
                f"authorization endpoint redirected to {target}, not to {self._redirect_uri}", reason="no_response"
            )
        return dict(parse_qsl(got.query, keep_blank_values=True))
