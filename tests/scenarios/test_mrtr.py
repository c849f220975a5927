"""Multi-round-trip requests, the legacy shim and the client features, on asyncio and trio.

One test (or more) per MUST / MUST NOT of the MRTR flow (the spec repository's
docs/specification/2026-07-28/basic/patterns/mrtr.mdx, "Server Requirements" and "Client
Requirements") and of the rule for capabilities a request needs but the client did not declare
(docs/specification/2026-07-28/basic/index.mdx: the server answers -32021,
MissingRequiredClientCapabilityError), on both sides.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientAdvertising,
    ClientChecks,
    InputHandlers,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingClientCapability,
    RequestContext,
    Sealing,
    Server,
    ServerLimits,
    memory_pair,
)
from mcpgen.runtime.protocol.errors import ElicitationError, InputRoundsExceeded, InternalError, MissingInputHandler
from mcpgen.runtime.protocol.input_requests import (
    InputRequired,
    StateSealer,
    apply_elicitation,
    check_elicitation_schema,
    elicit,
    elicit_url,
    list_roots,
    sample,
)
from support.peers import V25, V26, RawPeer, connected, meta, raw_server

pytestmark = pytest.mark.anyio
CONFIRM = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "note": {"type": "string", "default": "-"}},
    "required": ["ok"],
}


def make_server(**options: Any) -> Server:
    server = Server("mrtr", **options)

    @server.tool()
    async def confirm(ctx: RequestContext, item: str) -> str:
        answer = ctx.input_response("ok")
        if answer is None:
            return ctx.input_required(ok=elicit(f"Delete {item}?", CONFIRM), state={"item": item})
        if answer.action != "accept":
            return f"kept {item} ({answer.action})"
        return f"deleted {ctx.state['item'] if ctx.modern else item} (note {answer.content['note']})"

    @server.tool()
    async def everything(ctx: RequestContext) -> dict[str, Any]:
        if not ctx.input_responses:
            return ctx.input_required(llm=sample(["hi"], 5), where=list_roots(), sure=elicit("Sure?", CONFIRM))
        return {
            "llm": ctx.input_response("llm").content.text,
            "roots": [r.uri for r in ctx.input_response("where").roots],
            "sure": ctx.input_response("sure").action,
        }

    @server.tool()
    async def open_url(ctx: RequestContext) -> str:
        if ctx.input_response("login") is None:
            return ctx.input_required(login=elicit_url("Log in please", "https://example.com/login"))
        return ctx.input_response("login").action

    @server.tool()
    async def busy(ctx: RequestContext) -> str:
        """Sheds load once: a state-only round."""
        if ctx.state is None and ctx.modern:
            return ctx.input_required(state={"try": 2})
        return "served"

    @server.tool()
    async def insatiable(ctx: RequestContext) -> str:
        return ctx.input_required(again=elicit("Again?", CONFIRM))

    @server.tool()
    async def tool_sampling(ctx: RequestContext) -> str:
        if ctx.input_response("llm") is None:
            return ctx.input_required(llm=sample(["x"], 5, tools=[{"name": "t", "inputSchema": {"type": "object"}}]))
        return "ok"

    @server.method("prompts/list")
    async def not_mrtr(ctx: RequestContext, params: Any) -> Any:
        return ctx.input_required(ok=elicit("?", CONFIRM))

    @server.prompt()
    async def guided(ctx: RequestContext) -> str:
        if ctx.input_response("topic") is None:
            return ctx.input_required(
                topic=elicit("Topic?", {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]})
            )
        return f"Write about {ctx.input_response('topic').content['t']}"

    @server.resource("mem://secret")
    async def secret(ctx: RequestContext) -> str:
        if ctx.input_response("ok") is None:
            return ctx.input_required(ok=elicit("Reveal?", CONFIRM))
        return "the secret"

    return server


def accept(content: dict[str, Any] | None = None) -> Any:
    async def handler(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": content if content is not None else {"ok": True}}

    return handler


async def sampling(params: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "fake"}


FULL_INPUTS = {"elicitation": accept(), "sampling": sampling, "roots": ["file:///work"]}
FULL = {"inputs": InputHandlers(**FULL_INPUTS)}
MODES = ["handshake", V26]


# -- the same handler serves both eras -------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_one_handler_both_eras(mode: str) -> None:
    async with connected(make_server(), mode=mode, **FULL) as client:
        assert (await client.call_tool("confirm", {"item": "a.txt"})).content[0].text == "deleted a.txt (note -)"
        result = await client.call_tool("everything")
        assert result.structured_content == {"llm": "sampled", "roots": ["file:///work"], "sure": "accept"}


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_and_resources_ask_for_input_too(mode: str) -> None:
    answers = InputHandlers(elicitation=accept({"t": "tea", "ok": True}))
    async with connected(make_server(), mode=mode, inputs=answers) as client:
        prompt = await client.get_prompt("guided")
        assert prompt.messages[0].content.text == "Write about tea"
        contents = await client.read_resource("mem://secret")
        assert contents.contents[0].text == "the secret"


@pytest.mark.parametrize("mode", MODES)
async def test_decline_reaches_the_handler(mode: str) -> None:
    async def decline(params: Any) -> dict[str, Any]:
        return {"action": "decline"}

    async with connected(make_server(), mode=mode, inputs=InputHandlers(elicitation=decline)) as client:
        assert (await client.call_tool("confirm", {"item": "b"})).content[0].text == "kept b (decline)"


@pytest.mark.parametrize("mode", MODES)
async def test_input_requests_are_answered_concurrently(mode: str) -> None:
    both = anyio.Event()
    started: list[str] = []

    async def waiting(kind: str) -> None:
        started.append(kind)
        if len(started) == 2:
            both.set()
        with anyio.fail_after(2):  # each handler waits for the other: only concurrency gets past this
            await both.wait()

    async def slow_sampling(params: Any) -> dict[str, Any]:
        await waiting("sampling")
        return await sampling(params)

    async def slow_elicit(params: Any) -> dict[str, Any]:
        await waiting("elicitation")
        return {"action": "accept", "content": {"ok": True}}

    async with connected(
        make_server(), mode=mode, inputs=InputHandlers(sampling=slow_sampling, elicitation=slow_elicit, roots=[])
    ) as client:
        result = await client.call_tool("everything")
        assert result.structured_content["sure"] == "accept"


# -- client MUSTs of the MRTR flow (mrtr.mdx, "Client Requirements") ----------------------------


async def scripted(peer: RawPeer, replies: list[dict[str, Any]], seen: list[dict[str, Any]]) -> None:
    """A fake modern server: answers each request with the next reply."""
    for reply in replies:
        try:
            message = await peer.receive(timeout=5)
        except anyio.EndOfStream:  # the client closed the connection
            return
        seen.append(message)
        await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": reply})


def input_required(**fields: Any) -> dict[str, Any]:
    return {"resultType": "input_required", **fields}


DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}
ASK = {"confirm": {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": CONFIRM}}}


async def drive(
    replies: list[dict[str, Any]],
    arguments: dict[str, Any] | None = None,
    inputs: InputHandlers | None = None,
    **options: Any,
) -> tuple[Any, list[dict[str, Any]]]:
    client_end, server_end = memory_pair()
    seen: list[dict[str, Any]] = []
    outcome: Any = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted, RawPeer(server_end), replies, seen)
        inputs = inputs or InputHandlers(elicitation=accept())
        async with Client(client_end, mode=V26, inputs=inputs, **options) as client:
            try:
                outcome = await client.call_tool("t", arguments)
            except Exception as exc:
                outcome = exc
        tg.cancel_scope.cancel()
    return outcome, seen


async def test_client_echoes_request_state_exactly_and_uses_a_new_id() -> None:
    state = 'opaque "state" with unicode ✓ and \\ slashes'
    arguments = {"path": "/x", "nested": {"n": [1, 2]}}
    before = json.dumps(arguments)
    outcome, seen = await drive([input_required(inputRequests=ASK, requestState=state), DONE], arguments)
    assert outcome.content[0].text == "done"
    assert json.dumps(arguments) == before, "the caller's params are never mutated"
    first, retry = seen
    assert first["id"] != retry["id"]
    assert retry["method"] == first["method"] == "tools/call"
    assert retry["params"]["requestState"] == state
    assert retry["params"]["arguments"] == first["params"]["arguments"] == arguments
    assert retry["params"]["name"] == "t"
    assert retry["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"ok": True, "note": "-"}}}
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]


async def test_client_sends_no_state_when_none_was_given() -> None:
    outcome, seen = await drive([input_required(inputRequests=ASK), DONE])
    assert outcome.content[0].text == "done"
    assert "requestState" not in seen[1]["params"]
    assert set(seen[1]["params"]["inputResponses"]) == {"confirm"}


async def test_state_only_round_is_retried_after_a_pause() -> None:
    outcome, seen = await drive(
        [input_required(requestState="later"), DONE], inputs=InputHandlers(elicitation=accept(), state_only_pause=0.05)
    )
    assert outcome.content[0].text == "done"
    assert seen[1]["params"]["requestState"] == "later"
    assert "inputResponses" not in seen[1]["params"]


async def test_round_limit_is_a_typed_error() -> None:
    replies = [input_required(inputRequests=ASK, requestState=str(i)) for i in range(4)]
    outcome, seen = await drive(replies, checks=ClientChecks(max_input_rounds=3))
    assert isinstance(outcome, InputRoundsExceeded)
    assert len(seen) == 4


async def test_a_kind_without_handler_is_a_typed_error_and_nothing_is_retried() -> None:
    ask = {"llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}
    outcome, seen = await drive(
        [input_required(inputRequests=ask), DONE], advertising=ClientAdvertising(capabilities={"sampling": {}})
    )
    assert isinstance(outcome, MissingInputHandler)
    assert len(seen) == 1


async def test_an_undeclared_kind_is_refused() -> None:
    ask = {"llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}
    outcome, seen = await drive([input_required(inputRequests=ask), DONE])
    assert "did not declare" in str(outcome)
    assert len(seen) == 1


async def test_a_handler_that_raises_stops_the_call() -> None:
    async def broken(params: Any) -> dict[str, Any]:
        raise RuntimeError("no user here")

    outcome, seen = await drive([input_required(inputRequests=ASK), DONE], inputs=InputHandlers(elicitation=broken))
    assert isinstance(outcome, RuntimeError) and "no user here" in str(outcome)
    assert len(seen) == 1


async def test_disabled_driver_returns_the_input_required_result_and_retry_helper() -> None:
    client_end, server_end = memory_pair()
    seen: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted, RawPeer(server_end), [input_required(inputRequests=ASK, requestState="s1"), DONE], seen)
        async with Client(client_end, mode=V26, inputs=InputHandlers(drive=False)) as client:
            pending = await client.call_tool("t", {"a": 1}, resolve_input=False)
            assert pending.result_type == "input_required"
            assert set(pending.input_requests) == {"confirm"}
            done = await client.retry(
                "tools/call", {"name": "t", "arguments": {"a": 1}}, pending, {"confirm": {"action": "cancel"}}
            )
            assert done.content[0].text == "done"
        tg.cancel_scope.cancel()
    assert seen[1]["params"]["inputResponses"] == {"confirm": {"action": "cancel"}}
    assert seen[1]["params"]["requestState"] == "s1"


async def test_parallel_calls_keep_their_own_state() -> None:
    server = make_server()
    async with connected(server, mode=V26, inputs=InputHandlers(elicitation=accept())) as client:
        async with anyio.create_task_group() as tg:
            results: dict[str, str] = {}

            async def one(item: str) -> None:
                results[item] = (await client.call_tool("confirm", {"item": item})).content[0].text

            for item in ("a", "b", "c"):
                tg.start_soon(one, item)
        assert results == {i: f"deleted {i} (note -)" for i in ("a", "b", "c")}


# -- server MUSTs: MRTR flow and state (mrtr.mdx, "Server Requirements"), missing capabilities ----


async def test_input_required_result_on_the_wire() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(
            1, "tools/call", {"_meta": meta(caps={"elicitation": {}}), "name": "confirm", "arguments": {"item": "z"}}
        )
        result = reply["result"]
        assert result["resultType"] == "input_required"
        assert result["inputRequests"]["ok"]["method"] == "elicitation/create"
        assert isinstance(result["requestState"], str)
        assert "ttlMs" not in result and "cacheScope" not in result, "input_required results carry no caching hints"


@pytest.mark.parametrize(
    ("tool", "caps", "missing"),
    [
        ("confirm", {}, {"elicitation": {"form": {}}}),
        ("open_url", {"elicitation": {}}, {"elicitation": {"url": {}}}),
        ("open_url", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
        ("everything", {"elicitation": {}}, {"sampling": {}, "roots": {}}),
        ("tool_sampling", {"sampling": {}}, {"sampling": {"tools": {}}}),
    ],
)
async def test_server_never_asks_for_undeclared_input(tool: str, caps: dict[str, Any], missing: dict[str, Any]) -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(
            1, "tools/call", {"_meta": meta(caps=caps), "name": tool, "arguments": {"item": "x"}}
        )
        assert reply["error"]["code"] == -32021
        assert reply["error"]["data"] == {"requiredCapabilities": missing}


async def test_client_sees_missing_capability_as_typed_error() -> None:
    async with connected(make_server(), mode=V26) as client:
        with pytest.raises(MissingClientCapability) as err:
            await client.call_tool("confirm", {"item": "q"})
        assert err.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_only_mrtr_methods_may_ask_for_input() -> None:
    async with raw_server(make_server()) as peer:
        reply = await peer.request(1, "prompts/list", {"_meta": meta(caps={"elicitation": {}})})
        assert reply["error"]["code"] == -32603
        assert "inputRequests" not in json.dumps(reply)


async def test_bad_input_request_kinds_are_server_bugs_never_sent() -> None:
    server = make_server()

    @server.tool()
    async def bogus(ctx: RequestContext) -> Any:
        return InputRequired({"x": {"method": "tools/call", "params": {}}})

    async with raw_server(server) as peer:
        reply = await peer.request(1, "tools/call", {"_meta": meta(), "name": "bogus"})
        assert reply["error"]["code"] == -32603


def tamper(token: str) -> str:
    version, payload, mac = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["b"]["s"] = {"item": "/etc/passwd"}
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{version}.{forged}.{mac}"


async def first_round(peer: RawPeer, item: str = "a") -> dict[str, Any]:
    reply = await peer.request(
        1, "tools/call", {"_meta": meta(caps={"elicitation": {}}), "name": "confirm", "arguments": {"item": item}}
    )
    return dict(reply["result"])


def retry_params(state: str, item: str = "a", name: str = "confirm") -> dict[str, Any]:
    return {
        "_meta": meta(caps={"elicitation": {}}),
        "name": name,
        "arguments": {"item": item},
        "inputResponses": {"ok": {"action": "accept", "content": {"ok": True}}},
        "requestState": state,
    }


async def test_sealed_state_round_trips() -> None:
    async with raw_server(make_server()) as peer:
        state = (await first_round(peer))["requestState"]
        reply = await peer.request(2, "tools/call", retry_params(state))
        assert reply["result"]["content"][0]["text"] == "deleted a (note -)"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (tamper, "modified"),
        (lambda s: s[:-1] + ("B" if s.endswith("A") else "A"), "modified"),
        (lambda s: "garbage", "not a state this server issued"),
    ],
)
async def test_tampered_state_is_refused(change: Any, message: str) -> None:
    async with raw_server(make_server()) as peer:
        state = (await first_round(peer))["requestState"]
        reply = await peer.request(2, "tools/call", retry_params(change(state)))
        assert reply["error"]["code"] == -32602
        assert message in reply["error"]["message"]


async def test_state_replayed_for_another_call_is_refused() -> None:
    async with raw_server(make_server()) as peer:
        state = (await first_round(peer, item="a"))["requestState"]
        other_params = await peer.request(2, "tools/call", retry_params(state, item="b"))
        assert other_params["error"]["code"] == -32602 and "another call" in other_params["error"]["message"]
        other_method = await peer.request(3, "tools/call", retry_params(state, name="open_url"))
        assert other_method["error"]["code"] == -32602


async def test_expired_state_is_refused() -> None:
    async with raw_server(make_server(sealing=Sealing(ttl_seconds=-1))) as peer:
        state = (await first_round(peer))["requestState"]
        reply = await peer.request(2, "tools/call", retry_params(state))
        assert reply["error"]["code"] == -32602 and "expired" in reply["error"]["message"]


async def test_unsealed_state_opt_out() -> None:
    sealer = StateSealer(sealed=False)
    token = sealer.seal({"s": 1}, "tools/call", {"name": "x"})
    assert token.count(".") == 1
    assert sealer.open(token, "tools/call", {"name": "x"}) == {"s": 1}
    with pytest.raises(InvalidParams):
        sealer.open(token, "tools/call", {"name": "y"})


async def test_malformed_input_responses_are_invalid_params() -> None:
    async with raw_server(make_server()) as peer:
        state = (await first_round(peer))["requestState"]
        params = retry_params(state)
        params["inputResponses"] = {"ok": {"action": "maybe"}}
        reply = await peer.request(2, "tools/call", params)
        assert reply["error"]["code"] == -32602
        params["inputResponses"] = {"ok": {"action": "accept", "content": {"note": "no ok"}}}
        reply = await peer.request(3, "tools/call", params)
        assert reply["error"]["code"] == -32602 and "ok: required" in reply["error"]["message"]
        params = retry_params(state)
        params["inputResponses"]["unasked"] = {"roots": []}  # a well-formed answer to nothing asked is ignored
        reply = await peer.request(4, "tools/call", params)
        assert "result" in reply


async def test_missing_answers_get_a_new_input_required_result() -> None:
    async with raw_server(make_server()) as peer:
        state = (await first_round(peer))["requestState"]
        params = retry_params(state)
        params["inputResponses"] = {}
        reply = await peer.request(2, "tools/call", params)
        assert reply["result"]["resultType"] == "input_required"


async def test_server_keeps_nothing_between_rounds() -> None:
    server = make_server()
    async with raw_server(server) as peer:
        await first_round(peer)
        session = next(iter(server.sessions))
        assert session.in_flight == 0 and session.pending == 0
        assert (await peer.request(5, "tools/call", {"_meta": meta(), "name": "busy"}))["result"][
            "resultType"
        ] == "input_required"


@pytest.mark.parametrize("mode", MODES)
async def test_state_only_round_end_to_end(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        assert (await client.call_tool("busy")).content[0].text == "served"


@pytest.mark.parametrize("mode", MODES)
async def test_server_round_limit(mode: str) -> None:
    async with connected(
        make_server(limits=ServerLimits(max_input_rounds=2)),
        mode=mode,
        inputs=InputHandlers(elicitation=accept()),
        checks=ClientChecks(max_input_rounds=3),
    ) as client:
        with pytest.raises((InternalError, InputRoundsExceeded)):
            await client.call_tool("insatiable")


# -- the legacy shim ----------------------------------------------------------------------------


async def test_legacy_shim_sends_server_to_client_requests_concurrently() -> None:
    async with raw_server(make_server()) as peer:
        await peer.request(
            0,
            "initialize",
            {
                "protocolVersion": V25,
                "capabilities": {"sampling": {}, "roots": {}, "elicitation": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "everything"}})
        asked = [await peer.receive() for _ in range(3)]
        assert sorted(m["method"] for m in asked) == ["elicitation/create", "roots/list", "sampling/createMessage"]
        answers = {
            "elicitation/create": {"action": "accept", "content": {"ok": True}},
            "roots/list": {"roots": [{"uri": "file:///r"}]},
            "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"},
        }
        for message in reversed(asked):
            await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": answers[message["method"]]})
        final = await peer.receive()
        assert final["id"] == 1
        assert final["result"]["structuredContent"] == {"llm": "s", "roots": ["file:///r"], "sure": "accept"}


async def test_legacy_shim_adds_an_elicitation_id_for_url_mode() -> None:
    async with raw_server(make_server()) as peer:
        await peer.request(
            0,
            "initialize",
            {
                "protocolVersion": V25,
                "capabilities": {"elicitation": {"url": {}}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "open_url"}})
        asked = await peer.receive()
        assert asked["params"]["mode"] == "url" and asked["params"]["elicitationId"]
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
        assert (await peer.receive())["result"]["content"][0]["text"] == "accept"


async def test_legacy_client_errors_reach_the_original_caller() -> None:
    async with raw_server(make_server()) as peer:
        await peer.request(
            0,
            "initialize",
            {
                "protocolVersion": V25,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "confirm", "arguments": {"item": "x"}},
            }
        )
        asked = await peer.receive()
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "user rejected"}})
        reply = await peer.receive()
        assert reply["id"] == 1 and reply["error"]["code"] == -1


# -- client features (roots, sampling, elicitation, extensions) -------------------------------------


async def test_capabilities_inferred_from_handlers_and_explicit_wins() -> None:
    client = Client(
        memory_pair()[0], inputs=InputHandlers(**FULL_INPUTS, elicitation_modes=("form", "url"), sampling_tools=True)
    )
    assert client.capabilities(V25) == {
        "roots": {"listChanged": True},
        "sampling": {"tools": {}},
        "elicitation": {"form": {}, "url": {}},
    }
    assert client.capabilities(V26)["roots"] == {}, "roots.listChanged exists only where the notification does"
    assert Client(memory_pair()[0], **FULL, advertising=ClientAdvertising(capabilities={})).capabilities(V25) == {}
    assert Client(memory_pair()[0], advertising=ClientAdvertising(capabilities={"roots": {}})).capabilities(V26) == {
        "roots": {}
    }


async def test_extensions_are_off_unless_configured_and_only_where_the_schema_has_them() -> None:
    assert "extensions" not in Client(memory_pair()[0]).capabilities(V26)
    client = Client(memory_pair()[0], advertising=ClientAdvertising(extensions={"com.example/thing": {"level": 2}}))
    assert client.capabilities(V26)["extensions"] == {"com.example/thing": {"level": 2}}
    assert "extensions" not in client.capabilities(V25)
    server = Server("ext")
    assert "extensions" not in server.capabilities(V26)
    server.enable_extension("com.example/thing")
    assert server.capabilities(V26)["extensions"] == {"com.example/thing": {}}
    assert "extensions" not in server.capabilities(V25)


async def test_roots_changes_notify_legacy_servers_that_were_told() -> None:
    server = make_server()
    heard = anyio.Event()
    server.on_roots_changed = lambda session: heard.set()
    async with connected(server, mode="handshake", inputs=InputHandlers(roots=["file:///a"])) as client:
        await client.add_roots({"uri": "file:///b", "name": "b"})
        with anyio.fail_after(2):
            await heard.wait()
        result = await next(iter(server.sessions)).send_request("roots/list", None, timeout=2)
        assert [r["uri"] for r in result["roots"]] == ["file:///a", "file:///b"]
        await client.remove_roots("file:///a")
        result = await next(iter(server.sessions)).send_request("roots/list", None, timeout=2)
        assert [r["uri"] for r in result["roots"]] == ["file:///b"]


async def test_legacy_client_refuses_roots_it_does_not_have() -> None:
    server = make_server()
    async with connected(server, mode="handshake"):
        with pytest.raises(MethodNotFound):
            await next(iter(server.sessions)).send_request("roots/list", None, timeout=2)


async def test_legacy_client_refuses_an_undeclared_elicitation_mode() -> None:
    server = make_server()
    async with connected(server, mode="handshake", inputs=InputHandlers(elicitation=accept())):
        params = {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}
        with pytest.raises(InvalidParams, match="url"):
            await next(iter(server.sessions)).send_request("elicitation/create", params, timeout=2)


async def test_legacy_client_refuses_tool_sampling_without_the_capability() -> None:
    server = make_server()
    async with connected(server, mode="handshake", inputs=InputHandlers(sampling=sampling)):
        params = {"messages": [], "maxTokens": 5, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
        with pytest.raises(McpError) as err:
            await next(iter(server.sessions)).send_request("sampling/createMessage", params, timeout=2)
        assert err.value.code in (-32602, -32601)


@pytest.mark.parametrize("mode", MODES)
async def test_url_mode_never_carries_form_data(mode: str) -> None:
    async def leaky(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"password": "hunter2"}}

    async with connected(
        make_server(), mode=mode, inputs=InputHandlers(elicitation=leaky, elicitation_modes=("url",))
    ) as client:
        with pytest.raises((ElicitationError, McpError)):
            await client.call_tool("open_url")


@pytest.mark.parametrize("mode", MODES)
async def test_required_field_with_default_left_empty_is_refused(mode: str) -> None:
    schema_with_default = {
        "type": "object",
        "properties": {"ok": {"type": "boolean", "default": True}},
        "required": ["ok"],
    }
    server = make_server()

    @server.tool()
    async def strict(ctx: RequestContext) -> str:
        if ctx.input_response("q") is None:
            return ctx.input_required(q=elicit("?", schema_with_default))
        return "accepted"

    async with connected(server, mode=mode, inputs=InputHandlers(elicitation=accept({}))) as client:
        with pytest.raises((ElicitationError, McpError), match="ok: required"):
            await client.call_tool("strict")


# -- elicitation rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}, "primitive"),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
            "enum is only allowed on strings",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "y"], "enumNames": ["X"]}}},
            "one to one",
        ),
        ({"type": "array"}, "object schema"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "not in properties"),
    ],
)
def test_elicitation_schemas_are_flat_and_primitive(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_elicitation_schema(schema)
    with pytest.raises(ValueError):
        elicit("?", schema)


def test_elicitation_schema_from_a_pydantic_model() -> None:
    from pydantic import BaseModel, Field

    class Booking(BaseModel):
        nights: int = Field(ge=1)
        breakfast: bool = False
        note: str | None = None

    request = elicit("Book?", Booking)
    schema = request["params"]["requestedSchema"]
    assert schema["required"] == ["nights"]
    assert schema["properties"]["breakfast"] == {"default": False, "title": "Breakfast", "type": "boolean"}
    assert schema["properties"]["note"]["type"] == "string"


def test_defaults_fill_after_validation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1},
            "colour": {"type": "string", "enum": ["red", "blue"], "default": "red"},
        },
        "required": ["n"],
    }
    assert apply_elicitation(schema, {"n": 2}) == {"n": 2, "colour": "red"}
    assert apply_elicitation(schema, {"n": 2, "colour": "blue"}) == {"n": 2, "colour": "blue"}
    for bad in ({}, {"n": 0}, {"n": "2"}, {"n": 2, "colour": "green"}):
        with pytest.raises(ValueError):
            apply_elicitation(schema, bad)
