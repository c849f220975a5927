"""`BearerAuthMiddleware` on the wire: metadata document, challenges, scope hook, body replay."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcpgen.runtime.auth import AUTH_SCOPE_KEY, AuthInfo, BearerAuthMiddleware, JWTVerifier, parse_www_authenticate
from support.auth_env import MCP_URL, Env, echo_app
from support.auth_tokens import token

pytestmark = pytest.mark.anyio

PRM_URL = "https://mcp.test/.well-known/oauth-protected-resource/mcp"


def challenge(response: httpx.Response) -> dict[str, str]:
    (found,) = parse_www_authenticate(response.headers["www-authenticate"])
    assert found.scheme == "Bearer"
    return found.params


async def post(env: Env, body: Any, bearer: str | None = None, **headers: str) -> httpx.Response:
    if bearer is not None:
        headers["authorization"] = f"Bearer {bearer}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await env.http.post(MCP_URL, content=content, headers=headers)


async def test_metadata_document_at_the_well_known_path(env: Env) -> None:
    env.resource_server(scopes_supported=["mcp:read"])
    response = await env.http.get(PRM_URL)
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"
    assert response.json() == {
        "resource": MCP_URL,
        "authorization_servers": [env.as1.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:read"],
    }
    assert (await env.http.post(PRM_URL)).status_code == 405
    assert (await env.http.get("https://mcp.test/.well-known/oauth-protected-resource")).status_code == 401


async def test_missing_token_gets_401_with_metadata_and_scope(env: Env) -> None:
    env.resource_server(required=("mcp:read", "mcp:basic"))
    response = await post(env, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    assert challenge(response) == {"resource_metadata": PRM_URL, "scope": "mcp:read mcp:basic"}


@pytest.mark.parametrize("header", ["Basic dXNlcjpwdw==", "Bearer", "Bearer a b", "DPoP abc"])
async def test_other_schemes_count_as_no_token(env: Env, header: str) -> None:
    env.resource_server()
    response = await post(env, {"jsonrpc": "2.0", "id": 1, "method": "x"}, authorization=header)
    assert response.status_code == 401 and "error" not in challenge(response)


async def test_invalid_token_gets_401_invalid_token(env: Env) -> None:
    env.resource_server()
    response = await post(env, {"jsonrpc": "2.0", "id": 1, "method": "x"}, bearer=token(env.as1, aud="https://x"))
    params = challenge(response)
    assert response.status_code == 401 and params["error"] == "invalid_token"
    assert params["resource_metadata"] == PRM_URL and response.json()["error"] == "invalid_token"


async def test_valid_token_reaches_the_app_with_the_principal(env: Env) -> None:
    seen: list[Any] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope.get(AUTH_SCOPE_KEY))
        await echo_app(scope, receive, send)

    env.resource_server(app=app)
    response = await post(env, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, bearer=token(env.as1))
    assert response.status_code == 200 and response.json()["id"] == 7
    (info,) = seen
    assert isinstance(info, AuthInfo) and info.subject == "user-1" and info.scopes == {"a", "b"}


async def test_scope_hook_sees_the_message_and_the_app_gets_the_body(env: Env) -> None:
    calls: list[dict[str, Any]] = []

    async def hook(message: dict[str, Any]) -> list[str]:
        calls.append(message)
        params = message.get("params") or {}
        return ["admin"] if params.get("name") == "delete_everything" else []

    env.resource_server(required=("a",), hook=hook)
    allowed = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    response = await post(env, allowed, bearer=token(env.as1))
    assert response.status_code == 200 and response.json()["result"]["method"] == "tools/call"
    denied = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "delete_everything"}}
    response = await post(env, denied, bearer=token(env.as1))
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope" and params["scope"] == "a admin"
    assert params["resource_metadata"] == PRM_URL
    assert [c["id"] for c in calls] == [1, 2]


async def test_hook_is_not_given_garbage_and_the_app_still_sees_it(env: Env) -> None:
    calls: list[Any] = []
    env.resource_server(hook=lambda m: calls.append(m) or [])
    response = await post(env, b"{not json", bearer=token(env.as1))
    assert response.status_code == 200 and calls == []  # the app (not the middleware) answers bad JSON


async def test_oversized_body_is_refused_before_the_app(env: Env) -> None:
    rs = env.resource_server(hook=lambda m: [])
    rs.max_body_size = 1024
    response = await post(
        env, {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"pad": "x" * 2000}}, bearer=token(env.as1)
    )
    assert response.status_code == 413


async def test_options_and_lifespan_pass_through(env: Env) -> None:
    events: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        events.append(scope["type"] + ":" + scope.get("method", ""))
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    rs = BearerAuthMiddleware(
        app,
        verifier=JWTVerifier(issuer=None, audience=MCP_URL, jwks={"keys": []}),
        resource=MCP_URL,
        authorization_servers=[env.as1.issuer],
    )
    env.router.mount("mcp.test", rs)
    assert (await env.http.options(MCP_URL)).status_code == 204

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: dict[str, Any]) -> None:
        return None

    await rs({"type": "lifespan"}, receive, send)
    assert events == ["http:OPTIONS", "lifespan:"]
