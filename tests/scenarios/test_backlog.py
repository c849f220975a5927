"""The request backlog end to end: a real `Server` and `Client` in memory (handshake era), tools
that elicit, more concurrent calls than the session's `max_in_flight`, both backends."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anyio.abc import ObjectReceiveStream
from mcpgen.runtime import Client, InputHandlers, RequestContext, Server, memory_pair
from mcpgen.runtime.core.transport import Frame, Inbound, Transport
from mcpgen.runtime.protocol.errors import SERVER_OVERLOADED, ServerOverloaded
from mcpgen.runtime.protocol.input_requests import elicit
from support.peers import V25

pytestmark = pytest.mark.anyio
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Counting(ObjectReceiveStream[Inbound]):
    """The server end's input, noting when its reader has taken `calls` tools/call requests."""

    def __init__(self, inner: ObjectReceiveStream[Inbound], calls: int) -> None:
        self.inner = inner
        self.left = calls
        self.all_read = anyio.Event()

    async def receive(self) -> Inbound:
        item = await self.inner.receive()
        if isinstance(item, Frame) and json.loads(item.data).get("method") == "tools/call":
            self.left -= 1
            if self.left == 0:
                self.all_read.set()
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize(("bound", "calls"), [(1, 3), (2, 5)])
async def test_calls_past_max_in_flight_whose_tools_elicit_all_complete(bound: int, calls: int) -> None:
    """The deadlock the backlog fixed: `bound` tools run, each waiting on an elicitation; the
    client answers only once the server's reader has taken every call (so some wait for room).
    A reader that stopped for room never read those answers, and nothing moved again; now the
    calls past the bound wait in the backlog and every call completes."""
    server = Server("backlog", "1")
    asked: list[int] = []

    @server.tool()
    async def confirm(ctx: RequestContext, n: int) -> str:
        answer = ctx.input_response("ok")
        if answer is None:
            asked.append(n)
            return ctx.input_required(ok=elicit(f"Go on with {n}?", CONFIRM))
        return f"{n}: {answer.content['ok']}"

    client_end, server_end = memory_pair()
    counting = Counting(server_end.receive, calls)
    watched = Transport(counting, server_end.send, server_end.max_message_bytes, server_end.context)

    async def answer(params: Any) -> dict[str, Any]:
        await counting.all_read.wait()  # every call is in: those past the bound wait for room
        return {"action": "accept", "content": {"ok": True}}

    results: dict[int, str] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(watched, max_in_flight=bound, max_backlog=calls - bound))
        async with Client(client_end, mode="handshake", inputs=InputHandlers(elicitation=answer)) as client:
            assert client.protocol_version == V25

            async def calling(n: int) -> None:
                result = await client.call_tool("confirm", {"n": n})
                results[n] = result.content[0].text  # type: ignore[union-attr]

            with anyio.fail_after(30):  # a hang guard: the deadlock never completes
                async with anyio.create_task_group() as calling_tg:
                    for n in range(calls):
                        calling_tg.start_soon(calling, n)
            session = next(iter(server.sessions))
            assert session.in_flight == 0 and session.backlog == 0
        tg.cancel_scope.cancel()
    assert results == {n: f"{n}: True" for n in range(calls)}
    assert sorted(asked) == list(range(calls))  # each asked once


async def test_a_call_past_the_backlog_is_refused_with_its_own_code_and_the_others_complete() -> None:
    """Past `max_in_flight` and `max_backlog` the call is refused at once, and the client raises
    it typed (`ServerOverloaded`, -31503, with both limits: told apart from a rate limit's
    `RateLimited`, -31429); the running and the waiting calls still complete."""
    server = Server("backlog", "1")
    go = anyio.Event()

    @server.tool()
    async def gated(n: int) -> int:
        await go.wait()
        return n

    client_end, server_end = memory_pair()
    outcomes: dict[int, Any] = {}
    refused = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(server_end, max_in_flight=1, max_backlog=1))
        async with Client(client_end, mode="handshake") as client:

            async def calling(n: int) -> None:
                try:
                    outcomes[n] = (await client.call_tool("gated", {"n": n})).structured_content
                except ServerOverloaded as exc:
                    outcomes[n] = exc
                    refused.set()

            with anyio.fail_after(30):  # a hang guard
                async with anyio.create_task_group() as calling_tg:
                    for n in range(3):
                        calling_tg.start_soon(calling, n)
                    await refused.wait()  # one running, one waiting, the third refused at once
                    go.set()
        tg.cancel_scope.cancel()
    errors = [outcome for outcome in outcomes.values() if isinstance(outcome, ServerOverloaded)]
    assert len(errors) == 1 and errors[0].code == SERVER_OVERLOADED == -31503
    assert errors[0].data == {"maxInFlight": 1, "maxBacklog": 1}
    served = {n: outcome for n, outcome in outcomes.items() if not isinstance(outcome, ServerOverloaded)}
    assert len(served) == 2 and all(outcome == {"result": n} for n, outcome in served.items())
