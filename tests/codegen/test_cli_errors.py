"""`mcpgen` refuses bad arguments and missing inputs the way a command line should: on stderr,
after `Error:`, with exit status 2 for usage and 1 for the rest, saying what to do next; never a
traceback, and never on stdout (which is for what a command was asked to print)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcpgen.codegen.cli import main


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def refused(result: Result, status: int) -> str:
    assert result.exit_code == status, (result.exit_code, result.output)
    assert result.stdout == "", "errors never go to stdout"
    assert "Error: " in result.stderr
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "userapp"\nversion = "0"\n')
    monkeypatch.chdir(tmp_path)
    for name in ("MCPGEN_SCHEMA_DIR", "MCPGEN_SCHEMA_SOURCE", "MCPGEN_RAW_BASE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["init", "--bogus"],
        ["sync", "--bogus"],
        ["generate", "--bogus"],
        ["generate", "--jobs", "0"],
        ["generate", "--jobs", "x"],
        ["methods"],
        ["diff", "2025-11-25"],
        ["nosuchcommand"],
        # the commands the runtime registers
        ["inspect", "--url"],
        ["call"],
        ["serve"],
        ["logout"],
    ],
    ids=" ".join,
)
def test_usage_errors_go_to_stderr(project: Path, args: list[str]) -> None:
    refused(invoke(*args), 2)


def test_an_empty_source_is_a_usage_error(project: Path) -> None:
    err = refused(invoke("sync", "--from", ""), 2)
    assert "--from" in err and "empty" in err


def test_a_bad_version_is_refused_in_one_line(project: Path) -> None:
    invoke("init")
    err = refused(invoke("sync", "--version", "bogus"), 1)
    assert "'bogus' is not a dated version" in err
    assert len(err.strip().splitlines()) == 1


def test_init_into_a_folder_it_cannot_make(project: Path) -> None:
    (project / "afile").write_text("")
    err = refused(invoke("init", "--schema-dir", str(project / "afile" / "schema")), 1)
    assert "cannot write" in err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sync_without_network_says_how_to_sync_from_a_copy(project: Path) -> None:
    invoke("init")
    err = refused(invoke("sync", "--version", "2025-11-25", "--raw-base", f"http://127.0.0.1:{closed_port()}"), 1)
    assert "cannot fetch" in err
    assert "--from" in err and "MCPGEN_SCHEMA_SOURCE" in err


def test_a_missing_schema_says_where_what_to_run_and_which_versions_are_known(project: Path) -> None:
    invoke("init")
    for args in (["methods", "2026-07-28"], ["generate", "--version", "2026-07-28"]):
        err = refused(invoke(*args), 1)
        assert err.count("schema/2026-07-28/schema.json") == 1, "the path once"
        assert "`mcpgen sync`" in err
        assert "known versions: 2025-11-25, 2026-07-28" in err
