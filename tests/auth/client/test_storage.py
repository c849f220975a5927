"""Token storage: the in-memory default and the owner-only JSON file store."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from mcpgen.runtime.auth import ClientInfo, FileTokenStorage, InMemoryTokenStorage, TokenSet, TokenStorage
from support.auth_env import Env

pytestmark = pytest.mark.anyio


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_round_trip_and_delete(tmp_path: Path, kind: str) -> None:
    storage: TokenStorage = InMemoryTokenStorage() if kind == "memory" else FileTokenStorage(tmp_path / "t.json")
    tokens = TokenSet(
        "at", "DPoP", 123.0, "rt", ("a", "b"), "https://as.test", "https://as.test/token", "r", "jkt", "c"
    )
    client = ClientInfo("c", "s", "client_secret_post", "https://as.test", 0.0, ("http://localhost/cb",))
    await storage.set_tokens("https://mcp.test/mcp", tokens)
    await storage.set_client("https://as.test", client)
    assert await storage.get_tokens("https://mcp.test/mcp") == tokens
    assert await storage.get_client("https://as.test") == client
    assert await storage.get_client("https://as2.test") is None
    await storage.set_tokens("https://mcp.test/mcp", None)
    assert await storage.get_tokens("https://mcp.test/mcp") is None
    assert await storage.get_client("https://as.test") == client


async def test_file_store_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "new-dir" / "tokens.json"
    storage = FileTokenStorage(path)
    await storage.set_tokens("https://mcp.test/mcp", TokenSet("secret-token"))
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert "secret-token" in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary files left behind


async def test_file_store_tightens_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": {"r": {"access_token": "x"}}, "clients": {}}))
    os.chmod(path, 0o644)
    storage = FileTokenStorage(path)
    assert (await storage.get_tokens("r")) == TokenSet("x")
    assert mode(path) == 0o600


@pytest.mark.parametrize("content", ["not json", "[]", '{"tokens": 5}', '{"tokens": {"r": "x"}}'])
async def test_corrupt_file_counts_as_empty_and_is_replaced(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    storage = FileTokenStorage(path)
    assert await storage.get_tokens("r") is None
    await storage.set_client("https://as.test", ClientInfo("c"))
    assert await storage.get_client("https://as.test") == ClientInfo("c")


async def test_tokens_survive_a_restart_without_reauthorizing(env: Env, tmp_path: Path) -> None:
    env.resource_server()
    path = tmp_path / "tokens.json"
    assert (await env.call(env.oauth(storage=FileTokenStorage(path)))).status_code == 200
    # A new process: a new OAuth object over the same file.
    assert (await env.call(env.oauth(storage=FileTokenStorage(path)))).status_code == 200
    assert len(env.as1.seen("/authorize")) == 1 and len(env.as1.seen("/register")) == 1


def test_one_auth_object_serves_successive_event_loops(tmp_path: Path) -> None:
    """Made once, used by several `anyio.run()` calls on both backends (as a CLI might)."""
    import anyio

    env = Env()
    env.resource_server()
    auth = env.oauth(storage=FileTokenStorage(tmp_path / "tokens.json"))

    async def call() -> int:
        return (await env.call(auth)).status_code

    assert anyio.run(call, backend="asyncio") == 200
    assert anyio.run(call, backend="trio") == 200
    assert anyio.run(call, backend="asyncio") == 200
    assert len(env.as1.seen("/authorize")) == 1
