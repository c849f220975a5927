"""`mcpgen inspect` and `mcpgen call`: talk to a server from the command line.

    mcpgen inspect [--mode auto|handshake|VERSION] [--json] -- python server.py     (stdio)
    mcpgen inspect --url http://localhost:8000/mcp [--mode ...] [--json]        (Streamable HTTP)
    mcpgen call TOOL [--args JSON] [--mode ...] [--json] [--answer FIELD=JSON ...]
                [--accept-all | --decline-all | --cancel-all] (--url URL | -- python server.py)

Log messages and progress are shown on stderr as they arrive; a tool that asks for input is
answered on the terminal, or from `--answer`/`--answers`, and `--accept-all`, `--decline-all` or
`--cancel-all` answer every form and URL request without asking (see `prompts`). An `--answer`
that does not fit its field is a usage error (exit status 2). A tool the server runs as a task is
waited for, its status shown on stderr as it changes; Ctrl-C cancels the task on the server, then
stops the command (exit status 130). A server that crashes, hangs, cannot be reached or writes
something other than JSON-RPC gets a one-line explanation and exit status 1, never a traceback.

With `--url`, a server that asks for authorization (HTTP 401 with a challenge) gets it by OAuth:
the authorization URL opens in the browser (and is printed), the browser comes back to a loopback
port, and the tokens (with the client's registration) are kept in `tokens.json` in mcpgen's
configuration folder (`${XDG_CONFIG_HOME:-~/.config}/mcpgen` on Linux; owner-only), so the next
command signs in without the browser until the tokens can no longer be refreshed. `--no-auth`
never authorizes. Time spent signing in does not count against `--timeout`. `mcpgen logout --url
URL` revokes those tokens where the authorization server allows it and forgets them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from ..client import Client, ClientAdvertising, ClientHooks, InputHandlers, Timeouts, ToolTask
from ..core.stdio import stdio
from ..protocol.wire import to_wire
from .prompts import Answerer, Choice, interrupted, is_terminal, parse_answers, say, show_log, show_progress, show_task

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup
from ..protocol.errors import (
    AuthError,
    AuthorizationRequired,
    ConnectionClosed,
    EndpointNotFound,
    McpError,
    McpRuntimeError,
    MethodNotFound,
    NegotiationError,
    RequestTimeout,
)

if TYPE_CHECKING:
    from ..auth import OAuth, RedirectHandler


def _mode(ctx: click.Context, param: click.Parameter, value: str) -> str:
    return "handshake" if value == "legacy" else value  # `legacy`: the earlier name, still accepted


_mode_option = click.option(
    "--mode",
    default="auto",
    show_default=True,
    callback=_mode,
    help="auto, handshake (the handshake era only; `legacy` works too), or a protocol version to pin.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
_timeout_option = click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds the server has to connect (the version probe and the handshake together), then to answer.",
)
_url_option = click.option("--url", help="A Streamable HTTP server's URL (instead of a command after `--`).")
_no_auth_option = click.option(
    "--no-auth", is_flag=True, help="With --url: never authorize (a server that asks for OAuth is refused)."
)


def token_file() -> Path:
    """Where the command line keeps OAuth tokens and client registrations (owner-only)."""
    return Path(click.get_app_dir("mcpgen")) / "tokens.json"


def redirect_handler() -> RedirectHandler:
    """How the user signs in: the browser, coming back to a loopback port."""
    from ..auth import BrowserRedirectHandler

    return BrowserRedirectHandler()


def oauth(server_url: str | None = None) -> OAuth:
    """The authorization the command line gives a `--url` server: OAuth when the server asks."""
    from ..auth import FileTokenStorage, OAuth

    storage = FileTokenStorage(token_file())
    return OAuth(redirect_handler=redirect_handler(), storage=storage, client_name="mcpgen CLI", server_url=server_url)


_dump = to_wire


async def wait_for_task(task: ToolTask) -> Any:
    """A task's result, its status shown on stderr as it changes; interrupted (Ctrl-C) or failing
    before the task has finished (an input it could not give), the command cancels the task on the
    server before it ends: nobody is left to wait for it."""
    try:
        return await task.result(on_status=show_task)
    except BaseException:
        if task.state.terminal:
            raise
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            try:
                await task.cancel()
                say(f"task {task.task_id}: cancelled")
            except McpRuntimeError as exc:
                say(f"task {task.task_id}: could not be cancelled ({exc})")
        raise


def _options(
    mode: str,
    timeout: float,
    answerer: Answerer | None = None,
    *,
    log_level: str | None = None,
    roots: list[str] | None = None,
) -> dict[str, Any]:
    """The client's options for the command line: handlers that show and answer what the server sends."""
    try:
        # tasks: a tool the server runs as a task is waited for, its status shown
        advertising = ClientAdvertising(log_level=log_level, tasks=True)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--log-level") from None
    inputs = InputHandlers(roots=roots)
    if answerer is not None:
        inputs = InputHandlers(
            sampling=answerer.sampling, elicitation=answerer.elicitation, elicitation_modes=("form", "url"), roots=roots
        )
    return {
        "mode": mode,
        "timeouts": Timeouts(request=timeout, probe=min(timeout, 5.0)),
        "hooks": ClientHooks(on_log=show_log),
        "inputs": inputs,
        "advertising": advertising,
    }


class ServerStderr:
    """Where a stdio server's stderr goes: a temporary file (never a pipe nobody reads, which would
    stall a chatty server), so that its last lines can be shown when it dies or hangs."""

    TAIL_BYTES = 4000
    TAIL_LINES = 20

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the server's lifetime

    def fileno(self) -> int:
        return self.file.fileno()

    def tail(self) -> str:
        """The last lines the server wrote (empty when it wrote nothing)."""
        try:
            size = self.file.seek(0, os.SEEK_END)
            self.file.seek(max(0, size - self.TAIL_BYTES))
            text = self.file.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        lines = text.splitlines()[-self.TAIL_LINES :]
        return "\n".join(f"  | {line}" for line in lines)

    def close(self) -> None:
        self.file.close()


def _with_tail(message: str, stderr: ServerStderr | None) -> str:
    tail = stderr.tail() if stderr is not None else ""
    return f"{message}\nthe server's last words (stderr):\n{tail}" if tail else message


def _client(
    command: tuple[str, ...],
    url: str | None,
    options: dict[str, Any],
    *,
    auth: bool = True,
    stderr: ServerStderr | None = None,
) -> Client:
    """The client for a server command (stdio; its stderr kept in `stderr`) or a URL (Streamable
    HTTP, with OAuth unless `auth` is off; nothing of it is imported for stdio)."""
    if url is not None and command:
        raise click.UsageError("give either --url or a server command after `--`, not both")
    if url is None and not command:
        raise click.UsageError("give the server command after `--`, e.g. `-- python server.py`, or --url URL")
    try:
        if url is None:
            sink = stderr.fileno() if stderr is not None else subprocess.DEVNULL
            return Client(stdio(list(command), stderr=sink), **options)
        from ..client.http.connector import http

        return Client(http(url, timeout=options["timeouts"].request, auth=oauth() if auth else None), **options)
    except (ValueError, TypeError) as exc:  # a bad --mode or URL
        raise click.UsageError(str(exc)) from None
    except ImportError as exc:  # no httpx
        raise click.ClickException(str(exc)) from None


def _run(
    command: tuple[str, ...],
    url: str | None,
    work: Callable[[Client], Awaitable[Any]],
    options: dict[str, Any],
    *,
    auth: bool = True,
) -> Any:
    stderr = ServerStderr() if url is None else None
    try:
        return _run_client(_client(command, url, options, auth=auth, stderr=stderr), url, work, auth, stderr)
    finally:
        if stderr is not None:
            stderr.close()


def _run_client(  # noqa: PLR0912 - one explanation per kind of failure
    client: Client, url: str | None, work: Callable[[Client], Awaitable[Any]], auth: bool, stderr: ServerStderr | None
) -> Any:
    async def main() -> Any:
        async with client:
            return await work(client)

    try:
        return anyio.run(main)
    except KeyboardInterrupt:
        interrupted()
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is not None:
            interrupted()
        raise click.ClickException(f"the connection failed: {group}") from None
    except (FileNotFoundError, PermissionError) as exc:
        raise click.ClickException(f"cannot start the server: {exc}") from None
    except RequestTimeout as exc:
        bad = client.last_bad_frames
        hint = f"; it wrote {bad} line(s) that are not JSON" if bad else "; is it an MCP stdio server?"
        message = f"the server did not answer in time ({exc}){hint if url is None else ''}"
        raise click.ClickException(_with_tail(message, stderr)) from None
    except EndpointNotFound as exc:
        raise click.ClickException(str(exc)) from None
    except ConnectionClosed as exc:
        if url is not None:
            raise click.ClickException(f"no answer from {url}: {exc}") from None
        tail = stderr.tail() if stderr is not None else ""
        if tail:
            message = f"the server closed the connection (it crashed or exited); its last words (stderr):\n{tail}"
        else:
            message = "the server closed the connection (it crashed or exited) without writing anything to stderr"
        raise click.ClickException(message) from None
    except NegotiationError as exc:
        raise click.ClickException(f"could not agree on a protocol version: {exc}") from None
    except AuthorizationRequired as exc:
        what = "more scope" if exc.status == 403 else "authorization"
        hint = "; run without --no-auth to sign in" if not auth else ""
        raise click.ClickException(f"{url} requires {what} (HTTP {exc.status}){hint}") from None
    except AuthError as exc:
        raise click.ClickException(f"authorization failed: {type(exc).__name__}: {exc}") from None
    except McpError as exc:
        raise click.ClickException(f"the server answered with an error: {exc}") from None
    except McpRuntimeError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot talk to the server: {exc}") from None
    except Exception as exc:  # never a traceback for people; the type says what went wrong
        raise click.ClickException(f"unexpected {type(exc).__name__}: {exc}") from None


@click.command(context_settings={"ignore_unknown_options": True})
@_url_option
@_no_auth_option
@_mode_option
@_json_option
@_timeout_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def inspect(  # noqa: PLR0913 - one parameter per command-line option
    url: str | None, no_auth: bool, mode: str, as_json: bool, timeout: float, command: tuple[str, ...]
) -> None:
    """Connect to a server (stdio command or --url) and list what it offers."""

    async def work(client: Client) -> dict[str, Any]:
        caps = client.server_capabilities
        report: dict[str, Any] = {
            "protocol_version": client.protocol_version,
            "server_info": client.server_info,
            "capabilities": caps,
            "tools": [],
            "prompts": [],
            "resources": [],
            "resource_templates": [],
        }
        if client.instructions:
            report["instructions"] = client.instructions
        sections = (
            ("tools", "tools", client.tools),
            ("prompts", "prompts", client.prompts),
            ("resources", "resources", client.resources),
            ("resource_templates", "resources", client.resource_templates),
        )
        for key, capability, lister in sections:
            if caps is None or capability in caps:
                try:
                    report[key] = [_dump(item) async for item in lister()]
                except MethodNotFound:  # a pinned version knows no capabilities: a missing feature lists nothing
                    report[key] = []
        return report

    report = _run(command, url, work, _options(mode, timeout), auth=not no_auth)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    info = report["server_info"] or {}
    click.echo(f"server:    {info.get('name', '?')} {info.get('version', '')}".rstrip())
    click.echo(f"protocol:  {report['protocol_version']}")
    click.echo(f"capabilities: {json.dumps(report['capabilities'])}")
    if report.get("instructions"):
        click.echo(f"instructions: {report['instructions']}")
    for key, label, name_key in (
        ("tools", "Tools", "name"),
        ("prompts", "Prompts", "name"),
        ("resources", "Resources", "uri"),
        ("resource_templates", "Resource templates", "uriTemplate"),
    ):
        items = report[key]
        click.echo(f"\n{label} ({len(items)}):")
        for item in items:
            description = (item.get("description") or "").strip().splitlines()
            click.echo(f"  {item.get(name_key)}{_signature(item)}" + (f"  - {description[0]}" if description else ""))


def _signature(item: dict[str, Any]) -> str:
    """A tool's arguments (`(a: integer, b?: string)`) or a prompt's (`(name, style?)`)."""
    if "inputSchema" in item:
        schema = item.get("inputSchema") or {}
        required = set(schema.get("required") or ())
        parts = [
            f"{name}{'' if name in required else '?'}: {_type_name(prop)}"
            for name, prop in (schema.get("properties") or {}).items()
        ]
        return f"({', '.join(parts)})"
    if "arguments" in item:
        return "(" + ", ".join(f"{a['name']}{'' if a.get('required') else '?'}" for a in item["arguments"]) + ")"
    return ""


def _type_name(prop: Any) -> str:
    if not isinstance(prop, dict):
        return "any"
    if "type" in prop:
        return str(prop["type"])
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list):
        return " | ".join(_type_name(o) for o in options)
    return "any"


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("tool")
@click.option("--args", "arguments", default="{}", help="The tool's arguments as a JSON object.")
@_url_option
@_no_auth_option
@_mode_option
@_json_option
@_timeout_option
@click.option("--log-level", default="info", show_default=True, help="Show the server's log messages from this level.")
@click.option(
    "--answer", "answers", multiple=True, metavar="FIELD=JSON", help="An answer to a form field the tool asks."
)
@click.option("--answers", "answers_file", type=click.Path(dir_okay=False), help="A JSON file of form answers.")
@click.option("--accept-all", is_flag=True, help="Accept every form (defaults and given answers) and URL request.")
@click.option("--decline-all", is_flag=True, help="Decline every form and URL request, without asking.")
@click.option("--cancel-all", is_flag=True, help="Cancel every form and URL request, without asking.")
@click.option("--sample-reply", help="The text to answer a sampling request with (else asked on the terminal).")
@click.option("--root", "roots", multiple=True, metavar="URI", help="A root to offer the server (repeatable).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def call(  # noqa: PLR0913 - one parameter per command-line option
    tool: str,
    arguments: str,
    url: str | None,
    no_auth: bool,
    mode: str,
    as_json: bool,
    timeout: float,
    log_level: str,
    answers: tuple[str, ...],
    answers_file: str | None,
    accept_all: bool,
    decline_all: bool,
    cancel_all: bool,
    sample_reply: str | None,
    roots: tuple[str, ...],
    command: tuple[str, ...],
) -> None:
    """Call one tool of a server (stdio command or --url) and print its result."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    flags: dict[Choice, bool] = {"accept": accept_all, "decline": decline_all, "cancel": cancel_all}
    chosen = [choice for choice, given in flags.items() if given]
    if len(chosen) > 1:
        raise click.UsageError("give at most one of --accept-all, --decline-all and --cancel-all")
    given = parse_answers(answers, answers_file)
    answerer = Answerer(is_terminal(), given, chosen[0] if chosen else None, sample_reply)

    async def work(client: Client) -> Any:
        with anyio.CancelScope() as scope:
            answerer.stop = scope.cancel  # an --answer that does not fit the form ends the call
            outcome = await client.call_tool(tool, parsed, progress=show_progress, wait=False)
            if isinstance(outcome, ToolTask):
                return _dump(await wait_for_task(outcome))
            return _dump(outcome)
        return None

    options = _options(mode, timeout, answerer, log_level=log_level, roots=list(roots) or None)
    result = _run(command, url, work, options, auth=not no_auth)
    if answerer.bad_answer is not None:
        raise answerer.bad_answer
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        for block in result.get("content", []):
            if block.get("type") == "text":
                click.echo(block.get("text", ""))
            else:
                click.echo(json.dumps(block))
        if "structuredContent" in result and not result.get("content"):
            click.echo(json.dumps(result["structuredContent"], indent=2))
    if result.get("isError"):
        sys.exit(1)


@click.command()
@click.option("--url", required=True, help="The Streamable HTTP server to sign out of.")
def logout(url: str) -> None:
    """Sign out of a server: revoke the tokens kept for it (RFC 7009, where the authorization
    server offers it) and forget them."""
    from ..auth import AuthError

    flow = oauth(url)

    async def sign_out() -> tuple[bool, bool]:
        had_tokens = await flow.storage.get_tokens(flow._storage_key) is not None
        return had_tokens, await flow.sign_out()

    try:
        had_tokens, revoked = anyio.run(sign_out)
    except (AuthError, OSError, ValueError) as exc:
        raise click.ClickException(f"could not sign out: {exc}") from None
    if not had_tokens:
        click.echo(f"no sign-in was kept for {url}")
    elif revoked:
        click.echo(f"signed out of {url}: the tokens were revoked and forgotten")
    else:
        click.echo(f"signed out of {url}: the tokens were forgotten (the authorization server did not revoke them)")
