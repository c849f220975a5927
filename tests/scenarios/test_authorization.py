"""OAuth end to end: an mcpgen server protected with `http_app(auth=ProtectedResource(...))` and
the test authorization server, both served for real on loopback ports, against the mcpgen client
with the OAuth flows (and against plain HTTP requests where the test must hold a token itself).

Covered: authorization on the first request in both eras, with the principal reaching the tool as
`ctx.auth`; step-up for a tool that declares scopes (and a clean error when the authorization
server will not grant them); refresh of a token about to expire and of one the server stopped
accepting; principal-bound `requestState` and handshake-era sessions; the verifier refusing
expired, wrong-audience and wrongly signed tokens (401 with a challenge); the metadata document.
"""

from __future__ import annotations

import json
import math
import secrets
import sys
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from mcpgen.runtime import AuthorizationRequired, Client, RequestContext, Server, Timeouts
from mcpgen.runtime.auth import (
    AuthInfo,
    AuthorizationLimitExceeded,
    ClientCredentials,
    HeadlessRedirectHandler,
    IntrospectionVerifier,
    OAuth,
    TokenVerifier,
)
from mcpgen.runtime.protocol.input_requests import elicit
from support.auth_served import Deployment, deployed
from support.auth_server import AuthServer, new_key

pytestmark = pytest.mark.anyio
V25, V26 = "2025-11-25", "2026-07-28"
TYPING = Path(__file__).resolve().parents[1] / "typing"
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def make_server() -> Server:
    server = Server("protected-notes")

    def principal(ctx: RequestContext) -> AuthInfo:
        assert isinstance(ctx.auth, AuthInfo), "the middleware's principal reaches the handler"
        return ctx.auth

    @server.tool()
    def whoami(ctx: RequestContext) -> str:
        info = principal(ctx)
        return json.dumps({"subject": info.subject, "scopes": sorted(info.scopes), "jti": info.claims.get("jti")})

    @server.tool(scopes=["notes:write"])
    def write(ctx: RequestContext, text: str) -> str:
        return f"{principal(ctx).subject} wrote {text}"

    @server.prompt(scopes=["notes:admin"])
    def audit() -> str:
        return "list every change"

    @server.resource("notes://secret/{name}", scopes=["notes:secret"])
    def secret(name: str) -> str:
        return f"the {name} secret"

    @server.tool()
    async def confirm(ctx: RequestContext, item: str) -> str:
        answer = ctx.input_response("ok")
        if answer is None:
            return ctx.input_required(ok=elicit(f"Delete {item}?", CONFIRM), state={"item": item})
        return f"{principal(ctx).subject} confirmed {ctx.state['item']}"

    return server


def oauth(**options: Any) -> OAuth:
    return OAuth(redirect_handler=HeadlessRedirectHandler(), **options)


def text(result: Any) -> str:
    return str(result.content[0].text)


async def whoami(client: Client) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(text(await client.call_tool("whoami")))
    return found


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- the user's client: OAuth on the first request, step-up, refresh --------------------------------


@pytest.mark.parametrize(("mode", "version"), [("auto", V26), ("handshake", V25)])
async def test_the_first_request_authorizes_and_the_tool_sees_the_principal(mode: str, version: str) -> None:
    async with deployed(make_server(), scopes_supported=["notes:read"]) as site:
        async with Client(site.url, mode=mode, auth=oauth()) as client:
            assert client.protocol_version == version
            me = await whoami(client)
            assert me["subject"] == "user-1" and me["scopes"] == ["notes:read"]
            await whoami(client)  # the token is kept: no second authorization
        authorizations = site.auth_server.seen("/authorize")
        assert len(authorizations) == 1
        assert authorizations[0].query["resource"] == site.url
        assert [f["resource"] for f in site.auth_server.grants("authorization_code")] == [site.url]


async def test_time_spent_signing_in_does_not_count_against_the_calls_timeout() -> None:
    held: list[tuple[str, bool, float]] = []
    client: Client | None = None

    class Watching(HeadlessRedirectHandler):
        async def authorize(self, authorization_url: str) -> Mapping[str, str]:
            assert client is not None
            held.extend((p.method, p.authorizing, p.deadline.deadline) for p in client.session.calls.pending.values())
            return await super().authorize(authorization_url)

    async with deployed(make_server()) as site:
        client = Client(site.url, auth=OAuth(redirect_handler=Watching()), timeouts=Timeouts(request=30))
        async with client:
            await whoami(client)
    assert held == [("server/discover", True, math.inf)]


async def test_a_tool_that_needs_a_scope_triggers_step_up_with_the_union_of_scopes() -> None:
    async with deployed(make_server(), scopes_supported=["notes:read"], required_scopes=("notes:read",)) as site:
        async with Client(site.url, auth=oauth()) as client:
            assert (await whoami(client))["scopes"] == ["notes:read"]
            assert text(await client.call_tool("write", {"text": "hello"})) == "user-1 wrote hello"
            assert (await whoami(client))["scopes"] == ["notes:read", "notes:write"]
        scopes = [r.query.get("scope", "").split() for r in site.auth_server.seen("/authorize")]
        assert [sorted(s) for s in scopes] == [["notes:read"], ["notes:read", "notes:write"]]


@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_prompts_and_resources_that_need_a_scope_trigger_step_up(mode: str) -> None:
    async with deployed(make_server(), scopes_supported=["notes:read"], required_scopes=("notes:read",)) as site:
        async with Client(site.url, auth=oauth(), mode=mode) as client:
            assert (await whoami(client))["scopes"] == ["notes:read"]
            read = await client.read_resource("notes://secret/door")
            assert read.contents[0].text == "the door secret"
            prompt = await client.get_prompt("audit")
            assert prompt.messages[0].content.text == "list every change"
            assert (await whoami(client))["scopes"] == ["notes:admin", "notes:read", "notes:secret"]
        scopes = [sorted(r.query.get("scope", "").split()) for r in site.auth_server.seen("/authorize")]
        assert scopes == [["notes:read"], ["notes:read", "notes:secret"], ["notes:admin", "notes:read", "notes:secret"]]


def test_the_scopes_a_message_needs() -> None:
    server = make_server()

    def needs(method: str, params: Any) -> set[str]:
        return set(server.scopes_for({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))

    assert needs("tools/call", {"name": "write", "arguments": {}}) == {"notes:write"}
    assert needs("tools/call", {"name": "whoami"}) == set()
    assert needs("prompts/get", {"name": "audit"}) == {"notes:admin"}
    assert needs("resources/read", {"uri": "notes://secret/x"}) == {"notes:secret"}
    assert needs("resources/subscribe", {"uri": "notes://secret/x"}) == {"notes:secret"}
    assert needs("resources/read", {"uri": "notes://public"}) == set()
    # A subscription covers the URIs below it: subscribing above a protected template needs its scopes.
    for above in ("notes://secret", "notes://secret/", "notes://", "notes:"):
        assert needs("resources/subscribe", {"uri": above}) == {"notes:secret"}, above
        listen_above = {"notifications": {"resourceSubscriptions": [above]}}
        assert needs("subscriptions/listen", listen_above) == {"notes:secret"}, above
    assert needs("resources/subscribe", {"uri": "other://secret"}) == set()
    assert needs("completion/complete", {"ref": {"type": "ref/prompt", "name": "audit"}}) == {"notes:admin"}
    template_ref = {"type": "ref/resource", "uri": "notes://secret/{name}"}
    assert needs("completion/complete", {"ref": template_ref, "argument": {"name": "name", "value": ""}}) == {
        "notes:secret"
    }
    assert needs("completion/complete", {"ref": "x"}) == set()
    listen = {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["notes://secret/a", 7]}}
    assert needs("subscriptions/listen", listen) == {"notes:secret"}
    for odd in ([], "x", None, {"name": 3}, {"uri": "notes://secret/" + "a" * 70_000}):
        assert needs("tools/call", odd) == set() and needs("resources/read", odd) == set()


async def test_a_scope_the_authorization_server_will_not_grant_fails_that_call_only() -> None:
    async with deployed(make_server(), scopes_supported=["notes:read"], grantable={"notes:read"}) as site:
        async with Client(site.url, auth=oauth()) as client:
            await whoami(client)
            with pytest.raises(AuthorizationLimitExceeded) as refused:
                await client.call_tool("write", {"text": "hello"})
            assert refused.value.status == 403 and "notes:write" in refused.value.scopes
            assert (await whoami(client))["subject"] == "user-1", "the session keeps working"
        assert len(site.auth_server.seen("/authorize")) == 1 + 3  # at most three attempts for the call


async def test_a_token_about_to_expire_is_refreshed_before_it_is_sent() -> None:
    # Tokens live 20 s; the client refreshes one with less than its margin (30 s) left.
    async with deployed(make_server(), expires_in=20) as site:
        async with Client(site.url, auth=oauth()) as client:
            first = await whoami(client)
            second = await whoami(client)
        assert first["subject"] == second["subject"] == "user-1"
        assert first["jti"] != second["jti"], "the second call went out with a refreshed token"
        refreshes = site.auth_server.grants("refresh_token")
        assert refreshes and all(f["resource"] == site.url for f in refreshes)
        assert len(site.auth_server.seen("/authorize")) == 1


def introspection(auth_server: AuthServer, audience: str) -> TokenVerifier:
    client_id, secret = auth_server.rs_credentials
    return IntrospectionVerifier(
        auth_server.endpoint("introspect"), client_id=client_id, client_secret=secret, audience=audience
    )


async def test_a_token_the_server_stops_accepting_is_refreshed_on_its_401() -> None:
    async with deployed(make_server(), verifier=introspection) as site:
        async with Client(site.url, auth=oauth()) as client:
            first = await whoami(client)
            site.auth_server.revoke_all()  # access tokens only: the refresh token still works
            second = await whoami(client)
        assert first["jti"] != second["jti"]
        assert len(site.auth_server.grants("refresh_token")) == 1
        assert len(site.auth_server.seen("/authorize")) == 1


# -- principals: sealed requestState and sessions are bound to who made them -----------------------


@pytest.fixture
def two_clients() -> Generator[dict[str, str], None, None]:
    yield {"alice": secrets.token_urlsafe(8), "bob": secrets.token_urlsafe(8)}


def register(site: Deployment, secrets_by_client: dict[str, str]) -> None:
    for client_id, secret in secrets_by_client.items():
        site.auth_server.add_client(client_id, secret=secret, method="client_secret_basic")


def modern_call(name: str, arguments: dict[str, Any], **more: Any) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    message = {
        "jsonrpc": "2.0",
        "id": secrets.randbelow(10**6),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta, **more},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V26,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return message, headers


async def test_request_state_issued_to_one_principal_is_refused_for_another(two_clients: dict[str, str]) -> None:
    async with deployed(make_server()) as site:
        register(site, two_clients)
        alice = ClientCredentials("alice", client_secret=two_clients["alice"])
        bob = ClientCredentials("bob", client_secret=two_clients["bob"])
        async with httpx.AsyncClient(timeout=30) as http:
            message, headers = modern_call("confirm", {"item": "notes.txt"})
            asked = (await http.post(site.url, json=message, headers=headers, auth=alice)).json()["result"]
            assert asked["resultType"] == "input_required"
            retry = {"inputResponses": {"ok": {"action": "accept", "content": {"ok": True}}}}
            retry["requestState"] = asked["requestState"]

            message, headers = modern_call("confirm", {"item": "notes.txt"}, **retry)
            stolen = await http.post(site.url, json=message, headers=headers, auth=bob)
            assert stolen.status_code == 400 and stolen.json()["error"]["code"] == -32602

            message, headers = modern_call("confirm", {"item": "notes.txt"}, **retry)
            own = await http.post(site.url, json=message, headers=headers, auth=alice)
            assert own.json()["result"]["content"][0]["text"] == "alice confirmed notes.txt"


async def test_a_handshake_session_belongs_to_the_principal_that_opened_it(two_clients: dict[str, str]) -> None:
    async with deployed(make_server()) as site:
        register(site, two_clients)
        alice = ClientCredentials("alice", client_secret=two_clients["alice"])
        bob = ClientCredentials("bob", client_secret=two_clients["bob"])
        accept = {"Accept": "application/json, text/event-stream"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(site.url, json=init, headers=accept, auth=alice)
            session = {**accept, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": V25}
            assert (await http.post(site.url, json=listing, headers=session, auth=bob)).status_code == 404
            assert (await http.delete(site.url, headers=session, auth=bob)).status_code == 404
            own = await http.post(site.url, json=listing, headers=session, auth=alice)
            assert own.status_code == 200 and "whoami" in own.text


# -- the verifier, end to end ---------------------------------------------------------------------


class Fixed(httpx.Auth):
    """A token of the test's own making."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


def forged(site: Deployment, **changes: Any) -> str:
    now = int(time.time())
    claims = {"iss": site.auth_server.issuer, "sub": "mallory", "aud": site.url, "iat": now, "exp": now + 600}
    key = changes.pop("key", site.auth_server.key)
    claims.update(changes)
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": site.auth_server.kid})


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"exp": int(time.time()) - 120, "iat": int(time.time()) - 720}, "expired"),
        ({"aud": "http://127.0.0.1:1/other"}, "not for this resource"),
        ({"key": new_key()}, "rejected"),
    ],
    ids=["expired", "wrong-audience", "wrong-key"],
)
async def test_the_verifier_refuses_bad_tokens_with_a_401_challenge(change: dict[str, Any], reason: str) -> None:
    async with deployed(make_server()) as site:
        good = forged(site)
        async with Client(site.url, auth=Fixed(good)) as client:
            assert (await whoami(client))["subject"] == "mallory", "a well-made token passes"
        with pytest.raises(AuthorizationRequired) as refused:
            async with Client(site.url, auth=Fixed(forged(site, **change))) as client:
                await whoami(client)
        assert refused.value.status == 401
        challenge = refused.value.challenge or ""
        assert 'error="invalid_token"' in challenge and reason in challenge
        metadata = site.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        assert f'resource_metadata="{metadata}"' in challenge


async def test_a_token_without_the_tools_scope_gets_403_insufficient_scope() -> None:
    async with deployed(make_server(), scopes_supported=["notes:read", "notes:write"]) as site:
        token = forged(site, scope="notes:read")
        async with httpx.AsyncClient(timeout=30) as http:
            message, headers = modern_call("write", {"text": "x"})
            refused = await http.post(site.url, json=message, headers=headers, auth=Fixed(token))
            assert refused.status_code == 403
            assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
            assert 'scope="notes:write"' in refused.headers["www-authenticate"]
            message, headers = modern_call("whoami", {})
            allowed = await http.post(site.url, json=message, headers=headers, auth=Fixed(token))
            assert "mallory" in allowed.json()["result"]["content"][0]["text"]


async def test_the_metadata_document_is_served_and_other_paths_stay_404() -> None:
    async with deployed(make_server(), scopes_supported=["notes:read"]) as site:
        origin = site.url.rsplit("/", 1)[0]
        async with httpx.AsyncClient(timeout=30) as http:
            document = (await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")).json()
            assert document["resource"] == site.url
            assert document["authorization_servers"] == [site.auth_server.issuer]
            assert document["scopes_supported"] == ["notes:read"]
            assert (await http.post(f"{origin}/elsewhere", json={})).status_code == 404
            assert (await http.post(site.url, json={})).status_code == 401


async def test_the_user_style_protected_server_and_client_run_as_written(tmp_path: Path) -> None:
    sys.path.insert(0, str(TYPING))
    try:
        import user_auth  # type-checked strictly by .ci/typecheck, run here
    finally:
        sys.path.remove(str(TYPING))
    async with deployed(user_auth.server, protection=user_auth.protection) as site:
        token_file = str(tmp_path / "tokens.json")
        for _ in range(2):  # the second time, the stored tokens serve: no sign-in
            note = await user_auth.write_a_note(site.url, token_file, HeadlessRedirectHandler())
            assert note == "user-1 noted hello"
    scopes = [sorted(r.query.get("scope", "").split()) for r in site.auth_server.seen("/authorize")]
    assert scopes == [["notes:read"], ["notes:read", "notes:write"]]
