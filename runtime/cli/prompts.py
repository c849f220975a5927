"""How `mcpgen call` and `mcpgen inspect` show what a server says and answer what it asks.

Log messages and progress go to stderr as they arrive. A server's questions are answered on the
terminal when stdin is one (form fields one by one, with their defaults and choices; URL
elicitations printed), else from the answers given on the command line (`--answer FIELD=JSON`,
`--answers FILE`), the fields' defaults, and `--accept-all` (accept every form and URL request).
A form that cannot be completed without asking is declined, with a line saying why.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import click

from ..protocol.errors import MissingInputHandler
from ..protocol.wire import to_wire


def say(text: str) -> None:
    click.echo(text, err=True)


async def show_log(level: Any, data: Any, logger: Any) -> None:
    prefix = f"[{level}]" + (f" {logger}:" if logger else "")
    say(f"{prefix} {data if isinstance(data, str) else json.dumps(data)}")


async def show_progress(progress: float, total: float | None, message: str | None) -> None:
    amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    say(f"progress {amount}" + (f": {message}" if message else ""))


async def show_task(state: Any) -> None:
    """A task's status as it changes (`mcpgen call` of a tool the server runs as a task)."""
    say(f"task {state.task_id}: {state.status}" + (f": {state.status_message}" if state.status_message else ""))


def parse_answers(pairs: tuple[str, ...], path: str | None) -> dict[str, Any]:
    """`FIELD=JSON` pairs (a value that is not JSON is taken as a string) and a JSON answers file."""
    answers: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = json.loads(open(path, encoding="utf-8").read())  # noqa: SIM115 - read once
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--answers") from None
        if not isinstance(loaded, dict):
            raise click.BadParameter("must hold a JSON object of field names and values", param_hint="--answers")
        answers.update(loaded)
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not FIELD=JSON", param_hint="--answer")
        try:
            answers[name] = json.loads(raw)
        except ValueError:
            answers[name] = raw
    return answers


@dataclass
class Answerer:
    """The CLI's elicitation and sampling handlers."""

    interactive: bool
    answers: dict[str, Any] = field(default_factory=dict)
    accept_all: bool = False
    sample_reply: str | None = None

    async def elicitation(self, params: Any) -> dict[str, Any]:
        message = getattr(params, "message", "")
        if (getattr(params, "mode", None) or "form") == "url":
            say(f"The server asks you to open {params.url}\n  {message}")
            if self.interactive and not self.accept_all:
                done = await anyio.to_thread.run_sync(lambda: click.confirm("Done?", default=True, err=True))
                return {"action": "accept" if done else "decline"}
            return {"action": "accept"}
        schema = to_wire(params.requested_schema)
        say(f"The server asks: {message}")
        content: dict[str, Any] = {}
        required = set(schema.get("required") or ())
        for name, prop in (schema.get("properties") or {}).items():
            found = await self._field(name, prop, name in required)
            if found is _DECLINE:
                say(f"  declined: no answer for the required field {name!r} (give --answer {name}=JSON)")
                return {"action": "decline"}
            if found is not _SKIP:
                content[name] = found
        return {"action": "accept", "content": content}

    async def _field(self, name: str, prop: Mapping[str, Any], required: bool) -> Any:
        if name in self.answers:
            return self.answers[name]
        if self.interactive and not self.accept_all:
            return await anyio.to_thread.run_sync(ask_field, name, prop, required)
        if "default" in prop:
            return prop["default"]
        return _DECLINE if required and not self.accept_all else _SKIP

    async def sampling(self, params: Any) -> dict[str, Any]:
        for message in getattr(params, "messages", []) or []:
            text = getattr(getattr(message, "content", None), "text", None)
            say(f"  {getattr(message, 'role', '?')}: {text if text is not None else to_wire(message.content)}")
        reply = self.sample_reply
        if reply is None and self.interactive:
            reply = await anyio.to_thread.run_sync(lambda: click.prompt("Your reply, as the model", err=True))
        if reply is None:
            raise MissingInputHandler("the server asked for a model reply: give --sample-reply TEXT")
        return {"role": "assistant", "content": {"type": "text", "text": reply}, "model": "mcpgen-cli"}


_DECLINE = object()
_SKIP = object()


def _choices(prop: Mapping[str, Any]) -> list[str] | None:
    if isinstance(prop.get("enum"), list):
        return [str(v) for v in prop["enum"]]
    if isinstance(prop.get("oneOf"), list):
        return [str(o.get("const")) for o in prop["oneOf"] if isinstance(o, Mapping)]
    return None


def ask_field(name: str, prop: Mapping[str, Any], required: bool) -> Any:
    """Prompt for one form field on the terminal (blocking; run in a worker thread)."""
    kind = prop.get("type")
    label = prop.get("title") or name
    if prop.get("description"):
        say(f"  {name}: {prop['description']}")
    default = prop.get("default")
    if kind == "boolean":
        return click.confirm(f"  {label}", default=bool(default) if default is not None else None, err=True)
    if kind == "array":
        items = prop.get("items") or {}
        options = _choices(items) or []
        raw = click.prompt(f"  {label} (comma-separated: {', '.join(options)})", default="", err=True)
        return [part.strip() for part in str(raw).split(",") if part.strip()]
    choices = _choices(prop)
    types: dict[object, Any] = {"integer": int, "number": float}
    value_type: Any = click.Choice(choices) if choices else types.get(kind, str)
    if not required and default is None:
        raw = click.prompt(f"  {label} (optional)", default="", show_default=False, type=str, err=True)
        return _SKIP if raw == "" else value_type(raw) if not choices else raw
    return click.prompt(f"  {label}", default=default, type=value_type, err=True)


def is_terminal() -> bool:
    return sys.stdin.isatty()
