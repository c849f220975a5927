"""Server-side token verification: JWT (JWKS) and RFC 7662 introspection."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from mcpgen.runtime.auth import IntrospectionVerifier, InvalidToken, JWTVerifier, VerifierUnavailable
from support.auth_asgi import asgi, json_resp
from support.auth_env import MCP_URL, Env
from support.auth_server import new_key, public_jwk
from support.auth_tokens import token

pytestmark = pytest.mark.anyio


def verifier(env: Env, **kwargs: Any) -> JWTVerifier:
    kwargs.setdefault("jwks_uri", env.as1.endpoint("jwks"))
    return JWTVerifier(issuer=env.as1.issuer, audience=MCP_URL, http_client=env.http, **kwargs)


async def test_valid_token_gives_the_principal(env: Env) -> None:
    info = await verifier(env).verify(token(env.as1))
    assert (info.subject, info.client_id, info.scopes, info.issuer) == ("user-1", "app", {"a", "b"}, env.as1.issuer)
    assert info.audience == (MCP_URL,) and info.principal == f"{env.as1.issuer}#user-1"


@pytest.mark.parametrize(
    "bad",
    [
        {"exp": int(time.time()) - 3600},  # expired (beyond leeway)
        {"aud": "https://other.test/mcp"},  # another resource
        {"aud": None},  # no audience at all
        {"iss": "https://evil.test"},  # another issuer
        {"exp": None},  # no expiry
        {"key": new_key()},  # signed with someone else's key under our kid
    ],
)
async def test_bad_tokens_are_refused(env: Env, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidToken):
        await verifier(env).verify(token(env.as1, **bad))


async def test_a_dpop_binding_is_reported_for_the_middleware_to_enforce(env: Env) -> None:
    info = await verifier(env).verify(token(env.as1, cnf={"jkt": "thumb"}))
    assert info.dpop_jkt == "thumb"
    assert (await verifier(env).verify(token(env.as1))).dpop_jkt is None


async def test_symmetric_and_none_algorithms_are_refused(env: Env) -> None:
    hs = jwt.encode({"sub": "x", "aud": MCP_URL, "exp": time.time() + 60}, "k" * 32, algorithm="HS256")
    with pytest.raises(InvalidToken):
        await verifier(env).verify(hs)
    none = jwt.encode({"sub": "x", "aud": MCP_URL, "exp": time.time() + 60}, None, algorithm="none")
    with pytest.raises(InvalidToken):
        await verifier(env).verify(none)
    with pytest.raises(InvalidToken):
        await verifier(env).verify("not.a.jwt")
    with pytest.raises(ValueError):
        JWTVerifier(issuer=None, audience=MCP_URL, jwks={"keys": []}, algorithms=["HS256"])


async def test_jwks_is_cached_and_refetched_for_a_new_key(env: Env) -> None:
    v = verifier(env, min_refetch_interval=0)
    for _ in range(3):
        await v.verify(token(env.as1))
    assert len(env.as1.seen("/jwks")) == 1
    env.as1.key, env.as1.kid = new_key(), "rotated"  # key rotation at the authorization server
    info = await v.verify(token(env.as1))
    assert info.subject == "user-1" and len(env.as1.seen("/jwks")) == 2
    with pytest.raises(InvalidToken):
        await v.verify(token(env.as1, kid="unknown-kid"))


async def test_unknown_kid_does_not_hammer_the_jwks_endpoint(env: Env) -> None:
    v = verifier(env, min_refetch_interval=3600)
    await v.verify(token(env.as1))
    for _ in range(5):
        with pytest.raises(InvalidToken):
            await v.verify(token(env.as1, kid="unknown-kid"))
    assert len(env.as1.seen("/jwks")) == 1


async def test_static_jwks_needs_no_fetch(env: Env) -> None:
    v = JWTVerifier(issuer=env.as1.issuer, audience=MCP_URL, jwks={"keys": [public_jwk(env.as1.key, env.as1.kid)]})
    assert (await v.verify(token(env.as1))).subject == "user-1"
    assert (await v.verify(token(env.as1, kid=None))).subject == "user-1"  # single key, no kid


async def test_unreachable_jwks_is_unavailable_not_invalid(env: Env) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    env.router.mount("as.test", broken)
    with pytest.raises(VerifierUnavailable):
        await verifier(env).verify(token(env.as1))


def introspection(env: Env, **kwargs: Any) -> IntrospectionVerifier:
    kwargs.setdefault("client_secret", "rs-secret")
    return IntrospectionVerifier(
        env.as1.endpoint("introspect"), client_id="rs", audience=MCP_URL, http_client=env.http, **kwargs
    )


async def test_introspection_accepts_active_tokens_for_this_resource(env: Env) -> None:
    good = token(env.as1)
    env.as1.issued[good] = jwt.decode(good, options={"verify_signature": False})
    info = await introspection(env, issuer=env.as1.issuer).verify(good)
    assert info.subject == "user-1" and info.scopes == {"a", "b"}


FUTURE = int(time.time()) + 600


@pytest.mark.parametrize(
    "answer",
    [
        {"active": False},
        {"active": True, "aud": "https://other.test/mcp", "iss": "https://as.test", "exp": FUTURE},
        {"active": True, "iss": "https://as.test", "exp": FUTURE},  # no audience
        {"active": True, "aud": MCP_URL, "iss": "https://evil.test", "exp": FUTURE},
        {"active": True, "aud": [MCP_URL], "iss": "https://as.test", "exp": int(time.time()) - 3600},
        {"active": "true", "aud": MCP_URL, "iss": "https://as.test", "exp": FUTURE},  # not the boolean true
    ],
)
async def test_introspection_refuses(env: Env, answer: dict[str, Any]) -> None:
    async def fixed(req: Any) -> Any:
        return json_resp(200, answer)

    env.router.mount("intro.test", asgi(fixed))
    v = IntrospectionVerifier(
        "https://intro.test/introspect",
        client_id="rs",
        client_secret="x",
        audience=MCP_URL,
        issuer="https://as.test",
        http_client=env.http,
    )
    with pytest.raises(InvalidToken):
        await v.verify("some-token")


async def test_introspection_with_wrong_credentials_is_unavailable(env: Env) -> None:
    with pytest.raises(VerifierUnavailable):
        await introspection(env, client_secret="wrong").verify(token(env.as1))
