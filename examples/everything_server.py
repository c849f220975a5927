"""A stdio MCP server that uses every server feature of mcpgen's runtime.

    python examples/everything_server.py            # serve on stdin/stdout (logs go to stderr)

It answers clients of both eras (the `initialize` handshake and per-request `_meta`): tools
(typed arguments, a pydantic-model argument, structured output, progress, logging, errors),
prompts with arguments, static resources and resource templates, completions, pagination
(page size 5), list-changed notifications (the `toggle_extra_tool` tool adds or removes a
tool) and resource updates (`touch_resource`). Tools that need the client's input
(`confirm_action`: elicitation, `connect_account`: URL elicitation, `summarize`: sampling,
`client_roots`: roots, `plan_trip`: all three at once) are written once: a modern client
gets an `InputRequiredResult` and retries; a handshake-era client gets server->client
requests from the legacy shim. `long_job` runs as a task for a client that opts in (either era's
design).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from datetime import datetime, timezone

import anyio
from mcpgen.runtime import RequestContext, Server, ServerAdvertising, ServerLimits, TaskOptions, ToolError
from mcpgen.runtime.protocol.input_requests import elicit, elicit_url, list_roots, sample
from pydantic import BaseModel, Field

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

server = Server(
    "everything",
    "1.0.0",
    instructions="A demonstration server: every tool, prompt and resource is safe to call.",
    limits=ServerLimits(page_size=5),
    tasks=TaskOptions(poll_interval_ms=200),
    advertising=ServerAdvertising(title="mcpgen everything server"),
)


# -- tools ----------------------------------------------------------------------------------


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers (structured output)."""
    return a + b


class Rectangle(BaseModel):
    width: float = Field(gt=0, description="Width in metres")
    height: float = Field(gt=0, description="Height in metres")


class Area(BaseModel):
    square_metres: float
    perimeter: float


@server.tool()
def area(rect: Rectangle) -> Area:
    """The area and perimeter of a rectangle (input schema from a pydantic model)."""
    return Area(square_metres=rect.width * rect.height, perimeter=2 * (rect.width + rect.height))


@server.tool()
async def long_task(ctx: RequestContext, steps: int = 3) -> str:
    """Report progress and log each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await ctx.log("info", {"step": i})
    return f"finished {steps} steps"


@server.tool(task_support="optional")
async def long_job(seconds: float = 1.0) -> str:
    """Work for a while: a task for a client that opts in (`ClientAdvertising(tasks=True)`, `mcpgen call`)."""
    await anyio.sleep(seconds)
    return f"worked {seconds:g} s"


@server.tool()
def fail(message: str = "something went wrong") -> str:
    """Always fails: the error comes back as an `isError` result whose text is the message (a
    `ToolError` is meant for the model; any other exception would say only that the tool failed)."""
    raise ToolError(message)


@server.tool()
def protocol_info(ctx: RequestContext) -> dict[str, object]:
    """The protocol version this request was served under, and the client that sent it."""
    return {"protocol_version": ctx.protocol_version, "modern": ctx.modern, "client": ctx.client_info}


@server.tool()
def now() -> str:
    """The server's current UTC time."""
    return datetime.now(timezone.utc).isoformat()


def filler(number: int) -> Callable[[], str]:
    def tool() -> str:
        return f"filler {number}"

    return tool


for n in range(1, 5):
    server.add_tool(filler(n), name=f"filler_{n}", description="A filler tool that makes the list span pages.")


def extra_tool() -> str:
    return "I come and go."


@server.tool()
def toggle_extra_tool() -> str:
    """Add or remove the tool `extra` (clients get a list-changed notification)."""
    if "extra" in server.tools:
        server.remove_tool("extra")
        return "removed extra"
    server.add_tool(extra_tool, name="extra", description="Added at run time.")
    return "added extra"


@server.tool()
def touch_resource(uri: str = "mem://counter") -> str:
    """Mark a resource as updated (subscribers are notified)."""
    COUNTER["value"] += 1
    server.notify_resource_updated(uri)
    return f"updated {uri}"


# -- tools that ask the client for input (multi-round-trip requests) ---------------------------


class Confirmation(BaseModel):
    confirm: bool = Field(description="Go ahead?")
    reason: str = Field(default="(none given)", description="Why")


@server.tool()
async def confirm_action(ctx: RequestContext, action: str) -> str:
    """Ask the user to confirm an action (form elicitation)."""
    answer = ctx.input_response("confirm")
    if answer is None:
        return ctx.input_required(confirm=elicit(f"Really {action}?", Confirmation), state={"action": action})
    if answer.action != "accept":
        return f"{action}: {'declined' if answer.action == 'decline' else 'cancelled'} by the user"
    if not answer.content["confirm"]:
        return f"{action}: not confirmed"
    return f"{action}: confirmed ({answer.content['reason']})"


@server.tool()
async def connect_account(ctx: RequestContext) -> str:
    """Send the user to a sign-in page (URL elicitation: nothing passes through the client)."""
    answer = ctx.input_response("signin")
    if answer is None:
        return ctx.input_required(signin=elicit_url("Sign in to the example service", "https://example.com/signin"))
    return f"sign-in {answer.action}"


@server.tool()
async def summarize(ctx: RequestContext, text: str) -> str:
    """Summarise text with the client's model (sampling)."""
    reply = ctx.input_response("summary")
    if reply is None:
        return ctx.input_required(summary=sample([f"Summarise in one line: {text}"], 100, system_prompt="Be brief."))
    return f"summary: {reply.content.text}"


@server.tool()
async def client_roots(ctx: RequestContext) -> list[str]:
    """The client's roots (roots/list)."""
    reply = ctx.input_response("roots")
    if reply is None:
        return ctx.input_required(roots=list_roots())
    return [root.uri for root in reply.roots]


@server.tool()
async def plan_trip(ctx: RequestContext, city: str) -> dict[str, object]:
    """Ask for everything at once: the answers come back together (answered concurrently)."""
    if not ctx.input_responses:
        return ctx.input_required(
            dates=elicit(
                f"When do you travel to {city}?",
                {"type": "object", "properties": {"nights": {"type": "integer", "minimum": 1}}, "required": ["nights"]},
            ),
            ideas=sample([f"Three things to do in {city}"], 200),
            roots=list_roots(),
        )
    dates = ctx.input_response("dates")
    return {
        "city": city,
        "nights": dates.content["nights"] if dates.action == "accept" else None,
        "ideas": ctx.input_response("ideas").content.text,
        "save_to": [root.uri for root in ctx.input_response("roots").roots][:1],
    }


# -- prompts ----------------------------------------------------------------------------------


@server.prompt(argument_descriptions={"topic": "What to write about", "tone": "formal or casual"})
def write_poem(topic: str, tone: str = "casual") -> str:
    """Ask for a short poem."""
    return f"Write a short {tone} poem about {topic}."


@server.prompt()
def review_code(code: str, language: str = "python") -> list[dict[str, object]]:
    """A two-message conversation about a piece of code."""
    return [
        {"role": "user", "content": f"Please review this {language} code:\n{code}"},
        {"role": "assistant", "content": "Sure. What should I focus on?"},
    ]


# -- resources -----------------------------------------------------------------------------

COUNTER = {"value": 0}


@server.resource("mem://readme", name="readme", mime_type="text/markdown")
def readme() -> str:
    """What this server is."""
    return "# everything\nA demonstration MCP server built with mcpgen."


@server.resource("mem://counter", name="counter", mime_type="application/json")
def counter() -> dict[str, int]:
    """A counter that `touch_resource` increments."""
    return {"value": COUNTER["value"]}


@server.resource("mem://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    """A few binary bytes."""
    return bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])


@server.resource("mem://greeting/{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting for anyone (a resource template)."""
    return f"Hello, {name}!"


@server.resource("mem://files/{+path}", name="file", mime_type="text/plain")
def file(path: str) -> str:
    """A pretend file at any path."""
    return f"contents of {path}"


# -- completions -------------------------------------------------------------------------------

LANGUAGES = ["python", "typescript", "go", "rust", "java", "kotlin"]


@server.completion
def complete(ref: dict[str, object], argument: dict[str, str], context: dict[str, object] | None) -> list[str]:
    if argument.get("name") == "language":
        return [lang for lang in LANGUAGES if lang.startswith(argument.get("value", ""))]
    if argument.get("name") == "tone":
        return [t for t in ("formal", "casual") if t.startswith(argument.get("value", ""))]
    return []


if __name__ == "__main__":
    server.run_stdio()
