"""What a client learns when a handler fails: what the handler meant to say, and nothing else."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcpgen.runtime import (
    Diagnostics,
    InvalidParams,
    McpError,
    NotFound,
    RequestContext,
    Server,
    ToolError,
)
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]
SECRET = "postgres://admin:hunter2@db/prod"  # what an exception message may carry


def make_server(**options: Any) -> Server:
    server = Server("failures", **options)

    @server.tool()
    def leaky(query: str) -> str:
        raise RuntimeError(f"cannot run {query} on {SECRET}")

    @server.tool()
    async def leaky_async() -> str:
        raise KeyError(SECRET)

    @server.tool()
    def refuse(amount: int) -> str:
        raise ToolError(f"{amount} is over your limit of 100")

    @server.tool()
    def missing(name: str) -> str:
        raise NotFound(f"no order named {name}")

    @server.resource("orders://{id}")
    def order(id: str) -> str:
        if id == "boom":
            raise KeyError(SECRET)
        raise NotFound(id)

    @server.prompt()
    def review(order_id: str) -> str:
        raise NotFound(f"no order {order_id}")

    @server.prompt()
    def crashing() -> str:
        raise ValueError(SECRET)

    @server.method("resources/templates/list")
    async def broken(ctx: RequestContext, params: Any) -> Any:
        raise OSError(f"/srv/{SECRET}/templates.json: no such file")

    return server


def logged_ids(caplog: pytest.LogCaptureFixture) -> dict[str, logging.LogRecord]:
    found = {}
    for record in caplog.records:
        if record.name == "mcpgen.runtime.server" and record.exc_info and "error id" in record.getMessage():
            found[record.getMessage().rsplit("error id ", 1)[1].rstrip(")")] = record
    return found


@pytest.mark.parametrize("mode", MODES)
async def test_an_unexpected_tool_exception_says_only_that_it_failed(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "mcpgen.runtime.server")
    async with connected(make_server(), mode=mode) as client:
        for name, arguments in (("leaky", {"query": "select 1"}), ("leaky_async", {})):
            result = await client.call_tool(name, arguments)
            text = result.content[0].text
            assert result.is_error is True
            assert SECRET not in text and "RuntimeError" not in text and "KeyError" not in text
            error_id = text.split("error id ", 1)[1].rstrip(").")
            record = logged_ids(caplog)[error_id]  # the same id in the server's log, with the traceback
            assert record.exc_info is not None and SECRET in str(record.exc_info[1])


@pytest.mark.parametrize("mode", MODES)
async def test_tool_error_and_not_found_are_meant_for_the_model(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        refused = await client.call_tool("refuse", {"amount": 250})
        assert refused.is_error is True and refused.content[0].text == "250 is over your limit of 100"
        missing = await client.call_tool("missing", {"name": "x"})
        assert missing.is_error is True and missing.content[0].text == "no order named x"


async def test_a_resource_that_is_not_found_gets_the_protocol_code_of_each_era() -> None:
    async with connected(make_server(), mode="handshake") as client:
        with pytest.raises(McpError) as raised:
            await client.read_resource("orders://42")
        assert raised.value.code == -32002 and raised.value.data == {"uri": "orders://42"}
    async with connected(make_server(), mode="auto") as client:
        with pytest.raises(InvalidParams) as invalid:
            await client.read_resource("orders://42")
        assert invalid.value.code == -32602 and invalid.value.data == {"uri": "orders://42"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_that_is_not_found_is_invalid_params(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        with pytest.raises(InvalidParams, match="no order 7"):
            await client.get_prompt("review", {"order_id": "7"})


@pytest.mark.parametrize("mode", MODES)
async def test_unexpected_exceptions_elsewhere_are_internal_errors_with_an_id(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "mcpgen.runtime.server")
    async with connected(make_server(), mode=mode) as client:
        calls = [
            client.read_resource("orders://boom"),
            client.get_prompt("crashing"),
            client.request("resources/templates/list"),
        ]
        for call in calls:
            with pytest.raises(McpError) as raised:
                await call
            error = raised.value
            assert error.code == -32603
            assert SECRET not in error.message and "KeyError" not in error.message and "OSError" not in error.message
            assert error.data["errorId"] in error.message
            assert set(error.data) == {"errorId"}
            record = logged_ids(caplog)[error.data["errorId"]]
            assert SECRET in str(record.exc_info[1]) if record.exc_info else False


@pytest.mark.parametrize("mode", MODES)
async def test_error_details_are_for_development(mode: str) -> None:
    async with connected(make_server(diagnostics=Diagnostics(error_details=True)), mode=mode) as client:
        result = await client.call_tool("leaky", {"query": "select 1"})
        text = result.content[0].text
        assert result.is_error is True and "RuntimeError" in text and SECRET in text and "Traceback" in text
        with pytest.raises(McpError) as raised:
            await client.get_prompt("crashing")
        error = raised.value
        assert error.code == -32603 and "ValueError" in error.message and SECRET in error.message
        assert error.data["type"] == "ValueError" and "Traceback" in error.data["traceback"]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_errors_keep_their_code_message_and_data(mode: str) -> None:
    server = Server("failures")

    @server.tool()
    def precise() -> str:
        raise McpError("quota exhausted", code=-32050, data={"resetIn": 30})

    async with connected(server, mode=mode) as client:
        with pytest.raises(McpError) as raised:
            await client.call_tool("precise")
        assert (raised.value.code, raised.value.message, raised.value.data) == (
            -32050,
            "quota exhausted",
            {"resetIn": 30},
        )
