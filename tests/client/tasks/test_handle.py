"""The client's side of tasks, in both eras: opting in with `ClientAdvertising(tasks=True)`, `call_tool` waiting as
if the call were synchronous, the `ToolTask` handle (status, result, input through the client's
handlers, cancel), listening for status notifications instead of polling, and what a call that
times out or is cancelled does to its task."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcpgen.runtime import (
    CapabilityError,
    ClientAdvertising,
    InputError,
    InputHandlers,
    McpError,
    MethodNotFound,
    MissingClientCapability,
    RequestTimeout,
)
from mcpgen.runtime.client.tasks import TaskCancelled, TaskState, ToolTask
from support.peers import connected
from support.tasks_server import make_server

pytestmark = pytest.mark.anyio
MODES = ("auto", "handshake")


class Asker:
    """An elicitation handler that records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, params: Any) -> dict[str, Any]:
        self.asked.append(params.message)
        return {"action": "accept", "content": {"ok": True, "name": params.message.rstrip("?")}}


def inputs(asker: Asker, **more: Any) -> InputHandlers:
    return InputHandlers(elicitation=asker, **more)


@pytest.mark.parametrize("mode", MODES)
async def test_call_tool_waits_for_a_task_as_if_it_were_synchronous(mode: str) -> None:
    server, gates = make_server()
    asker = Asker()
    async with connected(server, mode=mode, inputs=inputs(asker), advertising=ClientAdvertising(tasks=True)) as client:
        gates.event("w").set()
        result = await client.call_tool("gated", {"label": "w"})
        assert result.content[0].text == "w done in task True"
        confirmed = await client.call_tool("confirm", {"rounds": 2})
        assert confirmed.content[0].text == "confirmed 2 time(s)" and asker.asked == ["Confirm #1?", "Confirm #2?"]
        assert (await client.call_tool("oops", {})).is_error is True  # a tool error: the tool's result
        with pytest.raises(McpError, match="boom broke") as raised:
            await client.call_tool("boom", {})  # a JSON-RPC error: raised as the call's own
        assert raised.value.code == -32603
        assert (await client.call_tool("plain", {"text": "p"})).content[0].text == "p"


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_handle_reports_its_statuses_and_answers_input_once(mode: str) -> None:
    server, _ = make_server()
    asker = Asker()
    async with connected(server, mode=mode, inputs=inputs(asker), advertising=ClientAdvertising(tasks=True)) as client:
        task = await client.call_tool("pair", {}, wait=False)
        assert isinstance(task, ToolTask) and task.tool == "pair" and task.extension == (mode == "auto")
        assert (await task.status()).task_id == task.task_id
        seen: list[str] = []
        result = await task.result(on_status=lambda state: seen.append(state.status))
        assert result.content[0].text == "First+Second"
        assert sorted(asker.asked) == ["First?", "Second?"]  # each request answered once
        assert seen[-1] == "completed"
        if mode == "auto":
            assert "input_required" in seen
        quick = await client.call_tool("plain", {}, wait=False)
        assert not isinstance(quick, ToolTask)  # an ordinary call comes back as it is


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_a_task(mode: str) -> None:
    server, gates = make_server()
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        task = await client.call_tool("gated", {"label": "x"}, wait=False)
        assert isinstance(task, ToolTask)
        await gates.started("x").wait()
        await task.cancel()
        with pytest.raises(TaskCancelled):
            await task.result()
        assert (await task.status()).status == "cancelled"
        with anyio.fail_after(10):
            while "x" not in gates.cancelled:
                await anyio.sleep(0.01)
        await task.cancel()  # a finished task: nothing to do, no error


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_that_is_cancelled_or_times_out_cancels_its_task(mode: str) -> None:
    server, gates = make_server()
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("gated", {"label": "t"}, timeout=0.2)
        with anyio.fail_after(10):
            while "t" not in gates.cancelled:
                await anyio.sleep(0.01)
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "gated", {"label": "c"})
            with anyio.fail_after(10):
                while not client.tasks._handles:  # the call holds its task (its CreateTaskResult came)
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            while "c" not in gates.cancelled:
                await anyio.sleep(0.01)


@pytest.mark.parametrize("mode", MODES)
async def test_waiting_hears_status_notifications_without_polling(mode: str) -> None:
    server, gates = make_server(poll_interval_ms=600_000)  # a poll would take ten minutes
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        task = await client.call_tool("gated", {"label": "n"}, wait=False)
        assert isinstance(task, ToolTask)
        async with anyio.create_task_group() as tg:
            tg.start_soon(task.wait)
            await gates.started("n").wait()
            gates.event("n").set()
        assert task.state.status == "completed"


@pytest.mark.parametrize("mode", MODES)
async def test_without_the_opt_in(mode: str) -> None:
    server, _ = make_server()
    async with connected(server, mode=mode) as client:
        assert (await client.call_tool("quick", {})).content[0].text == "quick:False"
        with pytest.raises(MissingClientCapability if mode == "auto" else MethodNotFound):
            await client.call_tool("must", {})
        if mode == "auto":
            with pytest.raises(CapabilityError):
                await client.request("tasks/get", {"taskId": "x"})


async def test_with_the_input_driver_off_the_caller_answers() -> None:
    server, _ = make_server()
    async with connected(
        server, inputs=InputHandlers(elicitation=Asker(), drive=False), advertising=ClientAdvertising(tasks=True)
    ) as client:
        task = await client.call_tool("confirm", {}, wait=False)
        assert isinstance(task, ToolTask)
        with pytest.raises(InputError):
            await task.wait()
        state = task.state
        assert state.status == "input_required" and list(state.input_requests) == ["confirm"]
        await task.answer({"confirm": {"action": "accept", "content": {"ok": True}}})
        assert (await task.result()).content[0].text == "confirmed 1 time(s)"


def test_task_states_read_either_design() -> None:
    modern = TaskState.from_wire(
        {"taskId": "a", "status": "input_required", "createdAt": "c", "lastUpdatedAt": "u", "ttlMs": None,
         "pollIntervalMs": 5, "inputRequests": {"k": {"method": "elicitation/create"}}}
    )  # fmt: skip
    assert (modern.ttl_ms, modern.poll_interval_ms, list(modern.input_requests), modern.terminal) == (
        None,
        5,
        ["k"],
        False,
    )
    legacy = TaskState.from_wire(
        {"taskId": "b", "status": "completed", "createdAt": "c", "lastUpdatedAt": "u", "ttl": 9, "pollInterval": 0}
    )
    assert (legacy.ttl_ms, legacy.poll_interval_ms, legacy.terminal) == (9, None, True)


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_is_taken_up_again_by_its_id_on_a_new_connection(mode: str) -> None:
    server, _ = make_server()
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        task = await client.call_tool("quick", {"text": "kept"}, wait=False)
        assert isinstance(task, ToolTask)
        kept = task.task_id
        await task.wait()
    async with connected(server, mode=mode, advertising=ClientAdvertising(tasks=True)) as client:
        again = await client.tasks.attach(kept, "quick")
        assert again.state.status == "completed"
        assert (await again.result()).content[0].text == "kept:True"
