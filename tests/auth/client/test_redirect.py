"""Redirect handlers: the loopback listener of `BrowserRedirectHandler` on a real socket, with a
scripted "browser", and `HeadlessRedirectHandler`'s checks."""

from __future__ import annotations

import socket
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.from_thread
import httpx
import pytest
from mcpgen.runtime.auth import (
    AuthorizationResponseError,
    BrowserRedirectHandler,
    HeadlessRedirectHandler,
    InMemoryTokenStorage,
)
from support.auth_asgi import Resp, asgi
from support.auth_env import MCP_URL, Env

pytestmark = pytest.mark.anyio


async def test_browser_handler_receives_the_callback_on_loopback(env: Env) -> None:
    env.resource_server()
    visited: list[int] = []

    async def browse(url: str) -> None:
        """What a browser does: follow the authorization server's redirect to the loopback URI."""
        answer = await env.http.get(url)  # the authorization server (in-process)
        location = answer.headers["location"]
        async with httpx.AsyncClient() as real:  # the loopback listener (a real socket)
            stray = await real.get(location.split("/callback")[0] + "/favicon.ico")
            visited.append(stray.status_code)
            page = await real.get(location)
            visited.append(page.status_code)

    handler = BrowserRedirectHandler(open_browser=lambda url: anyio.from_thread.run(browse, url), timeout=60)
    assert handler.redirect_uri.startswith("http://127.0.0.1:") and handler.redirect_uri.endswith("/callback")
    response = await env.call(env.oauth(redirect_handler=handler))
    assert response.status_code == 200
    assert visited == [404, 200]
    assert env.as1.seen("/authorize")[0].query["redirect_uri"] == handler.redirect_uri


async def test_browser_handler_gives_up_after_its_timeout() -> None:
    handler = BrowserRedirectHandler(open_browser=lambda url: None, timeout=0.2)
    with pytest.raises(AuthorizationResponseError) as caught:
        await handler.authorize("https://as.test/authorize?x=1")
    assert caught.value.reason == "no_response"


def redirecting_app(location: str | None, status: int = 302) -> object:
    async def handle(req: object) -> Resp:
        return Resp(status, b"", {"location": location} if location else {})

    return asgi(handle)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("location", "status", "ok"),
    [
        ("http://localhost:3000/callback?code=abc&state=s", 302, True),
        ("http://localhost:3000/elsewhere?code=abc", 302, False),
        ("https://evil.test/callback?code=abc", 302, False),
        (None, 200, False),
    ],
)
async def test_headless_handler_reads_only_its_own_redirect(
    env: Env, location: str | None, status: int, ok: bool
) -> None:
    env.router.mount("login.test", redirecting_app(location, status))
    handler = HeadlessRedirectHandler(http_client=env.http)
    if ok:
        params = await handler.authorize("https://login.test/authorize")
        assert params == dict(parse_qsl(urlsplit(location or "").query))
    else:
        with pytest.raises(AuthorizationResponseError):
            await handler.authorize("https://login.test/authorize")


def _browser(env: Env) -> BrowserRedirectHandler:
    async def browse(url: str) -> None:
        location = (await env.http.get(url)).headers["location"]
        async with httpx.AsyncClient() as real:
            await real.get(location)

    return BrowserRedirectHandler(open_browser=lambda url: anyio.from_thread.run(browse, url), timeout=60)


async def test_a_new_process_reuses_its_registration_and_its_loopback_port(env: Env) -> None:
    """Each run of a command line makes a new handler on a new free port; a stored registration's
    port is taken back when it is free, so the client does not register again."""
    env.resource_server()
    storage = InMemoryTokenStorage()
    first = _browser(env)
    assert (await env.call(env.oauth(redirect_handler=first, storage=storage))).status_code == 200
    await storage.set_tokens(MCP_URL, None)  # signed out: the next run authorizes again

    second = _browser(env)
    assert second.redirect_uri != first.redirect_uri
    assert (await env.call(env.oauth(redirect_handler=second, storage=storage))).status_code == 200
    assert second.redirect_uri == first.redirect_uri
    assert len(env.as1.seen("/register")) == 1 and len(env.as1.seen("/authorize")) == 2


async def test_a_busy_or_fixed_port_means_a_new_registration(env: Env) -> None:
    env.resource_server()
    storage = InMemoryTokenStorage()
    first = _browser(env)
    assert (await env.call(env.oauth(redirect_handler=first, storage=storage))).status_code == 200
    await storage.set_tokens(MCP_URL, None)
    with socket.socket() as busy:  # someone else holds the registered port now
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", first.port))
        busy.listen()
        second = _browser(env)
        assert not second.adopt([first.redirect_uri])
        assert (await env.call(env.oauth(redirect_handler=second, storage=storage))).status_code == 200
    assert len(env.as1.seen("/register")) == 2
    assert BrowserRedirectHandler(port=second.port).adopt([first.redirect_uri]) is False
