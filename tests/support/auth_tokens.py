"""Access tokens as the test authorization server issues them, with any claim changed or dropped."""

from __future__ import annotations

import time
from typing import Any

import jwt

from support.auth_env import MCP_URL
from support.auth_server import AuthServer


def token(server: AuthServer, **overrides: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": server.issuer,
        "sub": "user-1",
        "aud": MCP_URL,
        "client_id": "app",
        "scope": "a b",
        "iat": now,
        "exp": now + 600,
    }
    key = overrides.pop("key", server.key)
    kid = overrides.pop("kid", server.kid)
    alg = overrides.pop("alg", "ES256")
    claims.update(overrides)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid} if kid else None)
