"""The authorization code flow end to end against the in-process authorization server and a
`BearerAuthMiddleware`-protected MCP endpoint."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest
from mcpgen.runtime.auth import (
    AuthorizationLimitExceeded,
    AuthorizationResponseError,
    ClientInfo,
    DiscoveryError,
    InMemoryTokenStorage,
    InsecureEndpointError,
    IntrospectionVerifier,
    IssuerMismatchError,
    RegistrationError,
    ResourceMismatchError,
    TokenRequestError,
    TokenSet,
    UnsupportedServerError,
)
from support.auth_env import MCP_URL, Env
from support.auth_server import AuthServer

pytestmark = pytest.mark.anyio


def authorize_params(server: AuthServer) -> list[dict[str, str]]:
    return [r.query for r in server.seen("/authorize")]


async def test_first_request_authorizes_and_reaches_the_server(env: Env) -> None:
    env.resource_server(scopes_supported=["mcp:read"])
    auth = env.oauth()
    response = await env.call(auth)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["subject"] == "user-1" and result["scopes"] == ["mcp:read"]

    (registration,) = env.as1.seen("/register")
    body = registration.json()
    assert body["application_type"] == "native" and body["token_endpoint_auth_method"] == "none"
    assert "refresh_token" in body["grant_types"]
    (query,) = authorize_params(env.as1)
    assert query["code_challenge_method"] == "S256" and query["resource"] == MCP_URL and query["state"]
    assert query["scope"] == "mcp:read" and query["client_id"] in env.as1.clients
    (token_form,) = env.as1.grants("authorization_code")
    assert token_form["resource"] == MCP_URL
    digest = hashlib.sha256(token_form["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == query["code_challenge"]

    # The token is reused: no second authorization.
    assert (await env.call(auth, "tools/call")).status_code == 200
    assert len(env.as1.seen("/authorize")) == 1


async def test_prm_discovery_probes_path_then_root_when_the_header_has_no_url(env: Env) -> None:
    rs = env.resource_server()
    prefix_app = rs

    async def no_header_no_pathbased(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Serve the metadata only at the root and strip `resource_metadata` from challenges.
        if scope["path"] == rs.metadata_path:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["path"] == "/.well-known/oauth-protected-resource":
            scope = {**scope, "path": rs.metadata_path}

        async def strip(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [(k, v) for k, v in message["headers"] if k != b"www-authenticate"]}
                message["headers"].append((b"www-authenticate", b"Bearer"))
            await send(message)

        await prefix_app(scope, receive, strip)

    env.router.mount("mcp.test", no_header_no_pathbased)
    assert (await env.call(env.oauth())).status_code == 200
    wk = [p for p in env.router.paths("mcp.test") if p.startswith("/.well-known")]
    assert wk == ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]


@pytest.mark.parametrize(
    ("kinds", "expected_tries"),
    [
        (("oauth",), 1),
        (("oidc",), 2),
        (("oidc-append",), 3),
    ],
)
async def test_authorization_server_metadata_try_order_for_a_path_issuer(
    env: Env, kinds: tuple[str, ...], expected_tries: int
) -> None:
    tenant = env.add_as(AuthServer(issuer="https://tenant.test/tenant1", metadata=kinds))
    env.resource_server(auth_server=tenant)
    assert (await env.call(env.oauth())).status_code == 200
    order = [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ]
    tried = [p for p in env.router.paths("tenant.test") if ".well-known" in p]
    assert tried == order[:expected_tries]


async def test_metadata_naming_another_issuer_is_not_used(env: Env) -> None:
    env.as1.metadata_issuer = "https://attacker.test"
    env.resource_server()
    with pytest.raises(IssuerMismatchError):
        await env.call(env.oauth())
    assert not env.as1.seen("/register") and not env.as1.seen("/authorize") and not env.as1.seen("/token")


@pytest.mark.parametrize(
    ("advertised", "mode", "reason"),
    [
        (True, "correct", None),
        (True, "omit", "iss_missing"),
        (True, "wrong", "iss_mismatch"),
        (True, "normalized", "iss_mismatch"),
        (None, "omit", None),
        (None, "wrong", "iss_mismatch"),
        (None, "correct", None),
    ],
)
async def test_iss_parameter_rows(env: Env, advertised: bool | None, mode: str, reason: str | None) -> None:
    env.as1.advertise_iss = advertised
    env.as1.iss_mode = mode
    env.resource_server()
    if reason is None:
        assert (await env.call(env.oauth())).status_code == 200
        return
    with pytest.raises(AuthorizationResponseError) as caught:
        await env.call(env.oauth())
    assert caught.value.reason == reason
    assert env.as1.seen("/authorize") and not env.as1.seen("/token")  # the code never reached /token


async def test_step_up_requests_the_union_of_scopes(env: Env) -> None:
    def needs(message: dict[str, Any]) -> list[str]:
        return ["tools:write"] if message.get("method") == "tools/call" else []

    env.resource_server(required=("mcp:basic",), hook=needs)
    auth = env.oauth()
    assert (await env.call(auth, "tools/list")).status_code == 200
    response = await env.call(auth, "tools/call")
    assert response.status_code == 200
    assert response.json()["result"]["scopes"] == ["mcp:basic", "tools:write"]
    assert [q.get("scope") for q in authorize_params(env.as1)] == ["mcp:basic", "mcp:basic tools:write"]


async def test_at_most_three_authorizations_per_request(env: Env) -> None:
    env.as1.grantable = {"mcp:basic"}  # never grants mcp:admin
    env.resource_server(required=("mcp:basic",), hook=lambda m: ["mcp:admin"])
    with pytest.raises(AuthorizationLimitExceeded) as caught:
        await env.call(env.oauth())
    assert caught.value.status == 403 and caught.value.scopes == ("mcp:basic", "mcp:admin")
    assert len(env.as1.seen("/authorize")) == 3
    assert len([p for p in env.router.paths("mcp.test") if p == "/mcp"]) == 4  # first try + three retries


async def test_resource_mismatch_aborts_before_authorizing(env: Env) -> None:
    rs = env.resource_server()
    rs._metadata_body = rs._metadata_body.replace(MCP_URL.encode(), b"https://other.test/mcp")
    with pytest.raises(ResourceMismatchError):
        await env.call(env.oauth())
    assert not env.as1.seen("/authorize") and not env.as1.seen("/register")


async def test_moving_to_another_authorization_server_registers_there(env: Env) -> None:
    storage = InMemoryTokenStorage()
    env.resource_server()
    auth = env.oauth(storage=storage)
    assert (await env.call(auth)).status_code == 200
    first_client = (await storage.get_client(env.as1.issuer)).client_id  # type: ignore[union-attr]

    as2 = env.add_as(AuthServer(issuer="https://as2.test"))
    env.resource_server(auth_server=as2)  # the server now trusts and advertises only as2
    assert (await env.call(auth)).status_code == 200
    assert len(as2.seen("/register")) == 1
    seen_at_as2 = [q["client_id"] for q in authorize_params(as2)] + [
        f.get("client_id") for f in as2.grants("authorization_code")
    ]
    assert first_client not in seen_at_as2
    second = await storage.get_client(as2.issuer)
    assert second is not None and second.client_id != first_client and second.issuer == as2.issuer
    assert (await storage.get_client(env.as1.issuer)) is not None  # the first registration stays with as1


async def test_expired_token_is_refreshed_before_use(env: Env) -> None:
    env.as1.expires_in = 0
    env.resource_server()
    auth = env.oauth()
    assert (await env.call(auth)).status_code == 200
    env.as1.expires_in = 3600
    assert (await env.call(auth, "tools/call")).status_code == 200
    assert len(env.as1.grants("refresh_token")) == 1
    assert len(env.as1.seen("/authorize")) == 1  # no second user interaction
    assert env.as1.grants("refresh_token")[0]["resource"] == MCP_URL


async def test_expired_token_without_refresh_token_is_not_reused(env: Env) -> None:
    env.as1.expires_in = 0
    env.as1.refresh = False
    env.resource_server()
    auth = env.oauth()
    assert (await env.call(auth)).status_code == 200
    before = len(env.router.paths("mcp.test"))
    assert (await env.call(auth)).status_code == 200
    assert len(env.as1.seen("/authorize")) == 2
    assert env.router.paths("mcp.test")[before:].count("/mcp") == 2  # one 401, one success


async def test_revoked_token_is_refreshed_on_401(env: Env) -> None:
    verifier = IntrospectionVerifier(
        env.as1.endpoint("introspect"),
        client_id="rs",
        client_secret="rs-secret",
        audience=MCP_URL,
        http_client=env.http,
    )
    env.resource_server(verifier=verifier)
    auth = env.oauth()
    assert (await env.call(auth)).status_code == 200
    env.as1.revoke_all()  # the access token is dead, the refresh token is not
    assert (await env.call(auth)).status_code == 200
    assert len(env.as1.grants("refresh_token")) == 1 and len(env.as1.seen("/authorize")) == 1


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_token_endpoint_auth_method_follows_the_server(env: Env, method: str) -> None:
    env.as1.auth_methods = (method,)
    env.resource_server()
    assert (await env.call(env.oauth())).status_code == 200
    (registration,) = env.as1.seen("/register")
    assert registration.json()["token_endpoint_auth_method"] == method
    (token_request,) = env.as1.seen("/token")
    has_basic = token_request.headers.get("authorization", "").startswith("Basic ")
    has_post = "client_secret" in token_request.form()
    assert (has_basic, has_post) == (method == "client_secret_basic", method == "client_secret_post")


async def test_client_id_metadata_document_replaces_registration(env: Env) -> None:
    env.as1.cimd = True
    env.resource_server()
    url = "https://client.example/metadata.json"
    assert (await env.call(env.oauth(client_metadata_url=url))).status_code == 200
    assert not env.as1.seen("/register")
    assert authorize_params(env.as1)[0]["client_id"] == url


async def test_pre_registered_credentials_are_used_and_bound_to_their_issuer(env: Env) -> None:
    env.as1.registration = False
    env.as1.add_client("pre", secret="s3cret", method="client_secret_basic")
    env.resource_server()
    assert (await env.call(env.oauth(client=ClientInfo("pre", "s3cret")))).status_code == 200
    assert env.as1.seen("/token")[0].headers["authorization"].startswith("Basic ")

    bound = ClientInfo("pre", "s3cret", issuer="https://elsewhere.test")
    with pytest.raises(RegistrationError):
        await env.call(env.oauth(client=bound))


async def test_no_registration_option_is_a_clear_error(env: Env) -> None:
    env.as1.registration = False
    env.resource_server()
    with pytest.raises(RegistrationError):
        await env.call(env.oauth())


async def test_pkce_without_s256_is_refused(env: Env) -> None:
    env.as1.pkce_methods = None
    env.resource_server()
    with pytest.raises(UnsupportedServerError):
        await env.call(env.oauth())
    assert not env.as1.seen("/authorize")


@pytest.mark.parametrize(("offered", "requested"), [(True, "mcp:basic offline_access"), (False, "mcp:basic")])
async def test_offline_access_only_when_offered(env: Env, offered: bool, requested: str) -> None:
    env.as1.scopes_supported = ["mcp:basic", "offline_access"] if offered else ["mcp:basic"]
    env.resource_server(scopes_supported=["mcp:basic"])
    assert (await env.call(env.oauth())).status_code == 200
    assert authorize_params(env.as1)[0]["scope"] == requested


async def test_scope_omitted_when_nothing_suggests_one(env: Env) -> None:
    env.resource_server()
    assert (await env.call(env.oauth())).status_code == 200
    assert "scope" not in authorize_params(env.as1)[0]


async def test_concurrent_401s_authorize_once(env: Env) -> None:
    env.resource_server()
    auth = env.oauth()
    statuses: list[int] = []

    async def one() -> None:
        statuses.append((await env.call(auth)).status_code)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
    assert statuses == [200] * 5
    assert len(env.as1.seen("/authorize")) == 1


async def test_tokens_are_not_sent_to_other_hosts(env: Env) -> None:
    env.resource_server()
    auth = env.oauth()
    assert (await env.call(auth)).status_code == 200
    other = await env.http.get(env.as1.endpoint("jwks"), auth=auth)
    assert "authorization" not in {k.lower() for k in other.request.headers}


LEGACY_AS_PATHS = ("/.well-known/oauth-authorization-server", "/authorize", "/token", "/register", "/jwks")


async def test_legacy_server_without_protected_resource_metadata(env: Env) -> None:
    """No RFC 9728 metadata: before negotiation (no revision known) the 2025-03-26 rules apply
    (metadata at the server's origin, else default endpoints); at 2026-07-28 it is an error."""
    legacy = env.add_as(AuthServer(issuer="https://mcp.test"))
    rs = env.resource_server(auth_server=legacy)

    async def without_prm(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"].startswith("/.well-known/oauth-protected-resource"):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        elif scope["path"].startswith(
            ("/.well-known/oauth-authorization-server", "/authorize", "/token", "/register", "/jwks")
        ):
            await legacy.app(scope, receive, send)
        else:
            await rs(scope, receive, send)

    env.router.mount("mcp.test", without_prm)
    assert (await env.call(env.oauth())).status_code == 200
    with pytest.raises(DiscoveryError):
        await env.call(env.oauth(), headers={"MCP-Protocol-Version": "2026-07-28"})


async def test_error_response_from_authorization_server_is_reported(env: Env) -> None:
    env.resource_server()

    async def deny(url: str) -> dict[str, str]:
        query = dict(parse_qsl(urlsplit(url).query))
        return {"error": "access_denied", "state": query["state"], "iss": env.as1.issuer}

    handler = type("Deny", (), {"redirect_uri": "http://localhost:3000/callback", "authorize": staticmethod(deny)})()
    with pytest.raises(AuthorizationResponseError) as caught:
        await env.call(env.oauth(redirect_handler=handler))
    assert caught.value.reason == "error" and caught.value.error == "access_denied"


def broken_as(env: Env, path: str, status: int, body: bytes, content_type: str = "application/json") -> None:
    """Make one endpoint of the authorization server answer `status`/`body`."""
    original = env.as1.app

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] != path:
            await original(scope, receive, send)
            return
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type.encode())]}
        )
        await send({"type": "http.response.body", "body": body})

    env.router.mount("as.test", app)


@pytest.mark.parametrize(
    ("path", "status", "body", "error"),
    [
        ("/.well-known/oauth-authorization-server", 200, b"<html>", DiscoveryError),
        ("/.well-known/oauth-authorization-server", 200, b'{"issuer": 5}', IssuerMismatchError),
        ("/.well-known/oauth-authorization-server", 503, b"", DiscoveryError),
        ("/.well-known/oauth-authorization-server", 200, b'{"issuer": "https://as.test"}', DiscoveryError),
        ("/.well-known/oauth-authorization-server", 200, b'{"x": "' + b"a" * (2 << 20) + b'"}', DiscoveryError),
        ("/register", 500, b"oops", RegistrationError),
        ("/register", 201, b'{"client_secret": "no id"}', RegistrationError),
        ("/token", 200, b'{"token_type": "Bearer"}', TokenRequestError),
        ("/token", 200, b"not json", TokenRequestError),
        ("/token", 400, b'{"error": "invalid_grant", "error_description": "nope"}', TokenRequestError),
        ("/token", 200, b'{"access_token": "x", "token_type": "MAC"}', UnsupportedServerError),
    ],
)
async def test_broken_authorization_server_answers_are_typed_errors(
    env: Env, path: str, status: int, body: bytes, error: type[Exception]
) -> None:
    env.resource_server()
    broken_as(env, path, status, body)
    with pytest.raises(error):
        await env.call(env.oauth())
    # The client keeps working once the server is fixed.
    env.router.mount("as.test", env.as1.app)
    assert (await env.call(env.oauth())).status_code == 200


@pytest.mark.parametrize(
    "document",
    [
        b"[]",
        b'{"resource": "https://mcp.test/mcp"}',
        b'{"resource": "https://mcp.test/mcp", "authorization_servers": "x"}',
    ],
)
async def test_broken_resource_metadata_is_a_discovery_error(env: Env, document: bytes) -> None:
    rs = env.resource_server()
    rs._metadata_body = document
    with pytest.raises(DiscoveryError):
        await env.call(env.oauth())
    assert not env.as1.requests


class _PlainTokenEndpoint(AuthServer):
    """An https issuer whose metadata sends the client to a plain-http token endpoint."""

    def metadata_doc(self) -> dict[str, Any]:
        return {**super().metadata_doc(), "token_endpoint": "http://as.test/token"}


async def test_plain_http_authorization_server_is_refused_before_any_request(env: Env) -> None:
    plain = env.add_as(AuthServer(issuer="http://plain.test"))
    env.resource_server(auth_server=plain)
    with pytest.raises(InsecureEndpointError) as caught:
        await env.call(env.oauth())
    assert caught.value.url == "http://plain.test" and "https" in str(caught.value)
    assert env.router.paths("plain.test") == []  # not even its metadata was fetched
    # A test deployment may opt out.
    assert (await env.call(env.oauth(allow_insecure_http=True))).status_code == 200


async def test_plain_http_endpoint_in_metadata_is_refused_before_credentials_are_sent(env: Env) -> None:
    env.as1 = env.add_as(_PlainTokenEndpoint())
    env.resource_server()
    with pytest.raises(InsecureEndpointError) as caught:
        await env.call(env.oauth())
    assert caught.value.url == "http://as.test/token"
    assert not env.as1.seen("/register") and not env.as1.seen("/authorize") and not env.as1.seen("/token")


async def test_plain_http_mcp_server_off_loopback_gets_no_authorization(env: Env) -> None:
    env.resource_server()
    env.router.mount("mcp.lan", env.rs)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with pytest.raises(InsecureEndpointError):
        await env.http.post("http://mcp.lan/mcp", json=message, auth=env.oauth())
    assert env.router.paths("mcp.lan") == ["/mcp"] and not env.as1.requests


@pytest.mark.parametrize("same_process", [True, False])
async def test_sign_out_revokes_the_tokens_and_forgets_them(env: Env, same_process: bool) -> None:
    env.resource_server()
    storage = InMemoryTokenStorage()
    auth = env.oauth(storage=storage)
    assert (await env.call(auth)).status_code == 200
    stored = await storage.get_tokens(MCP_URL)
    assert stored is not None and stored.refresh_token in env.as1.refresh_tokens
    # A later process knows only the stored tokens: it finds the revocation endpoint by their issuer.
    signing_out = auth if same_process else env.oauth(storage=storage, server_url=MCP_URL)
    assert await signing_out.sign_out() is True
    forms = [r.form() for r in env.as1.seen("/revoke")]
    assert [(f["token"], f["token_type_hint"]) for f in forms] == [
        (stored.refresh_token, "refresh_token"),
        (stored.access_token, "access_token"),
    ]
    assert all(f["client_id"] == stored.client_id for f in forms)
    assert stored.refresh_token not in env.as1.refresh_tokens and stored.access_token not in env.as1.issued
    assert await storage.get_tokens(MCP_URL) is None
    assert (await env.call(signing_out)).status_code == 200
    assert len(env.as1.seen("/authorize")) == 2, "signed out: the next request authorizes again"


async def test_sign_out_without_a_revocation_endpoint_only_forgets(env: Env) -> None:
    env.as1.revocation = False
    env.resource_server()
    storage = InMemoryTokenStorage()
    auth = env.oauth(storage=storage)
    assert (await env.call(auth)).status_code == 200
    assert await auth.sign_out() is False
    assert await storage.get_tokens(MCP_URL) is None and not env.as1.seen("/revoke")
    assert await env.oauth(storage=storage, server_url=MCP_URL).sign_out() is False, "nothing left to revoke"


async def test_stored_tokens_are_not_refreshed_at_a_plain_http_endpoint(env: Env) -> None:
    env.resource_server()
    env.router.mount("as.lan", env.as1.app)
    storage = InMemoryTokenStorage()
    stale = TokenSet("old", expires_at=time.time() - 1, refresh_token="r", issuer="http://as.lan",
                     token_endpoint="http://as.lan/token", resource=MCP_URL, client_id="kept")  # fmt: skip
    await storage.set_tokens(MCP_URL, stale)  # say, kept from a run with allow_insecure_http=True
    await storage.set_client("http://as.lan", ClientInfo("kept", issuer="http://as.lan"))
    with pytest.raises(InsecureEndpointError):
        await env.call(env.oauth(storage=storage, server_url=MCP_URL))
    assert env.router.paths("as.lan") == [], "the refresh token never crossed the network in clear"
