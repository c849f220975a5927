"""A token verifier for in-process HTTP tests: the token is the user's name (`Bearer alice` is
alice), so a test can speak as several principals without an authorization server."""

from __future__ import annotations

from mcpgen.runtime.auth import AuthInfo, InvalidToken, ProtectedResource

USERS = frozenset({"alice", "bob", "carol"})


class NamedTokens:
    """Accepts a user's name as their token; anything else is an invalid token."""

    async def verify(self, token: str) -> AuthInfo:
        if token not in USERS:
            raise InvalidToken("unknown user")
        return AuthInfo(token=token, subject=token, issuer="https://as.test", scopes=frozenset({"mcp"}))


def protection() -> ProtectedResource:
    """Protection of an endpoint served as http://127.0.0.1:8000/mcp (the ASGI driver's)."""
    return ProtectedResource("http://127.0.0.1:8000/mcp", ["https://as.test"], NamedTokens(), dpop=False)


def as_user(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {name}"}
