"""A server as a user writes it, against the public API only: type-checked strictly in CI."""

from __future__ import annotations

from mcpgen.runtime import RequestContext, Server, TaskOptions, elicit, sample
from pydantic import BaseModel

server = Server(
    "typed-demo",
    "1.0",
    instructions="A server written the way users write them.",
    tasks=TaskOptions(ttl_ms=600_000, poll_interval_ms=50),
)


class Confirm(BaseModel):
    ok: bool
    note: str = ""


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def shout(text: str) -> str:
    return text.upper()


@server.tool()
async def delete(ctx: RequestContext, item: str) -> str:
    """Delete after asking the user: the same code serves both eras."""
    answer = ctx.elicitation("confirm", Confirm)
    if answer is None:
        return ctx.input_required(confirm=elicit(f"Delete {item}?", Confirm))
    if not answer.accepted or answer.content is None or not answer.content.ok:
        return f"kept {item}"
    await ctx.report_progress(1, 1, "deleted")
    return f"deleted {item}"


@server.tool()
def summarize(ctx: RequestContext, text: str) -> str:
    reply = ctx.sampling("summary")
    if reply is None:
        return ctx.input_required(summary=sample([f"Summarize: {text}"], max_tokens=50))
    content = reply.content
    return content.text if not isinstance(content, list) and content.type == "text" else "(no text)"


@server.tool(task_support="optional")
async def crunch(ctx: RequestContext, n: int) -> str:
    """Counts to `n`: a task when the client opts in (an ordinary call otherwise)."""
    return f"counted to {n} ({'as a task' if ctx.task_id is not None else 'at once'})"


@server.tool(task_support="required", defer_task=True)
async def enroll(ctx: RequestContext, course: str) -> str:
    """Asks first (an ordinary multi-round-trip exchange), then runs as a task."""
    answer = ctx.elicitation("confirm", Confirm)
    if answer is None:
        return ctx.input_required(confirm=elicit(f"Enroll in {course}?", Confirm))
    await ctx.run_as_task()  # the client gets its task handle here; the rest runs in the background
    return f"enrolled in {course}" if answer.content is not None and answer.content.ok else "not enrolled"


@server.prompt()
def greet(name: str) -> str:
    return f"Hello {name}"


@server.resource("mem://notes/{name}")
def note(name: str) -> str:
    return f"note {name}"


@server.completion
def complete(ref: object, argument: object, context: object) -> list[str]:
    return ["one", "two"]


# The decorators keep each function's own type: it is still callable as written.
total: int = add(1, 2)
loud: str = shout("hi")


if __name__ == "__main__":
    server.run_stdio()
