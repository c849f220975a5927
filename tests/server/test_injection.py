"""Injected handler parameters: a provider per parameter, resolved per call, overridable in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import pytest
from mcpgen.runtime import ClientAdvertising, Depends, RequestContext, Server
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


@dataclass
class Database:
    name: str
    queries: list[str] = field(default_factory=list)

    def run(self, sql: str) -> str:
        self.queries.append(sql)
        return f"{self.name}: {sql}"


@dataclass
class Session:
    db: Database
    closed: bool = False


@dataclass
class App:
    db: Database
    sessions: list[Session] = field(default_factory=list)


def get_db(ctx: RequestContext[App]) -> Database:
    return ctx.lifespan.db


async def get_session(ctx: RequestContext[App], db: Annotated[Database, Depends(get_db)]) -> AsyncIterator[Session]:
    session = Session(db)
    ctx.lifespan.sessions.append(session)
    try:
        yield session
    finally:
        session.closed = True


def caller(ctx: RequestContext[App]) -> str:
    return str((ctx.client_info or {}).get("name"))


def make_server(app: App) -> Server[App]:
    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[App]:
        yield app

    server = Server("inject", lifespan=lifespan)

    @server.tool()
    def query(sql: str, db: Annotated[Database, Depends(get_db)]) -> str:
        return db.run(sql)

    @server.tool()
    async def in_session(
        sql: str,
        session: Annotated[Session, Depends(get_session)],
        db: Annotated[Database, Depends(get_db)],
        who: Annotated[str, Depends(caller)],
    ) -> str:
        assert session.db is db, "get_db ran once for this call, for both parameters"
        assert not session.closed
        return f"{who} {db.run(sql)}"

    @server.prompt()
    def explain(table: str, db: Annotated[Database, Depends(get_db)]) -> str:
        return f"Explain {table} of {db.name}"

    @server.resource("db://{table}/count")
    def count(table: str, db: Annotated[Database, Depends(get_db)]) -> str:
        return f"{db.name}.{table}: {len(db.queries)}"

    return server


@pytest.mark.parametrize("mode", MODES)
async def test_injected_parameters_are_not_the_clients(mode: str) -> None:
    server = make_server(App(Database("main")))
    async with connected(server, mode=mode) as client:
        tools = {tool.name: tool async for tool in client.tools()}
        assert tools["query"].input_schema["properties"].keys() == {"sql"}
        assert tools["in_session"].input_schema["properties"].keys() == {"sql"}
        prompts = {prompt.name: prompt async for prompt in client.prompts()}
        assert [a.name for a in prompts["explain"].arguments or []] == ["table"]


@pytest.mark.parametrize("mode", MODES)
async def test_providers_run_per_call_and_clean_up_after_it(mode: str) -> None:
    app = App(Database("main"))
    server = make_server(app)
    async with connected(
        server, mode=mode, advertising=ClientAdvertising(info={"name": "tester", "version": "1"})
    ) as client:
        assert (await client.call_tool("query", {"sql": "select 1"})).content[0].text == "main: select 1"
        first = await client.call_tool("in_session", {"sql": "select 2"})
        second = await client.call_tool("in_session", {"sql": "select 3"})
        assert first.content[0].text == "tester main: select 2" and second.content[0].text == "tester main: select 3"
        assert len(app.sessions) == 2 and all(session.closed for session in app.sessions), "one per call, closed after"
        prompt = await client.get_prompt("explain", {"table": "users"})
        assert prompt.messages[0].content.text == "Explain users of main"
        read = await client.read_resource("db://users/count")
        assert read.contents[0].text == "main.users: 3"


@pytest.mark.parametrize("mode", MODES)
async def test_overrides_replace_a_provider(mode: str) -> None:
    app = App(Database("main"))
    server = make_server(app)
    fake = Database("fake")
    server.dependency_overrides[get_db] = lambda: fake
    async with connected(server, mode=mode) as client:
        assert (await client.call_tool("query", {"sql": "drop table x"})).content[0].text == "fake: drop table x"
        session_call = await client.call_tool("in_session", {"sql": "select 1"})
        assert session_call.content[0].text.endswith("fake: select 1"), "providers depending on it get the override"
    assert app.db.queries == [] and fake.queries == ["drop table x", "select 1"]
    del server.dependency_overrides[get_db]
    async with connected(server, mode=mode) as client:
        assert (await client.call_tool("query", {"sql": "select 1"})).content[0].text == "main: select 1"


def needs_a_url(url: str) -> str:
    return url


def test_a_provider_needs_nothing_the_server_cannot_give() -> None:
    server = Server("inject")
    with pytest.raises(TypeError, match="'url' that is neither the request context nor"):

        @server.tool()
        def fetch(page: Annotated[str, Depends(needs_a_url)]) -> str:
            return page


CLOSED: list[str] = []


def resource() -> Iterator[str]:
    yield "handle"
    CLOSED.append("handle")


async def test_sync_generator_providers_clean_up_too() -> None:
    closed = CLOSED
    closed.clear()
    server = Server("inject")

    @server.tool()
    async def use(handle: Annotated[str, Depends(resource)]) -> str:
        assert closed == []
        return handle

    async with connected(server, mode="auto") as client:
        assert (await client.call_tool("use")).content[0].text == "handle"
    assert closed == ["handle"]


def test_the_decorated_function_keeps_its_signature() -> None:
    server = make_server(App(Database("main")))
    db = Database("direct")

    @server.tool()
    def direct(sql: str, db: Annotated[Database, Depends(get_db)]) -> str:
        return db.run(sql)

    assert direct("select 1", db) == "direct: select 1"  # still callable as written
