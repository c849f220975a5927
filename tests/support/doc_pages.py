"""Running a documentation page's code blocks, in order, as a reader would (tests/docs).

A page is a Markdown file (the README, or a page of the site under docs/). Its fenced blocks:

- ```python blocks run in one namespace per page, as in an async REPL (`python -m asyncio`:
  top-level `await` and `async with` are fine);
- a block with a file name (```python title="server.py", or the README's ```python file=server.py)
  is written to that file in the page's project folder instead of being run (a toml or json one is
  parsed first);
- ```sh blocks run line by line in the project folder, each to exit 0 (or N, when its comment
  says `exits N`); a line ending in `&` is a server, started in the background, and the runner
  waits for the port its `--port`, `--bind` or `--dev-addr` names (and stops it when the page is
  done); the lines that make the environment the tests run in (`pip install`, `.ci/...`, the test
  command itself) are not run again; `mypy` and `pyright` see mcpgen as a wheel lays it out
  (`wheel_layout`);
- ```toml and ```json blocks must parse; ```text and ```nginx blocks (layouts, a proxy's
  configuration) are not run, except that a text block titled "Output" (```text title="Output")
  must be what the block before it printed (a Python block, or the last command of a shell block,
  standard output and error as a terminal shows them);
- any other language is refused, so a block cannot dodge the runner by its spelling (`bash`, `py`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import io
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

import anyio

from support.processes import redis_binary

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
ENVIRONMENT = ("pip install", ".ci/", ".venv/bin/python -m pytest")
LANGUAGES = {"python", "sh", "toml", "json", "text", "nginx"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TYPE_CHECKERS = ("mypy", "pyright")
LISTENS = re.compile(r"--(?:port[ =](?P<port>\d+)|(?:bind|dev-addr)[ =]\S*:(?P<addr_port>\d+))")


@dataclass(frozen=True)
class Block:
    lang: str
    attrs: dict[str, str]
    code: str
    line: int
    page: str

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"

    @property
    def is_output(self) -> bool:
        return self.lang == "text" and self.attrs.get("title") == "Output"

    @property
    def file(self) -> str | None:
        """The file this block is (`title="NAME"` on the site, `file=NAME` in the README)."""
        if self.is_output:
            return None
        return self.attrs.get("title") or self.attrs.get("file")


def blocks(path: Path) -> Iterator[Block]:
    text = path.read_text(encoding="utf-8")
    page = str(path.relative_to(REPO))
    for match in FENCE.finditer(text):
        info = shlex.split(match.group(1))
        lang = info[0] if info else ""
        attrs = dict(part.split("=", 1) for part in info[1:] if "=" in part)
        yield Block(lang, attrs, match.group(2), text.count("\n", 0, match.start()) + 1, page)


def commands(code: str) -> Iterator[tuple[str, int]]:
    """The shell lines of a block, each with the exit status it must have: 0, or N when its
    comment says `exits N`. Comments dropped, `\\` continuations joined."""
    pending = ""
    for raw in code.splitlines():
        line, _, comment = raw.partition(" #") if not raw.lstrip().startswith("#") else ("", "", raw)
        line = line.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            status = re.search(r"\bexits (\d+)", comment)
            yield line, int(status.group(1)) if status else 0


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {seconds} s")


def base_environment() -> dict[str, str]:
    """The environment a page's commands run in: this interpreter's scripts first on PATH, and the
    schema sources `.ci/setup` recorded (what a reader sets up by following the README)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    source = (REPO / ".schema-source").read_text().strip() if (REPO / ".schema-source").is_file() else None
    env.setdefault("MCPGEN_SCHEMA_SOURCE", source or str(REPO.parent / "shared" / "mcp-schema"))
    ext_source = (REPO / ".ext-source").read_text().strip() if (REPO / ".ext-source").is_file() else None
    if ext_source:  # the pinned extensions' source, as .ci/setup found it (else the schema source's extensions/)
        env.setdefault("MCPGEN_EXT_SOURCE", ext_source)
    return env


@functools.cache
def wheel_layout() -> str:
    """A folder where `mcpgen` is laid out as a wheel installs it (links to this checkout's folders).

    The editable install maps the checkout's folders onto `mcpgen.*` with an import hook that type
    checkers cannot follow, so a page's `mypy` and `pyright` commands get this folder on their
    PYTHONPATH: they then see mcpgen as a reader who installed it from PyPI does."""
    root = Path(tempfile.mkdtemp(prefix="mcpgen-wheel-layout-"))
    (root / "mcpgen").mkdir()
    for name in ("codegen", "generated", "runtime", "schema"):
        (root / "mcpgen" / name).symlink_to(REPO / name, target_is_directory=True)
    return str(root)


@dataclass
class PageRun:
    """One page's run: its project folder, its namespace, the servers it started."""

    project: Path
    env: dict[str, str] = field(default_factory=base_environment)
    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__docs__"})
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ran: int = 0
    printed: str | None = None  # what the last Python block or shell command wrote to standard output

    def run(self, block: Block) -> None:
        if block.lang not in LANGUAGES:
            raise AssertionError(f"{block.where}: a ```{block.lang} block; use one of {sorted(LANGUAGES)}")
        if block.lang == "toml":
            tomllib.loads(block.code)
        elif block.lang == "json":
            json.loads(block.code)
        if block.file is not None:
            target = self.project / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
        elif block.lang == "python":
            self.run_python(block)
        elif block.lang == "sh":
            self.run_sh(block)
        elif block.is_output:
            assert self.printed is not None, f"{block.where}: an Output block follows no command"
            shown, printed = block.code.strip().splitlines(), self.printed.strip().splitlines()
            assert shown == printed, f"{block.where}: the command printed\n{self.printed}"
        elif block.lang == "text":
            return
        self.ran += 1

    def run_python(self, block: Block) -> None:
        code: CodeType = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = eval(code, self.namespace)  # top-level await makes a coroutine
            if result is not None:
                anyio.run(lambda: result)
        self.printed = printed.getvalue()

    def run_sh(self, block: Block) -> None:
        for line, status in commands(block.code):
            if line.startswith(ENVIRONMENT):
                continue
            if line.endswith("&"):
                self.start(block, line[:-1].strip())
                continue
            env = self.env
            if line.split()[0] in TYPE_CHECKERS:
                env = {**env, "PYTHONPATH": wheel_layout()}
            done = subprocess.run(
                line,
                check=False,
                shell=True,
                cwd=self.project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,  # as a terminal shows them
                text=True,
                timeout=600,
            )
            assert done.returncode == status, f"{block.where}: `{line}` exited {done.returncode}:\n{done.stdout}"
            self.printed = done.stdout

    def start(self, block: Block, line: str) -> None:
        """Start a background server (through the shell: `NAME=value` prefixes and `$(...)` work)
        in a process group of its own, and wait until its port accepts connections."""
        listens = LISTENS.search(line)
        assert listens, f"{block.where}: a background server names its --port (or --bind/--dev-addr HOST:PORT)"
        port = int(listens.group("port") or listens.group("addr_port"))
        program = next(word for word in shlex.split(line) if not ASSIGNMENT.match(word))
        if program == "redis-server":
            redis_binary(f"{block.where}: ")
        log = Path(tempfile.mkdtemp(prefix="mcpgen-docs-")) / "server.log"
        with log.open("wb") as output:  # a file, not a pipe: a chatty server never blocks on it
            process = subprocess.Popen(
                line, shell=True, cwd=self.project, env=self.env, stdout=output, stderr=output, start_new_session=True
            )
        self.servers.append(process)
        try:
            wait_for_port(port, process)
        except AssertionError as exc:
            raise AssertionError(f"{block.where}: `{line}`: {exc}\n{log.read_text(errors='replace')}") from None

    def close(self) -> None:
        for server in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        # the page's own modules (`import server`) must not leak into the next page's run
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None)
            if origin and Path(origin).resolve().is_relative_to(self.project.resolve()):
                del sys.modules[name]


def run_page(path: Path, project: Path) -> int:
    """Run every block of the page at `path` in order, in `project` (the current directory and first
    on sys.path); the number of blocks run."""
    run = PageRun(project)
    try:
        for block in blocks(path):
            run.run(block)
    finally:
        run.close()
    return run.ran


REPL_MODULE = "docs_repl.py"  # a page's blocks without a file name, as one module for the type checkers
# a name the REPL leaves for the reader to look at is no unused local variable
REPL_FUNCTION = "# pyright: reportUnusedVariable=false\nasync def typed_repl() -> None:\n"


def has_top_level_await(code: str) -> bool:
    try:
        compile(code, "<block>", "exec", flags=ast.PyCF_ONLY_AST)
        compile(code, "<block>", "exec")
    except SyntaxError:
        compile(code, "<block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # still a SyntaxError if broken
        return True
    return False


def refused_by_checkers(path: Path) -> set[str]:
    """The files a page shows a type checker refusing (`mypy wrong.py  # exits 1`): they are wrong on purpose."""
    refused = set()
    for block in blocks(path):
        if block.lang == "sh":
            for line, status in commands(block.code):
                words = line.split()
                if status and words[0] in TYPE_CHECKERS:
                    refused |= {word for word in words[1:] if word.endswith(".py")}
    return refused


def imports_what_the_page_makes(code: str, files: set[str]) -> bool:
    """Whether the code imports a module that neither the environment nor the page's files provide:
    one the page's commands make (`mcpgen generate` writes `generated/`). Such a block is run, by
    `run_page`, but not type-checked on its own."""
    tree = ast.parse(code)
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    tops = {name.partition(".")[0] for name in names if f"{name.partition('.')[0]}.py" not in files}
    return not all(map(installed, tops))


def installed(top: str) -> bool:
    """Whether a reader's environment has the module: installed, not a file or folder of this
    checkout (the tests run from it, so its `generated/` or `tests/server/` would otherwise count)."""

    def in_checkout(place: str) -> bool:
        path = Path(place).resolve()
        return path.is_relative_to(REPO) and not path.is_relative_to(Path(sys.prefix).resolve())

    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if not (Path(entry or ".").is_dir() and in_checkout(entry or "."))]
    try:
        spec = importlib.util.find_spec(top)
    finally:
        sys.path[:] = saved
    places = [] if spec is None else [spec.origin or "", *(spec.submodule_search_locations or ())]
    return spec is not None and not any(Path(place).is_absolute() and in_checkout(place) for place in places)


def write_typed_sources(path: Path, folder: Path) -> list[Path]:
    """The page's Python as a user would type-check it, written into `folder`: each named file as
    itself, and the blocks an async REPL runs as one module (`docs_repl.py`), in page order, inside
    one `async def` when they await at the top level (as `python -m asyncio` runs them). The files
    the page shows a checker refusing are left out. The files written."""
    refused = refused_by_checkers(path)
    written: list[Path] = []
    repl: list[str] = []
    files = {block.file for block in blocks(path) if block.file is not None}
    for block in blocks(path):
        if block.lang != "python" or imports_what_the_page_makes(block.code, files):
            continue
        if block.file is None:
            repl.append(f"# {block.where}\n{block.code}")
        elif block.file not in refused:
            target = folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            written.append(target)
    if repl:
        code = "\n".join(repl)
        if has_top_level_await(code):
            future = [line for line in code.splitlines() if line.startswith("from __future__ import")]
            body = "\n".join(line for line in code.splitlines() if line not in future)
            code = "".join(f"{line}\n" for line in future) + REPL_FUNCTION + textwrap.indent(body, "    ")
        target = folder / REPL_MODULE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code + "\n", encoding="utf-8")
        written.append(target)
    return written
