"""The documentation site (mkdocs.yml, docs/) cannot drift from the code.

- every Python and shell block of every page runs, in order, in a fresh project folder (see
  support/doc_pages.py for how each kind of block runs);
- the navigation lists every page;
- the reference has a mkdocstrings entry for every public name of `mcpgen.runtime` and
  `mcpgen.runtime.auth`, a section for every command of `mcpgen`, a row for every environment
  variable the code reads, and an error table whose codes and HTTP statuses are the code's.

The strict build itself (`mkdocs build --strict`: broken links, missing references) runs in
.ci/run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import mcpgen.runtime
import mcpgen.runtime.auth
import pytest
import yaml
from mcpgen.codegen.cli import main
from mcpgen.runtime.protocol import errors
from support.doc_pages import REPO, run_page

DOCS = REPO / "docs"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.relative_to(DOCS).parts)
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.MULTILINE)


def page_id(path: Path) -> str:
    return str(path.relative_to(DOCS))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")  # the pages run the repository's example servers
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_of_the_page_runs(page: Path, project: Path) -> None:
    run_page(page, project)


def nav_pages(entries: object) -> set[str]:
    found: set[str] = set()
    if isinstance(entries, str):
        found.add(entries)
    elif isinstance(entries, list):
        for entry in entries:
            found |= nav_pages(entry)
    elif isinstance(entries, dict):
        for value in entries.values():
            found |= nav_pages(value)
    return found


def test_the_navigation_lists_every_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = nav_pages(config["nav"])
    pages = {page_id(page) for page in PAGES}
    assert pages - listed == set(), "pages missing from the nav of mkdocs.yml"
    assert listed - pages == set(), "the nav names pages that do not exist"


def documented() -> set[str]:
    names: set[str] = set()
    for page in (DOCS / "reference").glob("*.md"):
        names |= set(DIRECTIVE.findall(page.read_text(encoding="utf-8")))
    return names


@pytest.mark.parametrize("module", [mcpgen.runtime, mcpgen.runtime.auth], ids=lambda m: m.__name__)
def test_the_reference_has_every_public_name(module: object) -> None:
    public = {f"{module.__name__}.{name}" for name in module.__all__}  # type: ignore[attr-defined]
    assert public - documented() == set(), "public names without a `::: name` entry in docs/reference"


def cli_page_commands() -> set[str]:
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    found = set()
    for directive in re.findall(r"^::: mkdocs-click\n((?:    :.*\n)+)", text, re.MULTILINE):
        options = dict(re.findall(r":(\w+): (.+)", directive))
        group = getattr(__import__(options["module"], fromlist=["_"]), options["command"])
        if isinstance(group, click.Group) and int(options.get("depth", "0")) < 2:
            found |= set(group.commands)  # mkdocs-click renders the group's own commands
        else:
            found.add(group.name)
    return found


def test_the_cli_page_shows_every_command() -> None:
    with click.Context(main) as ctx:
        commands = set(main.list_commands(ctx))
    assert commands - cli_page_commands() == set(), "commands missing from docs/reference/cli.md"


def environment_variables() -> set[str]:
    """The `MCPGEN_*` names the shipped code reads (string constants in its source)."""
    found: set[str] = set()
    for folder in ("runtime", "codegen", "build_backend"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found |= set(re.findall(r"\bMCPGEN_[A-Z_]+\b", node.value))
    return found


def test_the_configuration_page_has_every_environment_variable() -> None:
    variables = environment_variables()
    assert {"MCPGEN_SCHEMA_SOURCE", "MCPGEN_STATE_KEYS", "MCPGEN_SERVER"} <= variables  # the scan works
    text = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(MCPGEN_[A-Z_]+)` \|", text, re.MULTILINE))
    assert variables - rows == set(), "environment variables missing from docs/reference/configuration.md"
    assert rows - variables == set(), "documented environment variables the code does not read"


def table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_error_table_is_the_codes_and_statuses_of_the_code() -> None:
    text = (DOCS / "reference" / "errors.md").read_text(encoding="utf-8")
    rows = table_rows(text, "| error | code | HTTP status")
    listed = {}
    for name, code, status, _ in rows:
        cls = getattr(errors, name.strip("`"))
        assert issubclass(cls, errors.McpError)
        assert int(code) == cls.code, f"{name}: the code is {cls.code}"
        assert int(status) == errors.http_status(cls.code), f"{name}: the HTTP status is {errors.http_status(cls.code)}"
        listed[cls] = int(code)
    wire_errors = {cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, errors.McpError)}
    wire_errors -= {errors.McpError, errors.SchemaDefinedError}
    assert wire_errors - set(listed) == set(), "McpError subclasses missing from the table"


def error_type(name: str) -> type[BaseException]:
    for module in (mcpgen.runtime, mcpgen.runtime.auth, errors):
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
    raise AssertionError(f"no error type {name}")


def test_the_error_tables_have_every_error_type_with_its_bases() -> None:
    text = (DOCS / "reference" / "errors.md").read_text(encoding="utf-8")
    rows = table_rows(text, "| error | derives from")
    rows += table_rows(text[text.index("The authorization errors") :], "| error | derives from")
    rows += [[row[0], "`McpError`"] for row in table_rows(text, "| error | code | HTTP status")]
    seen = set()
    for name, derives, *_ in rows:
        cls = error_type(name.strip("`"))
        bases = {base.__name__ for base in cls.__bases__}
        if bases == {"SchemaDefinedError"}:  # an McpError whose code a schema fixes
            bases = {"McpError"}
        assert {base.strip(" `") for base in derives.split(",")} == bases, f"{name} derives from {sorted(bases)}"
        seen.add(cls.__name__)
    public = {
        name
        for module in (mcpgen.runtime, mcpgen.runtime.auth)
        for name in module.__all__
        if isinstance(getattr(module, name), type) and issubclass(getattr(module, name), errors.McpRuntimeError)
    }
    assert public - seen - {"McpRuntimeError", "McpError"} == set(), "error types missing from the tables"
