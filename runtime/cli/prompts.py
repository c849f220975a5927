"""How `mcpgen call` and `mcpgen inspect` show what a server says and answer what it asks.

Log messages and progress go to stderr as they arrive. A server's questions are answered on the
terminal when stdin is one (for each form or URL request: answer, decline or cancel; then form
fields one by one, with their defaults and choices), else from the answers given on the command
line (`--answer FIELD=JSON`, `--answers FILE`) and the fields' defaults. `--accept-all`,
`--decline-all` and `--cancel-all` answer every form and URL request that way without asking.
Off a terminal, a form that cannot be completed without asking is declined, and so is a URL
request without `--accept-all`, each with a line saying why. An answer given on the command line
that does not fit its field is a usage error (`BadAnswer`). Ctrl-D at a prompt cancels that
request; Ctrl-C stops the command (`Interrupted`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import click
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..protocol.errors import MissingInputHandler
from ..protocol.wire import to_wire

T = TypeVar("T")
Choice = Literal["accept", "decline", "cancel"]


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


class BadAnswer(click.BadParameter):
    """An answer given on the command line that does not fit the field the server asks for: a
    usage error (exit status 2), found when the server's form arrives."""


# -- asking on the terminal -------------------------------------------------------------------------

_stranded: list[threading.Thread] = []


async def on_terminal(ask: Callable[..., T], *args: Any) -> T:
    """Run a blocking prompt in a daemon thread while the event loop goes on (the session keeps
    reading and answering). A cancellation (Ctrl-C) does not wait for the prompt: the thread is
    left blocked on its read, and `stranded()` says so, for the process to exit without it."""
    outcome: list[Any] = []
    finished = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, ask(*args)))
        except BaseException as exc:  # handed to the waiting task as it is
            outcome.append((False, exc))
        finally:
            finished.set()

    thread = threading.Thread(target=run, name="mcpgen prompt", daemon=True)
    thread.start()
    try:
        await anyio.to_thread.run_sync(finished.wait, abandon_on_cancel=True)
    finally:
        if not finished.is_set():
            _stranded.append(thread)
            finished.set()  # releases the waiting worker thread; the prompt's own thread stays blocked
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


def stranded() -> bool:
    """Is a prompt still waiting for a line nobody will read (its request was cancelled)?"""
    return any(thread.is_alive() for thread in _stranded)


def _ended(ask: Callable[..., T]) -> Callable[..., T | None]:
    """`ask`, with the end of input (Ctrl-D) as None instead of click's Abort."""

    def asking(*args: Any) -> T | None:
        try:
            return ask(*args)
        except (click.Abort, EOFError):
            say("")
            return None

    return asking


def ask_choice(question: str) -> Choice | None:
    """Answer, decline or cancel one request (None at the end of input)."""
    picked = click.prompt(question, default="a", type=click.Choice(["a", "d", "c"]), show_choices=False, err=True)
    choices: dict[str, Choice] = {"a": "accept", "d": "decline", "c": "cancel"}
    return choices[picked]


# -- the handlers -----------------------------------------------------------------------------------


@dataclass
class Answerer:
    """The CLI's elicitation and sampling handlers. `choice` answers every form and URL request
    without asking (`--accept-all`: with the given answers and the fields' defaults)."""

    interactive: bool
    answers: dict[str, Any] = field(default_factory=dict)
    choice: Choice | None = None
    sample_reply: str | None = None
    bad_answer: BadAnswer | None = None
    stop: Callable[[], None] | None = None  # ends the command's work (set while a call runs)
    # requests asked together (a modern server's input requests) are shown and asked one by one
    _one_at_a_time: anyio.Lock = field(default_factory=anyio.Lock, repr=False)

    @property
    def accept_all(self) -> bool:
        return self.choice == "accept"

    async def elicitation(self, params: Any) -> dict[str, Any]:
        async with self._one_at_a_time:
            return await self._elicitation(params)

    async def _elicitation(self, params: Any) -> dict[str, Any]:
        message = getattr(params, "message", "")
        url = (getattr(params, "mode", None) or "form") == "url"
        if url:
            say(f"The server asks you to open {params.url}\n  {message}")
        else:
            say(f"The server asks: {message}")
        if self.choice in ("decline", "cancel"):
            say(f"  {_DONE[self.choice]} (--{self.choice}-all)")
            return {"action": self.choice}
        if url:
            return await self._url()
        return await self._form(to_wire(params.requested_schema))

    async def _url(self) -> dict[str, Any]:
        if self.accept_all:
            return {"action": "accept"}
        if not self.interactive:
            say("  declined: a URL request is accepted only on a terminal or with --accept-all")
            return {"action": "decline"}
        choice = await on_terminal(_ended(ask_choice), "open it (a), decline (d) or cancel (c)?")
        return {"action": choice or "cancel"}

    async def _form(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        self.bad_answer = bad_answer(self.answers, properties)
        if self.bad_answer is not None:  # the command stops and reports it: nothing is sent for it
            if self.stop is None:
                raise self.bad_answer
            self.stop()
            return {"action": "cancel"}
        if self.interactive and not self.accept_all:
            choice = await on_terminal(_ended(ask_choice), "answer (a), decline (d) or cancel (c)?")
            if choice != "accept":
                return {"action": choice or "cancel"}
        content: dict[str, Any] = {}
        required = set(schema.get("required") or ())
        for name, prop in properties.items():
            found = await self._field(name, prop, name in required)
            if found is _CANCEL:
                return {"action": "cancel"}
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
            value = await on_terminal(_ended(ask_field), name, prop, required)
            return _CANCEL if value is None else value
        if "default" in prop:
            return prop["default"]
        return _DECLINE if required and not self.accept_all else _SKIP

    async def sampling(self, params: Any) -> dict[str, Any]:
        async with self._one_at_a_time:
            return await self._sampling(params)

    async def _sampling(self, params: Any) -> dict[str, Any]:
        for message in getattr(params, "messages", []) or []:
            text = getattr(getattr(message, "content", None), "text", None)
            say(f"  {getattr(message, 'role', '?')}: {text if text is not None else to_wire(message.content)}")
        reply = self.sample_reply
        if reply is None and self.interactive:
            reply = await on_terminal(_ended(ask_reply))
        if reply is None:
            raise MissingInputHandler("the server asked for a model reply: give --sample-reply TEXT")
        return {"role": "assistant", "content": {"type": "text", "text": reply}, "model": "mcpgen-cli"}


def bad_answer(answers: Mapping[str, Any], properties: Mapping[str, Any]) -> BadAnswer | None:
    """The first answer given on the command line that does not fit its field of the form."""
    for name, value in answers.items():
        prop = properties.get(name)
        if not isinstance(prop, Mapping):
            continue
        error = best_match(Draft202012Validator(prop).iter_errors(value))
        if error is not None:
            return BadAnswer(
                f"{name}={json.dumps(value)} does not fit the form's field {name!r}: {error.message}",
                param_hint="--answer",
            )
    return None


_DECLINE = object()
_SKIP = object()
_CANCEL = object()
_DONE = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}


def _choices(prop: Mapping[str, Any]) -> list[str] | None:
    if isinstance(prop.get("enum"), list):
        return [str(v) for v in prop["enum"]]
    if isinstance(prop.get("oneOf"), list):
        return [str(o.get("const")) for o in prop["oneOf"] if isinstance(o, Mapping)]
    return None


def ask_reply() -> str:
    reply: str = click.prompt("Your reply, as the model", err=True)
    return reply


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
        convert = click.types.convert_type(value_type)
        while True:  # as click.prompt, with an empty line for no answer
            raw = click.prompt(f"  {label} (optional)", default="", show_default=False, type=str, err=True)
            if raw == "":
                return _SKIP
            try:
                return convert(raw)
            except click.BadParameter as exc:
                say(f"Error: {exc.message}")
    return click.prompt(f"  {label}", default=default, type=value_type, err=True)


def interrupted() -> None:
    """Ctrl-C: say so and exit with status 130, without waiting for a prompt nobody will answer."""
    say("\ninterrupted")
    if stranded():  # its thread holds stdin: the interpreter could not close it at exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(130)


def is_terminal() -> bool:
    return sys.stdin.isatty()
