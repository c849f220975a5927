"""The machine-to-machine extensions (client credentials, workload identity JWT bearer,
enterprise-managed authorization) and DPoP, against the in-process servers."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any

import jwt
import pytest
from mcpgen.runtime.auth import (
    ClientCredentials,
    EnterpriseManaged,
    SigningKey,
    TokenRequestError,
    UnsupportedServerError,
    WorkloadIdentity,
)
from support.auth_asgi import Req, Resp, asgi, json_resp
from support.auth_env import MCP_URL, Env
from support.auth_server import JWT_BEARER, AuthServer, jwk_thumbprint, new_key

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_client_credentials_with_a_secret(env: Env, method: str) -> None:
    env.as1.grant_types = ("client_credentials",)
    env.as1.auth_methods = (method,)
    env.as1.add_client("svc", secret="svc-secret", method=method)
    env.resource_server(scopes_supported=["jobs:run"])
    auth = ClientCredentials("svc", client_secret="svc-secret", http_client=env.http)
    response = await env.call(auth)
    assert response.status_code == 200
    assert response.json()["result"] == {
        "method": "tools/list",
        "subject": "svc",
        "client_id": "svc",
        "scopes": ["jobs:run"],
    }
    (form,) = env.as1.grants("client_credentials")
    assert form["resource"] == MCP_URL and form["scope"] == "jobs:run"
    assert not env.as1.seen("/authorize") and not env.as1.seen("/register")


async def test_client_credentials_with_private_key_jwt(env: Env) -> None:
    key = new_key()
    env.as1.grant_types = ("client_credentials",)
    env.as1.auth_methods = ("private_key_jwt",)
    env.as1.add_client("svc-jwt", method="private_key_jwt", public_key=key.public_key())
    env.resource_server()
    auth = ClientCredentials("svc-jwt", signing_key=SigningKey(key, "ES256"), http_client=env.http)
    assert (await env.call(auth)).status_code == 200
    (form,) = env.as1.grants("client_credentials")
    claims = jwt.decode(form["client_assertion"], key.public_key(), algorithms=["ES256"], audience=env.as1.issuer)
    assert claims["iss"] == claims["sub"] == "svc-jwt" and claims["exp"] > time.time()
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def test_client_credentials_refused_when_the_grant_is_not_offered(env: Env) -> None:
    env.as1.grant_types = ("authorization_code",)
    env.resource_server()
    with pytest.raises(UnsupportedServerError):
        await env.call(ClientCredentials("svc", client_secret="x", http_client=env.http))
    assert not env.as1.seen("/token")


def workload_jwt(key: Any, audience: str, *, lifetime: int = 300) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://idp.workload.test",
        "sub": "workload-7",
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
    }
    return jwt.encode(claims, key, algorithm="ES256")


async def test_workload_identity_jwt_bearer(env: Env) -> None:
    key = new_key()
    env.as1.trusted_assertion_keys.append(key.public_key())
    env.as1.grant_types = (JWT_BEARER,)
    env.resource_server()
    provided: list[int] = []

    def assertion() -> str:  # called per grant, so a rotated workload token is picked up
        provided.append(1)
        return workload_jwt(key, env.as1.issuer)

    response = await env.call(WorkloadIdentity(assertion, http_client=env.http))
    assert response.status_code == 200 and response.json()["result"]["subject"] == "workload-7"
    (form,) = env.as1.grants(JWT_BEARER)
    assert form["resource"] == MCP_URL and provided == [1]


@pytest.mark.parametrize("audience_ok", [False, True])
async def test_workload_identity_errors_are_raised_without_retry(env: Env, audience_ok: bool) -> None:
    key = new_key()
    env.as1.trusted_assertion_keys.append(key.public_key())
    env.resource_server()
    token = workload_jwt(
        key, env.as1.issuer if audience_ok else "https://wrong.test", lifetime=-60 if audience_ok else 300
    )
    with pytest.raises(TokenRequestError) as caught:
        await env.call(WorkloadIdentity(token, http_client=env.http))
    assert caught.value.error == "invalid_grant"
    assert len(env.as1.seen("/token")) == 1  # no retry, no other grant


def idp_app(idp_key: Any, as_issuer: str, seen: list[dict[str, str]]) -> Any:
    async def handle(req: Req) -> Resp:
        form = req.form()
        seen.append(form)
        expected = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": "alice-id-token",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": as_issuer,
            "resource": MCP_URL,
            "client_id": "idp-client",
        }
        if any(form.get(k) != v for k, v in expected.items()):
            return json_resp(400, {"error": "invalid_request"})
        now = int(time.time())
        claims = {"iss": "https://idp.test", "sub": "alice", "aud": as_issuer, "resource": MCP_URL}
        claims |= {"client_id": "mcp-client", "iat": now, "exp": now + 300, "jti": secrets.token_hex(6)}
        id_jag = jwt.encode(claims, idp_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        doc = {"access_token": id_jag, "issued_token_type": expected["requested_token_type"], "token_type": "N_A"}
        return json_resp(200, doc)

    return asgi(handle)


async def test_enterprise_managed_authorization(env: Env) -> None:
    idp_key = new_key()
    exchanges: list[dict[str, str]] = []
    env.router.mount("idp.test", idp_app(idp_key, env.as1.issuer, exchanges))
    env.as1.trusted_assertion_keys.append(idp_key.public_key())
    env.as1.add_client("mcp-client", secret="mcp-secret", method="client_secret_basic")
    env.resource_server()
    auth = EnterpriseManaged(
        id_token="alice-id-token",
        idp_token_endpoint="https://idp.test/token",
        idp_client_id="idp-client",
        client_id="mcp-client",
        client_secret="mcp-secret",
        http_client=env.http,
    )
    response = await env.call(auth)
    assert response.status_code == 200
    assert response.json()["result"]["subject"] == "alice"
    assert len(exchanges) == 1
    (bearer,) = env.as1.grants(JWT_BEARER)
    assert jwt.get_unverified_header(bearer["assertion"])["typ"] == "oauth-id-jag+jwt"
    assert env.as1.seen("/token")[0].headers["authorization"].startswith("Basic ")


# ---------------------------------------------------------------------------- DPoP


class DPoPResource:
    """An MCP endpoint that accepts only DPoP-bound tokens with a valid, fresh proof (RFC 9449 §7),
    and may demand a nonce of its own."""

    def __init__(self, server: AuthServer, nonce: str | None) -> None:
        self.server, self.nonce = server, nonce
        self.jtis: set[str] = set()
        self.accepted = 0
        self.app = asgi(self.handle)

    async def handle(self, req: Req) -> Resp:
        if req.path == "/.well-known/oauth-protected-resource/mcp":
            return json_resp(200, {"resource": MCP_URL, "authorization_servers": [self.server.issuer]})
        prm = 'DPoP resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"'
        scheme, _, token = req.headers.get("authorization", "").partition(" ")
        if scheme != "DPoP" or token not in self.server.issued:
            return json_resp(401, {"error": "invalid_token"}, {"www-authenticate": prm})
        proof = req.headers["dpop"]
        header = jwt.get_unverified_header(proof)
        claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=["ES256"])
        ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
        assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
        assert claims["htm"] == "POST" and claims["htu"] == MCP_URL and claims["ath"] == ath
        assert self.server.issued[token]["cnf"]["jkt"] == jwk_thumbprint(header["jwk"])
        assert claims["jti"] not in self.jtis, "proof replayed"
        self.jtis.add(claims["jti"])
        if self.nonce is not None and claims.get("nonce") != self.nonce:
            challenge = 'DPoP error="use_dpop_nonce", ' + prm[5:]
            return json_resp(
                401, {"error": "use_dpop_nonce"}, {"www-authenticate": challenge, "dpop-nonce": self.nonce}
            )
        self.accepted += 1
        return json_resp(200, {"jsonrpc": "2.0", "id": 1, "result": {}})


@pytest.mark.parametrize("nonces", [False, True])
async def test_dpop_bound_tokens_with_fresh_proofs_and_nonces(env: Env, nonces: bool) -> None:
    env.as1.dpop = True
    env.as1.dpop_nonce = "as-nonce-1" if nonces else None
    resource = DPoPResource(env.as1, "rs-nonce-1" if nonces else None)
    env.router.mount("mcp.test", resource.app)
    auth = env.oauth()
    for _ in range(3):
        assert (await env.call(auth)).status_code == 200
    assert resource.accepted == 3 and len(resource.jtis) == (4 if nonces else 3)
    token_requests = env.as1.seen("/token")
    assert len(token_requests) == (2 if nonces else 1)  # one use_dpop_nonce challenge, then success
    assert all("dpop" in r.headers for r in token_requests)
    assert len(env.as1.seen("/authorize")) == 1


async def test_dpop_not_used_when_the_server_does_not_offer_it(env: Env) -> None:
    env.resource_server()
    assert (await env.call(env.oauth())).status_code == 200
    assert "dpop" not in env.as1.seen("/token")[0].headers


async def test_dpop_not_used_when_the_mcp_server_only_knows_bearer(env: Env) -> None:
    env.as1.dpop = True  # the authorization server could bind tokens, but the MCP server never asks
    env.resource_server()
    assert (await env.call(env.oauth())).status_code == 200
    assert "dpop" not in env.as1.seen("/token")[0].headers
