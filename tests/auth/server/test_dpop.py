"""DPoP on the resource server: `BearerAuthMiddleware` accepts a DPoP-bound token only with a proof
that matches the request, the token and the key it is bound to (RFC 9449 §4.3, §7)."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
import jwt
import pytest
from mcpgen.runtime.auth import (
    AuthInfo,
    BearerAuthMiddleware,
    DPoPProofChecker,
    DPoPProofs,
    InvalidDPoPProof,
    SigningKey,
    parse_www_authenticate,
)
from mcpgen.runtime.auth.server import dpop
from mcpgen.runtime.auth.server.dpop import access_token_hash
from support.auth_env import MCP_URL, Env, echo_app
from support.auth_tokens import token

pytestmark = pytest.mark.anyio
MESSAGE = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
KEY = SigningKey.generate()
OTHER_KEY = SigningKey.generate()


def bound_token(env: Env, key: SigningKey = KEY) -> str:
    return token(env.as1, cnf={"jkt": key.thumbprint()})


def proof(access_token: str | None, key: SigningKey = KEY, **changes: Any) -> str:
    """A proof for POST `MCP_URL`; `changes` replace claims (None removes one) or, for `typ`,
    `jwk` and `alg`, header members."""
    claims: dict[str, Any] = {
        "jti": secrets.token_urlsafe(12),
        "htm": "POST",
        "htu": MCP_URL,
        "iat": int(time.time()),
        "ath": access_token_hash(access_token) if access_token is not None else None,
    }
    headers: dict[str, Any] = {"typ": changes.pop("typ", "dpop+jwt"), "jwk": changes.pop("jwk", key.public_jwk())}
    alg = changes.pop("alg", None)
    claims = {k: v for k, v in {**claims, **changes}.items() if v is not None}
    if alg is not None:
        return jwt.encode(claims, "k" * 32, algorithm=alg, headers=headers)
    return key.sign(claims, headers)


async def post(env: Env, authorization: str, *proofs: str) -> httpx.Response:
    headers = [("authorization", authorization), *(("dpop", p) for p in proofs)]
    return await env.http.post(MCP_URL, json=MESSAGE, headers=headers)


def challenge_of(response: httpx.Response) -> tuple[str, dict[str, str]]:
    (found,) = parse_www_authenticate(response.headers["www-authenticate"])
    return found.scheme, found.params


async def test_a_bound_token_with_a_matching_proof_is_accepted(env: Env) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    response = await post(env, f"DPoP {tok}", proof(tok))
    assert response.status_code == 200 and response.json()["result"]["subject"] == "user-1"
    # Scheme, host and default port are normalised; query and fragment are not part of htu.
    tolerant = proof(tok, htu="HTTPS://MCP.test:443/mcp")
    assert (await post(env, f"DPoP {tok}", tolerant)).status_code == 200
    document = (await env.http.get("https://mcp.test/.well-known/oauth-protected-resource/mcp")).json()
    assert "ES256" in document["dpop_signing_alg_values_supported"]


def _bad_proofs(tok: str) -> dict[str, str]:
    return {
        "another key": proof(tok, OTHER_KEY),
        "another method": proof(tok, htm="GET"),
        "another URL": proof(tok, htu="https://mcp.test/other"),
        "too old": proof(tok, iat=int(time.time()) - 3600),
        "from the future": proof(tok, iat=int(time.time()) + 3600),
        "another token's hash": proof(tok, ath=access_token_hash("something else")),
        "no ath": proof(None),
        "no jti": proof(tok, jti=None),
        "wrong typ": proof(tok, typ="JWT"),
        "private key in jwk": proof(tok, jwk={**KEY.public_jwk(), "d": "AAAA"}),
        "symmetric algorithm": proof(tok, alg="HS256"),
        "not a JWS": "not-a-proof",
    }


@pytest.mark.parametrize("case", list(_bad_proofs("x")))
async def test_a_proof_that_does_not_match_is_refused(env: Env, case: str) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    response = await post(env, f"DPoP {tok}", _bad_proofs(tok)[case])
    assert response.status_code == 401
    scheme, params = challenge_of(response)
    assert scheme == "DPoP" and params["error"] == "invalid_dpop_proof" and "ES256" in params["algs"].split()
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


async def test_a_proof_is_accepted_once(env: Env) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    once = proof(tok)
    assert (await post(env, f"DPoP {tok}", once)).status_code == 200
    replayed = await post(env, f"DPoP {tok}", once)
    assert replayed.status_code == 401 and "replayed" in challenge_of(replayed)[1]["error_description"]


@pytest.mark.parametrize("count", [0, 2])
async def test_exactly_one_proof_header(env: Env, count: int) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    response = await post(env, f"DPoP {tok}", *(proof(tok) for _ in range(count)))
    assert response.status_code == 401 and challenge_of(response)[1]["error"] == "invalid_dpop_proof"


async def test_a_bound_token_is_never_a_bearer_token_and_an_unbound_one_never_dpop(env: Env) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    as_bearer = await post(env, f"Bearer {tok}")
    assert as_bearer.status_code == 401 and challenge_of(as_bearer)[1]["error"] == "invalid_token"
    plain = token(env.as1)
    as_dpop = await post(env, f"DPoP {plain}", proof(plain))
    assert as_dpop.status_code == 401 and challenge_of(as_dpop)[1]["error"] == "invalid_token"
    assert (await post(env, f"Bearer {plain}")).status_code == 200, "bearer tokens still work"


async def test_dpop_required_refuses_bearer_tokens(env: Env) -> None:
    env.resource_server(dpop=True, dpop_required=True)
    document = (await env.http.get("https://mcp.test/.well-known/oauth-protected-resource/mcp")).json()
    assert document["dpop_bound_access_tokens_required"] is True
    missing = await env.http.post(MCP_URL, json=MESSAGE)
    assert missing.status_code == 401 and challenge_of(missing)[0] == "DPoP"
    refused = await post(env, f"Bearer {token(env.as1)}")
    assert refused.status_code == 401 and challenge_of(refused)[0] == "DPoP"
    tok = bound_token(env)
    assert (await post(env, f"DPoP {tok}", proof(tok))).status_code == 200


async def test_with_dpop_off_the_scheme_is_unknown_and_bound_tokens_are_refused(env: Env) -> None:
    env.resource_server(dpop=False)
    tok = bound_token(env)
    unknown = await post(env, f"DPoP {tok}", proof(tok))
    assert unknown.status_code == 401 and "error" not in challenge_of(unknown)[1]
    assert (await post(env, f"Bearer {tok}")).status_code == 401


async def test_the_oauth_client_and_the_middleware_speak_dpop_end_to_end(env: Env) -> None:
    env.as1.dpop = True  # the authorization server binds tokens to the client's proof key
    env.resource_server(dpop=None)  # the middleware advertises DPoP in its metadata
    proofs = DPoPProofs()
    auth = env.oauth(dpop_key=proofs.key)
    for _ in range(3):
        assert (await env.call(auth)).status_code == 200
    (token_request,) = env.as1.seen("/token")
    assert "dpop" in token_request.headers
    (issued,) = env.as1.issued.values()
    assert issued["cnf"]["jkt"] == proofs.jkt


def test_the_replay_cache_stays_bounded_under_a_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dpop, "MAX_REPLAY_ENTRIES", 10)
    checker = DPoPProofChecker()
    first = proof("tok")
    checker.check(first, method="POST", url=MCP_URL, token="tok", jkt=KEY.thumbprint())
    for _ in range(25):
        checker.check(proof("tok"), method="POST", url=MCP_URL, token="tok", jkt=KEY.thumbprint())
    assert len(checker._seen) <= 10
    with pytest.raises(InvalidDPoPProof, match="replayed"):  # the newest ones are still remembered
        checker.check(proof("tok", jti=max(checker._seen, key=checker._seen.__getitem__)), method="POST",
                      url=MCP_URL, token="tok", jkt=KEY.thumbprint())  # fmt: skip


@pytest.mark.parametrize(("skew", "accepted"), [(-200, True), (10, True), (60, False), (-400, False)])
async def test_clock_skew_is_tolerated_within_the_leeway(env: Env, skew: int, accepted: bool) -> None:
    env.resource_server(dpop=None)  # proofs may be 300 s old, and 30 s from the future
    tok = bound_token(env)
    response = await post(env, f"DPoP {tok}", proof(tok, iat=int(time.time()) + skew))
    assert (response.status_code == 200) is accepted


@pytest.mark.parametrize("htu", ["https://user@mcp.test/mcp", "https://mcp.test:abc/mcp"])
async def test_an_htu_with_user_information_or_a_bad_port_is_refused(env: Env, htu: str) -> None:
    env.resource_server(dpop=None)
    tok = bound_token(env)
    assert (await post(env, f"DPoP {tok}", proof(tok, htu=htu))).status_code == 401


@pytest.mark.parametrize("jkt", ["", 5, ["x"], None])
async def test_a_malformed_confirmation_is_never_a_bearer_token(env: Env, jkt: Any) -> None:
    env.resource_server(dpop=None)
    response = await post(env, f"Bearer {token(env.as1, cnf={'jkt': jkt})}")
    assert response.status_code == 401 and challenge_of(response)[1]["error"] == "invalid_token"


class _ClaimsOnly:
    """A verifier of the user's own that reports the claims but not `dpop_jkt`."""

    async def verify(self, access_token: str) -> AuthInfo:
        claims = jwt.decode(access_token, options={"verify_signature": False})
        return AuthInfo(token=access_token, subject=claims["sub"], claims=claims)


async def test_a_mounted_endpoint_and_a_verifier_that_only_reports_claims(env: Env) -> None:
    """Mounted under /api (ASGI `root_path`, with `path` holding the prefix, as Starlette mounts),
    with a verifier that leaves `dpop_jkt` unset: the binding still comes from `cnf.jkt`."""
    middleware = BearerAuthMiddleware(
        echo_app, verifier=_ClaimsOnly(), resource="https://api.test/api/mcp", authorization_servers=[env.as1.issuer]
    )

    async def mounted(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await middleware({**scope, "root_path": "/api"} if scope["type"] == "http" else scope, receive, send)

    env.router.mount("api.test", mounted)
    url = "https://api.test/api/mcp"
    tok = bound_token(env)
    headers = [("authorization", f"DPoP {tok}"), ("dpop", proof(tok, htu=url))]
    assert (await env.http.post(url, json=MESSAGE, headers=headers)).status_code == 200
    as_bearer = await env.http.post(url, json=MESSAGE, headers={"authorization": f"Bearer {tok}"})
    assert as_bearer.status_code == 401
