"""`mcpgen inspect` and `mcpgen call` against real stdio servers, good and bad."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main

REPO = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(REPO / "examples" / "everything_server.py")]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", "2026-07-28"), ("handshake", "2025-11-25"), ("2026-07-28", "2026-07-28")]
)
def test_inspect_json(mode: str, version: str) -> None:
    code, out = run("inspect", "--mode", mode, "--json", "--", *SERVER)
    assert code == 0, out
    report = json.loads(out)
    assert list(report)[:7] == [
        "protocol_version",
        "server_info",
        "capabilities",
        "tools",
        "prompts",
        "resources",
        "resource_templates",
    ]
    assert report["protocol_version"] == version
    assert len(report["tools"]) > 5, "every page is listed"
    assert {t["name"] for t in report["tools"]} >= {"echo", "add", "plan_trip"}
    assert {p["name"] for p in report["prompts"]} == {"write_poem", "review_code"}
    assert {r["uri"] for r in report["resources"]} == {"mem://readme", "mem://counter", "mem://logo"}
    assert {t["uriTemplate"] for t in report["resource_templates"]} == {"mem://greeting/{name}", "mem://files/{+path}"}


def test_inspect_text() -> None:
    code, out = run("inspect", "--", *SERVER)
    assert code == 0, out
    assert "protocol:  2026-07-28" in out and "Tools (" in out and "write_poem" in out


def test_call_prints_the_result() -> None:
    code, out = run("call", "add", "--args", '{"a": 20, "b": 22}', "--", *SERVER)
    assert (code, out.strip()) == (0, '{"result": 42}')
    code, out = run("call", "add", "--mode", "handshake", "--json", "--args", '{"a": 1, "b": 1}', "--", *SERVER)
    assert code == 0 and json.loads(out)["structuredContent"] == {"result": 2}


def test_call_of_a_failing_tool_exits_non_zero() -> None:
    code, out = run("call", "fail", "--", *SERVER)
    assert code == 1 and "something went wrong" in out


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("import sys; sys.exit(3)", "closed the connection"),
        ("import time; time.sleep(60)", "did not answer in time"),
        ("import sys, time; print('hello, not json'); sys.stdout.flush(); time.sleep(60)", "not JSON"),
        ("raise SystemExit('crash on start')", "closed the connection"),
    ],
)
def test_broken_servers_get_a_clear_message(script: str, message: str) -> None:
    code, out = run("inspect", "--timeout", "1.5", "--", sys.executable, "-c", script)
    assert code == 1
    assert message in out
    assert "Traceback" not in out


def test_a_crashing_servers_own_message_is_shown() -> None:
    """Defect: `call` and `inspect` discarded the server's stderr, so a crashing server's own
    message was lost; its last lines are shown when it dies."""
    script = "import sys\nprint('starting', file=sys.stderr)\nraise RuntimeError('the config file is missing')\n"
    for args in (("inspect",), ("call", "add")):
        code, out = run(*args, "--", sys.executable, "-c", script)
        assert code == 1
        assert "closed the connection" in out and "RuntimeError: the config file is missing" in out, out
        assert "starting" in out


RECORDING_HUNG_SERVER = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    with open({path!r}, 'a') as seen:\n"
    "        seen.write(json.loads(line).get('method', '-') + '\\n')\n"
)


def test_a_hung_server_gets_one_timeout_for_connecting_not_one_per_step(tmp_path: Path) -> None:
    """Defect: `--timeout 5` against a hung server took 12.4 s: the probe waited the whole timeout,
    then initialize waited it again. The timeout bounds connecting as a whole: a server that
    answers nothing within it is not sent initialize at all."""
    seen = tmp_path / "seen.txt"
    script = RECORDING_HUNG_SERVER.format(path=str(seen))
    code, out = run("inspect", "--timeout", "1", "--", sys.executable, "-c", script)
    assert code == 1 and "did not answer in time" in out
    assert seen.read_text().split() == ["server/discover", "ping"]


def test_bad_arguments() -> None:
    code, out = run("call", "add", "--args", "{nope", "--", *SERVER)
    assert code == 2 and "not JSON" in out
    code, out = run("call", "add", "--args", "[1]", "--", *SERVER)
    assert code == 2 and "JSON object" in out
    code, out = run("inspect")
    assert code == 2 and "server command" in out
    code, out = run("inspect", "--mode", "1999-01-01", "--", *SERVER)
    assert code == 2 and "mode must be" in out
    code, out = run("inspect", "--", "/no/such/command")
    assert code == 1 and "cannot start the server" in out


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("mcpgen")), "--help"], capture_output=True, text=True, check=True
    )
    assert "inspect" in done.stdout and "call" in done.stdout and "generate" in done.stdout


TOOLS_ONLY = (
    "import sys; sys.path.insert(0, {repo!r})\n"
    "from mcpgen.runtime import Server, ServerAdvertising\n"
    "server = Server('tools-only', advertising=ServerAdvertising(logging=False))\n"
    "server.add_tool(lambda: 'x', name='only')\n"
    "server.run_stdio()\n"
)


def test_inspect_with_a_pinned_version_lists_a_server_that_lacks_features() -> None:
    script = TOOLS_ONLY.format(repo=str(REPO))
    code, out = run("inspect", "--mode", "2026-07-28", "--json", "--", sys.executable, "-c", script)
    assert code == 0, out
    report = json.loads(out)
    assert [t["name"] for t in report["tools"]] == ["only"]
    assert report["prompts"] == [] and report["resources"] == []


LIST_OF_MODELS = (
    "import sys; sys.path.insert(0, {repo!r})\n"
    "from pydantic import BaseModel\n"
    "from mcpgen.runtime import Server\n"
    "class Item(BaseModel):\n"
    "    name: str\n"
    "server = Server('items')\n"
    "@server.tool()\n"
    "def items() -> list[Item]:\n"
    "    return [Item(name='a')]\n"
    "@server.tool()\n"
    "def maybe() -> Item | None:\n"
    "    return Item(name='b')\n"
    "server.run_stdio()\n"
)


@pytest.mark.parametrize("mode", ["handshake", "auto"])
def test_call_of_a_tool_returning_a_list_of_models(mode: str) -> None:
    """Defect: the advertised outputSchema's `$ref`s pointed at nothing, and `mcpgen call` exited 1."""
    script = LIST_OF_MODELS.format(repo=str(REPO))
    code, out = run("call", "items", "--mode", mode, "--json", "--", sys.executable, "-c", script)
    assert code == 0, out
    assert json.loads(out)["structuredContent"] == {"result": [{"name": "a"}]}
    code, out = run("call", "maybe", "--mode", mode, "--json", "--", sys.executable, "-c", script)
    assert code == 0, out
    assert json.loads(out)["structuredContent"] == {"result": {"name": "b"}}


# -- progress, logs and input ------------------------------------------------------------------------


def run_split(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("mode", ["handshake", "2026-07-28"])
def test_call_shows_progress_and_log_messages_as_they_arrive(mode: str) -> None:
    code, out, err = run_split("call", "long_task", "--mode", mode, "--args", '{"steps": 2}', "--", *SERVER)
    assert code == 0 and out.strip() == "finished 2 steps"
    assert "progress 1/2: step 1 of 2" in err and "progress 2/2: step 2 of 2" in err
    assert '[info] {"step": 1}' in err and '[info] {"step": 2}' in err


@pytest.mark.parametrize("mode", ["handshake", "2026-07-28"])
def test_call_answers_a_form_from_the_command_line(mode: str) -> None:
    args = ("call", "confirm_action", "--mode", mode, "--args", '{"action": "deploy"}')
    code, out, _ = run_split(*args, "--answer", "confirm=true", "--answer", "reason=tested", "--", *SERVER)
    assert (code, out.strip()) == (0, "deploy: confirmed (tested)")
    code, out, err = run_split(*args, "--", *SERVER)
    assert (code, out.strip()) == (0, "deploy: declined by the user")
    assert "--answer confirm=JSON" in err


def test_call_answers_url_sampling_and_roots_requests() -> None:
    code, out, err = run_split("call", "connect_account", "--accept-all", "--", *SERVER)
    assert (code, out.strip()) == (0, "sign-in accept") and "https://example.com/signin" in err
    code, out, err = run_split(
        "call", "summarize", "--args", '{"text": "long"}', "--sample-reply", "short", "--", *SERVER
    )
    assert (code, out.strip()) == (0, "summary: short") and "Summarise in one line: long" in err
    code, out, _ = run_split("call", "client_roots", "--root", "file:///a", "--root", "file:///b", "--", *SERVER)
    assert (code, out.split()) == (0, ["file:///a", "file:///b"])


def test_a_form_is_answered_field_by_field_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpgen.runtime.cli import commands  # imported before the patch, which it would copy otherwise
    from mcpgen.runtime.cli import prompts as cli_input

    monkeypatch.setattr(cli_input, "is_terminal", lambda: True)
    monkeypatch.setattr(commands, "is_terminal", lambda: True)
    code, out, err = run_split(
        "call", "confirm_action", "--args", '{"action": "ship"}', "--", *SERVER, stdin="\ny\nbecause\n"
    )
    assert (code, out.strip()) == (0, "ship: confirmed (because)"), err


def test_inspect_text_shows_each_tools_arguments() -> None:
    code, out = run("inspect", "--", *SERVER)
    assert code == 0
    assert "add(a: integer, b: integer)" in out and "long_task(steps?: integer)" in out
    assert "write_poem(topic, tone?)" in out


# -- answering on the command line: decline, cancel, interrupt, usage errors --------------------------------


@pytest.mark.parametrize("mode", ["handshake", "2026-07-28"])
def test_forms_and_url_requests_can_be_declined_or_cancelled_off_a_terminal(mode: str) -> None:
    """Defect: there was no way to decline or cancel, and URL requests were accepted off a terminal
    without `--accept-all`."""
    form = ("call", "confirm_action", "--mode", mode, "--args", '{"action": "deploy"}')
    code, out, err = run_split(*form, "--decline-all", "--", *SERVER)
    assert (code, out.strip()) == (0, "deploy: declined by the user") and "declined (--decline-all)" in err
    code, out, _ = run_split(*form, "--cancel-all", "--", *SERVER)
    assert (code, out.strip()) == (0, "deploy: cancelled by the user")
    code, out, err = run_split("call", "connect_account", "--mode", mode, "--", *SERVER)
    assert (code, out.strip()) == (0, "sign-in decline") and "--accept-all" in err
    code, out, _ = run_split("call", "connect_account", "--mode", mode, "--cancel-all", "--", *SERVER)
    assert (code, out.strip()) == (0, "sign-in cancel")
    code, _, err = run_split(*form, "--accept-all", "--decline-all", "--", *SERVER)
    assert code == 2 and "at most one of" in err


@pytest.mark.parametrize("mode", ["handshake", "2026-07-28"])
def test_a_wrongly_typed_answer_is_a_usage_error(mode: str) -> None:
    """Defect: `--answer confirm=maybe` for a boolean field was reported as the server's internal error."""
    args = ("call", "confirm_action", "--mode", mode, "--args", '{"action": "deploy"}')
    code, out, err = run_split(*args, "--answer", "confirm=maybe", "--", *SERVER)
    assert code == 2, (out, err)
    assert "Invalid value for --answer" in err and 'confirm="maybe"' in err and "boolean" in err
    assert "the server answered with an error" not in err and "Internal error" not in err and out == ""
    assert "Traceback" not in err and "failed" not in err


def test_an_unknown_log_level_is_a_usage_error_before_anything_starts() -> None:
    code, out, err = run_split("call", "echo", "--log-level", "loud", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert code == 2, (out, err)
    assert "Invalid value for --log-level" in err and "log_level must be one of" in err
    assert "Traceback" not in err and out == ""


class Terminal:
    """`mcpgen` run with a pseudo-terminal as its stdin (so it asks there); stdout and stderr piped."""

    def __init__(self, *args: str) -> None:
        import pty

        self.master, slave = pty.openpty()
        command = [str(Path(sys.executable).parent / "mcpgen"), *args]
        self.proc = subprocess.Popen(command, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        os.close(slave)
        self.err = b""

    def wait_for(self, text: str, timeout: float = 60, since: int = 0) -> None:
        """Read stderr until `text` appeared (prompts end without a newline)."""
        self.wait_for_any([text], timeout, since)

    def wait_for_any(self, texts: list[str], timeout: float = 60, since: int = 0) -> None:
        """Read stderr until one of `texts` appeared after its first `since` bytes."""
        import selectors

        assert self.proc.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while not any(text.encode() in self.err[since:] for text in texts):
            if not selector.select(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"none of {texts!r} within {timeout} s: {self.err.decode(errors='replace')}")
            chunk = os.read(self.proc.stderr.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"mcpgen exited: {self.err.decode(errors='replace')}")
            self.err += chunk
        selector.close()

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        """Wait for the command (a hang guard: killed after `timeout`); its status, stdout, stderr."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(
                f"still running after {timeout} s: {(self.err + err).decode(errors='replace')}"
            ) from None
        finally:
            os.close(self.master)
        return self.proc.returncode, out.decode(errors="replace"), (self.err + err).decode(errors="replace")


CONFIRM = ("call", "confirm_action", "--args", '{"action": "ship"}', "--", *SERVER)
QUESTION = "answer (a), decline (d) or cancel (c)?"


def test_ctrl_c_at_a_prompt_stops_the_command_at_once() -> None:
    """Defect: Ctrl-C at a prompt was swallowed until the next answer."""
    terminal = Terminal(*CONFIRM)
    terminal.wait_for(QUESTION)
    terminal.proc.send_signal(signal.SIGINT)
    code, out, err = terminal.finish()
    assert code == 130 and "interrupted" in err and "Traceback" not in err and out == ""


def test_ctrl_d_at_a_prompt_cancels_that_question() -> None:
    """Defect: Ctrl-D at a prompt printed "unexpected Abort"."""
    terminal = Terminal(*CONFIRM)
    terminal.wait_for(QUESTION)
    terminal.type(b"\x04")
    code, out, err = terminal.finish()
    assert (code, out.strip()) == (0, "ship: cancelled by the user"), err
    assert "Abort" not in err


@pytest.mark.parametrize(("key", "said"), [(b"d\n", "declined"), (b"c\n", "cancelled")])
def test_a_form_can_be_declined_or_cancelled_on_the_terminal(key: bytes, said: str) -> None:
    terminal = Terminal(*CONFIRM)
    terminal.wait_for(QUESTION)
    terminal.type(key)
    code, out, _ = terminal.finish()
    assert (code, out.strip()) == (0, f"ship: {said} by the user")


@pytest.mark.parametrize(("key", "said"), [(b"\n", "accept"), (b"d\n", "decline"), (b"c\n", "cancel")])
def test_a_url_request_is_accepted_declined_or_cancelled_on_the_terminal(key: bytes, said: str) -> None:
    terminal = Terminal("call", "connect_account", "--", *SERVER)
    terminal.wait_for("open it (a), decline (d) or cancel (c)?")
    terminal.type(key)
    code, out, err = terminal.finish()
    assert (code, out.strip()) == (0, f"sign-in {said}") and "https://example.com/signin" in err


def test_requests_asked_together_are_asked_one_at_a_time() -> None:
    """`plan_trip` asks for a form and a model reply at once (answered concurrently): on a terminal
    they are shown and asked one after the other, never two prompts reading the same keyboard."""
    args = ("call", "plan_trip", "--json", "--args", '{"city": "Oslo"}', "--root", "file:///trips", "--", *SERVER)
    terminal = Terminal(*args)
    replies = {QUESTION: b"\n", "nights:": b"3\n", "as the model:": b"museums\n"}
    since = 0
    while replies:
        terminal.wait_for_any(list(replies), since=since)
        shown = [prompt for prompt in replies if prompt.encode() in terminal.err[since:]]
        assert len(shown) == 1, terminal.err[since:].decode()
        since = len(terminal.err)
        terminal.type(replies.pop(shown[0]))
    code, out, err = terminal.finish()
    assert code == 0, err
    form = (err.index("The server asks: When do you travel"), err.index("nights:"))
    reply = (err.index("user: Three things to do"), err.index("as the model:"))
    assert form[1] < reply[0] or reply[1] < form[0], err  # one after the other
    result = json.loads(out)["structuredContent"]
    assert (result["nights"], result["ideas"], result["save_to"]) == (3, "museums", ["file:///trips"])


def test_an_optional_field_typed_wrongly_on_the_terminal_is_asked_again() -> None:
    """Defect: an optional number field answered `many` ended the command with "unexpected ValueError"."""
    from mcpgen.runtime.cli.prompts import ask_field

    with CliRunner().isolation(input="many\n4\n") as streams:
        value = ask_field("guests", {"type": "integer"}, False)
    assert value == 4
    assert "'many' is not a valid integer" in streams[1].getvalue().decode()
