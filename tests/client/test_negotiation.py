"""Version negotiation, client and server side, on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    Client,
    ClientAdvertising,
    McpError,
    NegotiationError,
    RequestTimeout,
    Server,
    Timeouts,
    memory_pair,
)
from support.leaks import no_unclosed_streams
from support.peers import V25, V26, RawPeer, connected

pytestmark = pytest.mark.anyio


def make_server(**options: Any) -> Server:
    server = Server("neg", "2.0", instructions="be nice", **options)

    @server.tool()
    def hello() -> str:
        return "hi"

    return server


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("auto", V26), ("handshake", V25), (V26, V26), (V25, V25)],
)
async def test_modes_against_a_dual_era_server(mode: str, expected: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        assert client.protocol_version == expected
        result = await client.call_tool("hello")
        assert result.content[0].text == "hi"
        if mode == V26:  # a pin sends no negotiation traffic, so nothing is known about the server
            assert client.server_info is None and client.server_capabilities is None
        else:
            assert client.server_info == {"name": "neg", "version": "2.0"}
            assert client.server_capabilities is not None and "tools" in client.server_capabilities
            assert client.instructions == "be nice"


@pytest.mark.parametrize("mode", ["auto", "handshake", V26, V25])
async def test_ping_works_on_every_version(mode: str) -> None:
    """Defect: `client.ping()` raised CapabilityError after the default negotiation (the modern
    version has no `ping`); it checks liveness with what the negotiated version offers."""
    async with connected(make_server(), mode=mode) as client:
        await client.ping()
        await client.ping(timeout=5)


async def test_auto_falls_back_to_initialize_against_a_legacy_only_server() -> None:
    async with connected(make_server(versions=[V25]), mode="auto") as client:
        assert client.protocol_version == V25
        assert client.era == "handshake"


async def test_auto_uses_the_modern_server_directly() -> None:
    async with connected(make_server(versions=[V26]), mode="auto") as client:
        assert client.protocol_version == V26
        assert client.era == "modern"


async def test_legacy_mode_against_a_modern_only_server_fails_clearly() -> None:
    with pytest.raises(NegotiationError, match="Unsupported protocol version"):
        async with connected(make_server(versions=[V26]), mode="handshake"):
            pass


async def test_client_and_server_without_a_common_version() -> None:
    with pytest.raises(NegotiationError, match="Unsupported protocol version"):
        async with connected(make_server(versions=[V26]), mode="auto", versions=[V25]):
            pass


async def scripted_server(peer: RawPeer, script: dict[str, Any], seen: list[dict[str, Any]] | None = None) -> None:
    """Answer requests by method from `script` (a dict result, an error dict, or None for silence)."""
    seen = [] if seen is None else seen
    while True:
        try:
            message = await peer.receive(timeout=10)
        except (anyio.EndOfStream, anyio.ClosedResourceError, TimeoutError):
            return
        seen.append(message)
        if "id" not in message or "method" not in message:
            continue
        answer = script.get(message["method"])
        if answer is None:
            continue
        if callable(answer):
            answer = answer(message)
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
        await peer.send(reply)


def init_result(version: str) -> dict[str, Any]:
    return {"result": {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}


async def run_client(script: dict[str, Any], **options: Any) -> tuple[Any, list[dict[str, Any]]]:
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    seen: list[dict[str, Any]] = []
    outcome: Any = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted_server, peer, script, seen)
        try:
            async with Client(client_end, **options) as client:
                outcome = client.protocol_version
        except Exception as exc:
            outcome = exc
        tg.cancel_scope.cancel()
    return outcome, seen


@pytest.mark.parametrize(
    "refusal",
    [
        {"error": {"code": -32601, "message": "nope"}},
        {"error": {"code": -32602, "message": "init first"}},
        {"error": {"code": -32000, "message": "custom"}},
    ],
)
async def test_auto_falls_back_on_any_other_error(refusal: dict[str, Any]) -> None:
    version, seen = await run_client({"server/discover": refusal, "initialize": init_result(V25)}, mode="auto")
    assert version == V25
    methods = [m.get("method") for m in seen if m.get("method") != "ping"]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]


PONG = {"result": {}}


async def test_auto_falls_back_when_the_probe_gets_no_answer() -> None:
    """The server is up (it answers the liveness ping) but ignores the probe: after the probe
    timeout, counted from the ping's answer, the client falls back to initialize."""
    version, seen = await run_client(
        {"ping": PONG, "initialize": init_result(V25)}, mode="auto", timeouts=Timeouts(probe=0.2)
    )
    assert version == V25
    assert "notifications/cancelled" not in [m.get("method") for m in seen], (
        "no cancel is sent to a server before initialize"
    )


async def test_a_server_that_answers_nothing_until_the_startup_timeout_is_not_answering() -> None:
    """Nothing at all (not even the liveness ping) within the startup time: the connection fails
    with a timeout then, rather than waiting as long again for initialize."""
    outcome, seen = await run_client(
        {"initialize": init_result(V25)}, mode="auto", timeouts=Timeouts(probe=0.1, startup=0.5)
    )
    assert isinstance(outcome, RequestTimeout) and "answered nothing" in str(outcome)
    assert [m.get("method") for m in seen] == ["server/discover", "ping"]


async def test_a_late_discover_answer_is_adopted_after_the_fallback_was_sent() -> None:
    """A slow modern server: the probe clock ran out, initialize went out, and then the discover
    answer came (before initialize's): the client adopts the modern version."""
    release = anyio.Event()

    def discover(message: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"resultType": "complete", "supportedVersions": [V26], "capabilities": {}}}

    async def slow_server(peer: RawPeer, seen: list[dict[str, Any]]) -> None:
        held: dict[str, Any] | None = None
        while True:
            try:
                message = await peer.receive(timeout=10)
            except anyio.EndOfStream:
                return
            seen.append(message)
            if message.get("method") == "ping":
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            elif message.get("method") == "server/discover":
                held = message
            elif message.get("method") == "initialize":
                assert held is not None
                await peer.send({"jsonrpc": "2.0", "id": held["id"], **discover(held)})
                release.set()

    client_end, server_end = memory_pair()
    seen: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(slow_server, RawPeer(server_end), seen)
        async with Client(client_end, mode="auto", timeouts=Timeouts(probe=0.2)) as client:
            assert client.protocol_version == V26
            assert client.era == "modern"
        tg.cancel_scope.cancel()
    assert release.is_set()
    assert "notifications/initialized" not in [m.get("method") for m in seen]


async def test_auto_falls_back_when_discover_result_is_not_modern() -> None:
    version, _ = await run_client({"server/discover": {"result": {}}, "initialize": init_result(V25)}, mode="auto")
    assert version == V25


async def test_auto_switches_to_initialize_when_32022_lists_only_a_legacy_version() -> None:
    refusal = {"error": {"code": -32022, "message": "Unsupported", "data": {"supported": [V25], "requested": V26}}}
    version, seen = await run_client({"server/discover": refusal, "initialize": init_result(V25)}, mode="auto")
    assert version == V25
    assert [m.get("method") for m in seen if m.get("method") != "ping"][:2] == ["server/discover", "initialize"]


async def test_auto_does_not_fall_back_when_32022_lists_nothing_in_common() -> None:
    refusal = {
        "error": {"code": -32022, "message": "Unsupported", "data": {"supported": ["2030-01-01"], "requested": V26}}
    }
    outcome, seen = await run_client({"server/discover": refusal, "initialize": init_result(V25)}, mode="auto")
    assert isinstance(outcome, NegotiationError)
    assert "initialize" not in [m.get("method") for m in seen], "a recognised modern error never falls back"


async def test_legacy_accepts_a_supported_counter_offer_only() -> None:
    version, _ = await run_client({"initialize": init_result(V25)}, mode="handshake")
    assert version == V25
    outcome, seen = await run_client({"initialize": init_result("2024-11-05")}, mode="handshake")
    assert isinstance(outcome, NegotiationError)
    assert "2024-11-05" in str(outcome)
    assert "notifications/initialized" not in [m.get("method") for m in seen]


async def test_pinned_modern_version_sends_nothing_before_the_first_call() -> None:
    version, seen = await run_client({}, mode=V26)
    assert version == V26
    assert seen == []


LISTED = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}


async def test_a_modern_pin_waits_out_the_servers_start_on_its_first_call() -> None:
    """Defect: a modern pin sends nothing to connect, so its first call carried the server's whole
    start (a spawned interpreter's imports: seconds on a loaded box) on the request timeout alone,
    and a server that was merely slow to start failed with RequestTimeout. Until the server has
    answered anything, a call may take until the start-up deadline (`Timeouts.startup` from
    connecting); once it has, a call gets the request timeout again."""
    request = 0.2
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)

    async def starting_server() -> None:
        first = await peer.receive(timeout=10)
        await anyio.sleep(3 * request)  # the slow start: silent for longer than a request may take
        await peer.send({"jsonrpc": "2.0", "id": first["id"], "result": LISTED})
        await anyio.sleep_forever()  # up, and answering nothing more: the next call times out

    async with anyio.create_task_group() as tg:
        tg.start_soon(starting_server)
        async with Client(client_end, mode=V26, timeouts=Timeouts(request=request, startup=30)) as client:
            assert (await client.list_tools()).tools == []
            asked = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await client.list_tools()
            assert anyio.current_time() - asked < 10, "past the first answer the start-up deadline no longer applies"
        tg.cancel_scope.cancel()


async def test_the_start_up_window_leaves_explicit_timeouts_alone_and_closes_on_an_error() -> None:
    """A call's own timeout is not stretched while the server starts; an error answer says the
    server is up as much as a result does (later calls get the request timeout)."""
    request = 0.2
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)

    async def server() -> None:
        await peer.receive(timeout=10)  # the call with its own timeout: never answered
        second = await peer.receive(timeout=10)
        await peer.send({"jsonrpc": "2.0", "id": second["id"], "error": {"code": -32603, "message": "boom"}})
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        async with Client(client_end, mode=V26, timeouts=Timeouts(request=request, startup=30)) as client:
            asked = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await client.request("tools/list", timeout=request)
            assert anyio.current_time() - asked < 10, "an explicit timeout is the call's own"
            with pytest.raises(McpError):
                await client.list_tools()
            asked = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await client.list_tools()
            assert anyio.current_time() - asked < 10, "after an error answer the start-up deadline no longer applies"
        tg.cancel_scope.cancel()


async def test_modern_requests_carry_the_per_request_meta() -> None:
    captured: list[dict[str, Any]] = []

    def tools(message: dict[str, Any]) -> dict[str, Any]:
        captured.append(message)
        return {"result": {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}}

    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted_server, peer, {"tools/list": tools})
        async with Client(
            client_end,
            mode=V26,
            advertising=ClientAdvertising(info={"name": "me", "version": "9"}, log_level="warning"),
        ) as client:
            await client.list_tools()
        tg.cancel_scope.cancel()
    meta = captured[0]["params"]["_meta"]
    assert meta == {
        "io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "me", "version": "9"},
        "io.modelcontextprotocol/logLevel": "warning",
    }


async def test_absent_result_type_counts_as_complete_and_unknown_is_invalid() -> None:
    from mcpgen.runtime import ProtocolError

    replies = {
        "tools/call": lambda m: {"result": {"content": [{"type": "text", "text": "old server"}]}},
        "prompts/get": lambda m: {"result": {"resultType": "task", "messages": []}},
    }
    client_end, server_end = memory_pair()
    peer = RawPeer(server_end)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scripted_server, peer, replies)
        async with Client(client_end, mode=V26) as client:
            result = await client.call_tool("x")
            assert result.result_type == "complete" and result.content[0].text == "old server"
            with pytest.raises(ProtocolError, match="invalid prompts/get result"):
                await client.get_prompt("p")
        tg.cancel_scope.cancel()


# -- every mix of silence, errors and garbage ends in a typed error within the timeouts -------------------

STATES = ("silent", "error", "junk", "unreadable", "valid")
VALID = {
    "server/discover": {"resultType": "complete", "supportedVersions": [V26], "capabilities": {}},
    "ping": {},
    "initialize": init_result(V25)["result"],
}


async def answer_as(peer: RawPeer, message: dict[str, Any], state: str) -> None:
    """Answer one request the way `state` says: nothing, a JSON-RPC error, a line that is not JSON
    then a result of the wrong shape, a response that is not valid JSON, or the right result."""
    rid = message["id"]
    if state == "error":
        await peer.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    elif state == "junk":
        await peer.send_raw(b"this is not JSON")
        await peer.send({"jsonrpc": "2.0", "id": rid, "result": [1, "two"]})
    elif state == "unreadable":
        await peer.send_raw(b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode() + b', "result": {"x": NaN}}')
    elif state == "valid":
        await peer.send({"jsonrpc": "2.0", "id": rid, "result": VALID[message["method"]]})


def expected(discover: str, ping: str, initialize: str) -> type[BaseException] | str:
    if discover == "valid":
        return V26
    if discover == "silent" and ping == "silent":
        return RequestTimeout  # nothing at all within the startup time: initialize is never sent
    if initialize == "valid":
        return V25
    return RequestTimeout if initialize == "silent" else NegotiationError


@pytest.mark.parametrize("initialize", STATES)
@pytest.mark.parametrize("ping", STATES)
@pytest.mark.parametrize("discover", STATES)
async def test_every_answer_to_the_probe_and_the_handshake_ends_in_a_typed_error(
    discover: str, ping: str, initialize: str
) -> None:
    """Defect: a server that never answered server/discover, answered ping and refused initialize
    left the client waiting for ever (probe 0.3 s, request 0.6 s: still waiting after 20 s)."""
    states = {"server/discover": discover, "ping": ping, "initialize": initialize}
    want = expected(discover, ping, initialize)
    # Where the outcome comes from silence, the short timeouts of the report; where it needs an answer
    # after a timed step, a deadline no loaded machine reaches (the peer answers at once).
    waits_out = want is RequestTimeout
    timeouts = Timeouts(probe=0.3, request=0.6) if waits_out else Timeouts(probe=0.3, request=30)

    async def peer_side(peer: RawPeer) -> None:
        while True:
            try:
                message = await peer.receive(timeout=60)
            except (anyio.EndOfStream, anyio.ClosedResourceError, TimeoutError):
                return
            if "id" in message and message.get("method") in states:
                await answer_as(peer, message, states[message["method"]])

    client_end, server_end = memory_pair()
    outcome: Any = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer_side, RawPeer(server_end))
        with anyio.fail_after(60):  # a hang guard only
            try:
                async with Client(client_end, mode="auto", timeouts=timeouts) as client:
                    outcome = client.protocol_version
            except Exception as exc:
                outcome = exc
        tg.cancel_scope.cancel()
    if isinstance(want, str):
        assert outcome == want
    else:
        assert type(outcome) is want, outcome


async def test_the_reported_hang_ends_within_the_configured_timeouts() -> None:
    """The report's own case and numbers: discover unanswered, ping answered, initialize refused."""
    outcome, seen = await run_client(
        {"ping": PONG, "initialize": {"error": {"code": -32603, "message": "no"}}},
        mode="auto",
        timeouts=Timeouts(probe=0.3, request=0.6),
    )
    assert isinstance(outcome, (NegotiationError, RequestTimeout)), outcome  # a typed error, not a hang
    assert "initialize" in [m.get("method") for m in seen]


async def test_negotiating_leaves_no_stream_unclosed() -> None:
    """Defect: the probe's event stream was left to the garbage collector, unclosed (anyio's
    ResourceWarning, seen in a later test), once per connection."""
    with no_unclosed_streams():
        async with connected(make_server(), mode="auto") as client:  # (the probe: a pin or "handshake" sends none)
            await client.ping()
