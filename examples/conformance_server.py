"""The server the official MCP conformance suite's server scenarios call, over Streamable HTTP.

    python examples/conformance_server.py --port 3001      # http://127.0.0.1:3001/mcp, both eras

Every tool, prompt and resource is written once for both protocol eras: a tool that needs the
client's input asks with `ctx.input_required(...)`, which a modern client receives as an
`InputRequiredResult` (and retries), and a handshake-era client as server->client requests on
the POST's SSE stream. Several processes can serve it behind one URL: they share the sealing key
below (a real deployment reads its keys from `MCPGEN_STATE_KEYS`) and, with `MCPGEN_REDIS_URL`
set, a Redis change bus (`mcpgen serve examples/conformance_server.py:server --workers 2`).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from mcpgen.runtime import (
    InternalError,
    MissingClientCapability,
    RequestContext,
    Sealing,
    Server,
    ToolError,
    mcp_header,
)
from mcpgen.runtime.protocol.capabilities import has_capability
from mcpgen.runtime.protocol.input_requests import elicit, list_roots, sample
from mcpgen.runtime.server.http.app import close_sse_stream

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
STATE_KEY = b"conformance-fixture-key-shared-by-every-worker"  # 32+ bytes; fixed so workers agree

server = Server("mcp-conformance-test-server", "0.1.0", sealing=Sealing(keys=[STATE_KEY]))


def image() -> dict[str, str]:
    return {"type": "image", "data": IMAGE, "mimeType": "image/png"}


# -- content tools ------------------------------------------------------------------------------


@server.tool()
def test_simple_text() -> str:
    """Returns simple text content."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Any:
    """Returns image content."""
    return [image()]


@server.tool()
def test_audio_content() -> Any:
    """Returns audio content."""
    return [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]


@server.tool()
def test_embedded_resource() -> Any:
    """Returns an embedded resource."""
    resource = {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource."}
    return [{"type": "resource", "resource": resource}]


@server.tool()
def test_multiple_content_types() -> Any:
    """Returns text, an image and a resource."""
    resource = {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": '{"test": "data"}'}
    return [
        {"type": "text", "text": "Multiple content types test:"},
        image(),
        {"type": "resource", "resource": resource},
    ]


@server.tool()
async def test_tool_with_logging(ctx: RequestContext) -> str:
    """Sends three log messages while it runs."""
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(step)
        await anyio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: RequestContext) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100, f"Completed step {done} of 100")
        await anyio.sleep(0.05)
    return str(ctx.request.progress_token)


@server.tool()
def test_error_handling() -> str:
    """Always fails (an isError result)."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
def test_x_mcp_header(
    region: Annotated[str, mcp_header("Region", description="Mirrored into Mcp-Param-Region")] = "<none>",
) -> str:
    """Has a parameter mirrored into an HTTP header."""
    return f"region={region}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def json_schema_2020_12_tool() -> str:
    """Has a JSON Schema 2020-12 input schema, given verbatim."""
    return "json_schema_2020_12_tool"


server.add_tool(json_schema_2020_12_tool).input_schema = JSON_SCHEMA_2020_12


# -- tools that ask the client (handshake era: server->client requests; modern: MRTR) -------------


@server.tool()
async def test_sampling(ctx: RequestContext, prompt: str) -> str:
    """Asks the client's model."""
    reply = ctx.input_response("answer")
    if reply is None:
        return ctx.input_required(answer=sample([prompt], 100))
    content = reply.content
    return f"LLM response: {getattr(content, 'text', 'No response')}"


async def elicit_as_is(ctx: RequestContext, message: str, schema: dict[str, Any]) -> str:
    """Ask the user and report the answer as it comes, fitting the schema or not. The suite
    answers these two tools with content outside their schemas; `ctx.input_required` would
    refuse such an answer (-32602), so on a handshake-era session these tools send the
    request on the POST's stream themselves and report whatever came back."""
    if ctx.modern:
        answer = ctx.input_response("answer")
        if answer is None:
            return ctx.input_required(answer=elicit(message, schema))
        return f"User response: action={answer.action}, content={json.dumps(answer.content or {})}"
    params = {"mode": "form", "message": message, "requestedSchema": schema}
    reply = await ctx.session.send_request("elicitation/create", params, route=ctx.transport.reply)
    return f"User response: action={reply.get('action')}, content={json.dumps(reply.get('content') or {})}"


@server.tool()
async def test_elicitation(ctx: RequestContext, message: str) -> str:
    """Asks the user."""
    schema = {"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}}}
    return await elicit_as_is(ctx, message, {**schema, "required": ["response"]})


class Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: RequestContext) -> str:
    """Asks with defaults for every primitive type."""
    answer = ctx.elicitation("info", Defaults)
    if answer is None:
        return ctx.input_required(info=elicit("Please provide user information", Defaults))
    content = answer.content.model_dump_json() if answer.content is not None else "{}"
    return f"Elicitation result: action={answer.action}, content={content}"


ENUM_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Simple enum", "enum": ["active", "inactive", "pending"]},
        "titledSingle": {
            "type": "string",
            "description": "Enum with titled options",
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Multi-select without titles",
            "items": {"type": "string", "enum": ["read", "write", "execute"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Multi-select with titled options",
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            },
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy enum with enumNames",
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    },
    "required": ["untitledSingle", "titledSingle", "untitledMulti", "titledMulti", "legacyEnum"],
}


@server.tool()
async def test_elicitation_sep1330_enums(ctx: RequestContext) -> str:
    """Asks with every kind of enum schema."""
    return await elicit_as_is(ctx, "Please select values using different enum schema types", ENUM_SCHEMA)


@server.tool()
async def test_reconnection(ctx: RequestContext) -> str:
    """Closes its SSE stream mid-call; the client resumes it (handshake-era SSE polling)."""
    await ctx.info("Before disconnect")
    await close_sse_stream(ctx)
    await anyio.sleep(0.2)  # the tool's own pacing: the client reconnects meanwhile
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@server.tool()
async def test_missing_capability(ctx: RequestContext) -> str:
    """Needs the client's sampling capability (a JSON-RPC error without it)."""
    if not has_capability(ctx.client_capabilities, "sampling"):
        raise MissingClientCapability(
            "This tool requires the client 'sampling' capability", data={"requiredCapabilities": {"sampling": {}}}
        )
    return "Client declared sampling capability; proceeding."


# -- multi-round-trip tools (modern era) -----------------------------------------------------------

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _content(answer: Any) -> dict[str, Any]:
    """An elicitation answer's content (an empty dict when there is none)."""
    return _as_dict(getattr(answer, "content", None))


def _as_dict(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


@server.tool()
async def test_input_required_result_elicitation(ctx: RequestContext) -> str:
    """One elicitation."""
    answer = ctx.input_response("user_name")
    if answer is None:
        return ctx.input_required(user_name=elicit("What is your name?", NAME_SCHEMA))
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


@server.tool()
async def test_input_required_result_sampling(ctx: RequestContext) -> str:
    """One sampling request."""
    answer = ctx.input_response("capital_question")
    if answer is None:
        return ctx.input_required(capital_question=sample(["What is the capital of France?"], 100))
    return f"Model said: {getattr(answer.content, 'text', '?')}"


@server.tool()
async def test_input_required_result_list_roots(ctx: RequestContext) -> str:
    """One roots request."""
    answer = ctx.input_response("client_roots")
    if answer is None:
        return ctx.input_required(client_roots=list_roots())
    return f"Client exposed {len(answer.roots)} root(s)."


@server.tool()
async def test_input_required_result_request_state(ctx: RequestContext) -> str:
    """State carried from the first round to the second."""
    if ctx.input_response("confirm") is not None and ctx.state == "request-state-nonce":
        return "state-ok: confirmation received"
    return ctx.input_required(state="request-state-nonce", confirm=elicit("Please confirm", CONFIRM_SCHEMA))


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: RequestContext) -> str:
    """Three kinds of input at once."""
    if {"user_name", "greeting", "client_roots"} <= ctx.input_responses.keys():
        return "All inputs received."
    return ctx.input_required(
        state="multiple-inputs",
        user_name=elicit("What is your name?", NAME_SCHEMA),
        greeting=sample(["Generate a greeting"], 50),
        client_roots=list_roots(),
    )


@server.tool()
async def test_input_required_result_multi_round(ctx: RequestContext) -> str:
    """Three rounds, the state evolving."""
    state = _as_dict(ctx.state) or {"round": 0}
    if state.get("round") == 1 and ctx.input_response("step1") is not None:
        name = _content(ctx.input_response("step1")).get("name")
        color = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
        return ctx.input_required(
            state={"round": 2, "name": name}, step2=elicit("Step 2: What is your favorite color?", color)
        )
    if state.get("round") == 2 and ctx.input_response("step2") is not None:
        return f"{state.get('name')} likes {_content(ctx.input_response('step2')).get('color')}."
    return ctx.input_required(state={"round": 1}, step1=elicit("Step 1: What is your name?", NAME_SCHEMA))


@server.tool()
async def test_input_required_result_tampered_state(ctx: RequestContext) -> str:
    """A state the client must echo untouched (a tampered one is refused before this runs)."""
    if ctx.state is None:
        return ctx.input_required(state="round-1", confirm=elicit("Please confirm", CONFIRM_SCHEMA))
    return f"state-ok: {ctx.state}"


@server.tool()
async def test_input_required_result_capabilities(ctx: RequestContext) -> str:
    """Asks only for what the client declared."""
    asked: dict[str, Any] = {}
    if has_capability(ctx.client_capabilities, "sampling"):
        asked["sample"] = sample(["Say hello"], 50)
    if has_capability(ctx.client_capabilities, "elicitation"):
        asked["ask"] = elicit("What is your name?", NAME_SCHEMA)
    return ctx.input_required(state="capability-gated", **asked)


@server.tool()
async def test_streaming_elicitation(ctx: RequestContext) -> str:
    """Asks the user while streaming: the question travels inside the result, never as a request."""
    await ctx.info("asking for a name")
    answer = ctx.input_response("user_name")
    if answer is None:
        return ctx.input_required(user_name=elicit("What is your name?", NAME_SCHEMA))
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


@server.tool()
async def test_logging_tool(ctx: RequestContext) -> str:
    """Logs at every level it can; a modern client only hears from its requested level up."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"a {level} message")
    return "logged"


# -- tasks (io.modelcontextprotocol/tasks; 2025-11-25's experimental tasks from the same tools) -----

CONFIRM_DELETE_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
PART_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}


@server.tool()
def greet(name: str) -> str:
    """Greets (never a task)."""
    return f"Hello, {name}!"


@server.tool(task_support="optional")
async def slow_compute(seconds: float = 0.0, label: str = "") -> str:
    """Sleeps `seconds`, then answers; a task when the client opts in."""
    await anyio.sleep(seconds)
    return f"computed {label or 'result'} after {seconds} s"


@server.tool(task_support="required")
async def failing_job() -> str:
    """Fails as a tool (an isError result) after about a second; only ever a task."""
    await anyio.sleep(1.0)
    raise RuntimeError("the job failed")


@server.tool(task_support="optional")
async def protocol_error_job() -> str:
    """Ends with a JSON-RPC error (a failed task)."""
    await anyio.sleep(0.1)
    raise InternalError("the job hit an internal error")


@server.tool(task_support="optional")
async def confirm_delete(ctx: RequestContext, filename: str) -> str:
    """Asks the user to confirm (as the task's input), then answers."""
    answer = ctx.input_response("confirm")
    if answer is None:
        return ctx.input_required(confirm=elicit(f"Delete {filename}?", CONFIRM_DELETE_SCHEMA))
    confirmed = answer.action == "accept" and _content(answer).get("confirm") is True
    return f"{'deleted' if confirmed else 'kept'} {filename}"


@server.tool(task_support="optional")
async def multi_input(ctx: RequestContext) -> str:
    """Asks two questions at once (both pending together)."""
    first, second = ctx.input_response("first"), ctx.input_response("second")
    if first is None or second is None:
        return ctx.input_required(first=elicit("First part?", PART_SCHEMA), second=elicit("Second part?", PART_SCHEMA))
    return f"got {_content(first).get('name')} and {_content(second).get('name')}"


@server.tool(task_support="required", defer_task=True)
async def test_tool_with_task(ctx: RequestContext) -> str:
    """Asks for a name first (multi-round-trip), then runs as a task and greets with it."""
    answer = ctx.input_response("user_name")
    if answer is None:
        return ctx.input_required(user_name=elicit("What is your name?", NAME_SCHEMA))
    await ctx.run_as_task()
    await anyio.sleep(0.1)
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


# -- list changes ------------------------------------------------------------------------------


def _dynamic() -> str:
    return "dynamic"


@server.tool()
def test_trigger_tool_change() -> str:
    """Adds and removes a tool (listen streams hear of it)."""
    server.add_tool(_dynamic, name="test_dynamic_tool")
    server.remove_tool("test_dynamic_tool")
    return "tool list changed"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Adds and removes a prompt (listen streams hear of it)."""
    server.add_prompt(_dynamic, name="test_dynamic_prompt", description="dynamic")
    server.remove_prompt("test_dynamic_prompt")
    return "prompt list changed"


# -- resources -------------------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return base64.b64decode(IMAGE)


@server.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template(id: str) -> str:
    """A resource template."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients can subscribe to."""
    return "Watched resource content"


# -- prompts ---------------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt with an embedded resource."""
    resource = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [
        {"role": "user", "content": {"type": "resource", "resource": resource}},
        "Please process the embedded resource above.",
    ]


@server.prompt()
def test_prompt_with_image() -> list[Any]:
    """A prompt with an image."""
    return [{"role": "user", "content": image()}, "Please analyze the image above."]


@server.prompt()
async def test_input_required_result_prompt(ctx: RequestContext) -> str:
    """A prompt that asks the user first."""
    answer = ctx.input_response("user_context")
    if answer is None:
        schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
        return ctx.input_required(user_context=elicit("What context should the prompt use?", schema))
    return f"Use the following context: {_content(answer).get('context', '?')}"


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None) -> list[str]:
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    server.run_http(args.host, args.port, retry_ms=100, log_level=args.log_level)


if __name__ == "__main__":
    main()
