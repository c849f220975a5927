"""Registry hygiene: a name is registered once (unless replaced on purpose); listings filtered per
caller, and what a caller may not see is refused when called."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientAdvertising,
    InvalidParams,
    McpError,
    RequestContext,
    Server,
    ServerAdvertising,
    TransportContext,
    memory_pair,
    visible_by_scopes,
)
from mcpgen.runtime.auth import AuthInfo
from mcpgen.runtime.server import Feature
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


def test_a_second_registration_of_a_name_is_an_error() -> None:
    server = Server("dupes")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ValueError, match="tool 'add' is registered already"):

        @server.tool(name="add")
        def other(a: int) -> int:
            return a

    with pytest.raises(ValueError, match="registered already"):
        server.add_tool(lambda: 1, name="add")
    server.add_prompt(lambda: "p", name="p")
    with pytest.raises(ValueError, match="prompt 'p'"):
        server.add_prompt(lambda: "q", name="p")
    server.add_resource(lambda: "r", "mem://r")
    with pytest.raises(ValueError, match="resource 'mem://r'"):
        server.add_resource(lambda: "s", "mem://r")
    server.add_resource_template(lambda id: id, "mem://t/{id}")
    with pytest.raises(ValueError, match=r"resource template 'mem://t/\{id\}'"):
        server.add_resource_template(lambda id: id, "mem://t/{id}")
    assert server.tools["add"].fn is add, "the first registration stays"


async def test_replace_true_replaces_and_tells_the_clients() -> None:
    server = Server("dupes")
    server.add_tool(lambda: "one", name="answer")
    async with connected(server, mode="auto") as client, client.listen(tools=True) as changes:
        assert (await client.call_tool("answer")).content[0].text == "one"

        @server.tool(name="answer", replace=True)
        def answer() -> str:
            return "two"

        assert (await changes.next(timeout=10)).kind == "tools"
        assert (await client.call_tool("answer")).content[0].text == "two"


def make_server(**options: Any) -> Server:
    server = Server("scoped", **options)

    @server.tool()
    def public() -> str:
        return "public"

    @server.tool(scopes=["notes:admin"])
    def wipe() -> str:
        return "wiped"

    @server.prompt(scopes=["notes:admin"])
    def audit() -> str:
        return "audit"

    @server.prompt()
    def hello() -> str:
        return "hello"

    @server.resource("notes://secret", scopes=["notes:admin"])
    def secret() -> str:
        return "secret"

    @server.resource("notes://open")
    def open_note() -> str:
        return "open"

    @server.resource("vault://{key}", scopes=["notes:admin"])
    def vault(key: str) -> str:
        return key

    return server


@asynccontextmanager
async def as_principal(server: Server, scopes: set[str], mode: str) -> AsyncIterator[Client]:
    """A client whose every message arrives authenticated as a principal with `scopes` (what
    the HTTP auth middleware does), over a memory pair."""
    client_end, server_end = memory_pair()
    who = AuthInfo(token="t", subject="alice", scopes=frozenset(scopes))
    server_end = dataclasses.replace(server_end, context=TransportContext("memory", auth=who))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode=mode) as client:
            yield client
        tg.cancel_scope.cancel()


async def names(client: Client) -> dict[str, list[str]]:
    return {
        "tools": [t.name async for t in client.tools()],
        "prompts": [p.name async for p in client.prompts()],
        "resources": [r.uri async for r in client.resources()],
        "templates": [t.uri_template async for t in client.resource_templates()],
    }


@pytest.mark.parametrize("mode", MODES)
async def test_visible_by_scopes_filters_listings_and_refuses_calls(mode: str) -> None:
    server = make_server(advertising=ServerAdvertising(visibility=visible_by_scopes))
    async with as_principal(server, {"notes:read"}, mode) as reader:
        assert await names(reader) == {
            "tools": ["public"],
            "prompts": ["hello"],
            "resources": ["notes://open"],
            "templates": [],
        }
        with pytest.raises(InvalidParams, match="unknown tool: wipe"):
            await reader.call_tool("wipe")
        with pytest.raises(InvalidParams, match="unknown prompt: audit"):
            await reader.get_prompt("audit")
        for uri in ("notes://secret", "vault://k"):
            with pytest.raises(McpError, match="resource not found"):
                await reader.read_resource(uri)
        assert (await reader.call_tool("public")).content[0].text == "public"
    async with as_principal(server, {"notes:read", "notes:admin"}, mode) as admin:
        assert await names(admin) == {
            "tools": ["public", "wipe"],
            "prompts": ["audit", "hello"],
            "resources": ["notes://secret", "notes://open"],
            "templates": ["vault://{key}"],
        }
        assert (await admin.call_tool("wipe")).content[0].text == "wiped"
        assert (await admin.read_resource("vault://k")).contents[0].text == "k"


async def test_without_authentication_only_unscoped_items_are_visible() -> None:
    async with connected(
        make_server(advertising=ServerAdvertising(visibility=visible_by_scopes)), mode="auto"
    ) as client:
        assert (await names(client))["tools"] == ["public"]


@pytest.mark.parametrize("mode", MODES)
async def test_any_per_caller_filter(mode: str) -> None:
    """A visibility function sees the request's context: here, the client's declared name."""

    def only_for_ops(ctx: RequestContext, item: Feature) -> bool:
        return not item.name.startswith("ops_") or (ctx.client_info or {}).get("name") == "ops-console"

    server = Server("filtered", advertising=ServerAdvertising(visibility=only_for_ops))
    server.add_tool(lambda: "restarted", name="ops_restart")
    server.add_tool(lambda: "hi", name="greet")
    async with connected(server, mode=mode) as client:
        assert [t.name async for t in client.tools()] == ["greet"]
        with pytest.raises(InvalidParams, match="unknown tool"):
            await client.call_tool("ops_restart")
    async with connected(
        server, mode=mode, advertising=ClientAdvertising(info={"name": "ops-console", "version": "1"})
    ) as ops:
        assert [t.name async for t in ops.tools()] == ["ops_restart", "greet"]
        assert (await ops.call_tool("ops_restart")).content[0].text == "restarted"
