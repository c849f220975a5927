"""The HTTP client transport and authorization, against the scripted server: a 401 on the very
first request is the call's failure (never a reason to fall back to another era), an authorizing
flow stops the call's timeout, and the request sent again after an authorization is retried once
when the pooled connection it went out on was reset."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest
from mcpgen.runtime import AuthorizationRequired, Client, Timeouts
from mcpgen.runtime.core.transport import AUTHORIZING_EXTENSION
from support.http_peer import Received, Reply, Script, http_peer

pytestmark = pytest.mark.anyio
CHALLENGE = 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"'


def guarded(script: Script, token: str = "good") -> Any:
    """`script` behind a bearer check: a request without `token` gets 401 with a challenge."""

    async def handler(request: Received, reply: Reply) -> None:
        if request.method == "POST" and request.headers.get("authorization") != f"Bearer {token}":
            await reply.json({"error": "invalid_token"}, status=401, headers=[("www-authenticate", CHALLENGE)])
            return
        await script(request, reply)

    return handler


class Authorizer(httpx.Auth):
    """A minimal authorization flow: on a 401 it "authorizes" (running `during`, told to the
    transport through the request's authorizing extension) and sends the request again with a token."""

    def __init__(self, during: Any = None) -> None:
        self.token: str | None = None
        self.during = during
        self.authorizations = 0

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self.token is not None:
            request.headers["Authorization"] = f"Bearer {self.token}"
        response = yield request
        if response.status_code != 401:
            return
        await response.aread()
        notify = request.extensions.get(AUTHORIZING_EXTENSION)
        assert notify is not None, "the transport offers the authorizing callback"
        await notify(True)
        try:
            self.authorizations += 1
            if self.during is not None:
                await self.during()
            self.token = "good"
        finally:
            await notify(False)
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


@pytest.mark.parametrize(("mode", "first"), [("auto", "server/discover"), ("handshake", "initialize")])
async def test_a_401_on_the_first_request_fails_it_without_an_era_fallback(mode: str, first: str) -> None:
    async with http_peer(guarded(Script())) as peer:
        with pytest.raises(AuthorizationRequired) as refused:
            async with Client(peer.url, mode=mode):
                pass
        assert refused.value.status == 401 and refused.value.challenge == CHALLENGE
        assert [r.rpc_method for r in peer.posts()] == [first], "nothing else was tried"


@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_an_auth_flow_answers_the_401_of_the_first_request(mode: str) -> None:
    auth = Authorizer()
    script = Script(tools=[{"name": "t", "inputSchema": {"type": "object"}}])
    async with http_peer(guarded(script)) as peer, Client(peer.url, mode=mode, auth=auth) as client:
        assert [t.name async for t in client.tools()] == ["t"]
    assert auth.authorizations == 1
    assert all(r.headers.get("authorization") == "Bearer good" for r in peer.posts()[1:])


async def test_an_authorizing_flow_stops_the_calls_timeout_and_restarts_it_after() -> None:
    held: list[Any] = []
    client: Client | None = None

    async def during() -> None:
        assert client is not None
        (pending,) = client.session.calls.pending.values()
        held.append((pending, pending.authorizing, pending.deadline.deadline))

    async with http_peer(guarded(Script())) as peer:
        client = Client(peer.url, mode="handshake", auth=Authorizer(during), timeouts=Timeouts(request=30))
        async with client:
            assert client.protocol_version == "2025-11-25"
    ((pending, authorizing, deadline),) = held
    assert pending.method == "initialize" and authorizing and deadline == math.inf
    assert pending.resumed_at is not None and pending.deadline.deadline == pending.resumed_at + 30


async def test_the_request_sent_again_after_an_authorization_is_retried_on_a_reset_pooled_connection() -> None:
    """The connection that carried the 401 goes back to the pool; the server may close it while the
    client authorizes, and the authorized request then meets a reset."""
    inner = guarded(Script())
    reset = False

    async def handler(request: Received, reply: Reply) -> None:
        nonlocal reset
        authorized = request.headers.get("authorization") == "Bearer good"
        if request.rpc_method == "initialize" and authorized and not reset:
            reset = True
            await reply.abort()
            return
        await inner(request, reply)

    async with http_peer(handler) as peer, Client(peer.url, mode="handshake", auth=Authorizer()) as client:
        assert client.protocol_version == "2025-11-25"
    initializes = peer.posts("initialize")
    assert [r.headers.get("authorization") for r in initializes] == [None, "Bearer good", "Bearer good"]
    assert initializes[0].connection == initializes[1].connection != initializes[2].connection
