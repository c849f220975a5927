"""The CLI in a user's project: folders relative to the project, `init`, `sync` from the pins'
own repositories, pin checks that are never silently off, `diff` of any two files, hints that
work as printed."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shlex
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcpgen.codegen import cli as cli_module
from mcpgen.codegen.cli import main
from mcpgen.codegen.project import PACKAGED_DATA
from mcpgen.codegen.sync import extension_file, read_extension_pins, read_pins

VERSIONS = ("2025-11-25", "2026-07-28")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


def after(text: str, marker: str) -> str:
    """The `command` printed (in backquotes) right after `marker`."""
    rest = text.replace("\n", " ").split(marker, 1)[1]
    assert rest.startswith("`"), rest
    return rest[1:].split("`", 1)[0]


def run_printed(command: str) -> Result:
    argv = shlex.split(command)
    assert argv[0] == "mcpgen", command
    return CliRunner().invoke(main, argv[1:])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user project (a pyproject.toml, nothing else), as the current directory."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "userapp"\nversion = "0"\n')
    monkeypatch.chdir(root)
    monkeypatch.delenv("MCPGEN_SCHEMA_DIR", raising=False)
    monkeypatch.delenv("MCPGEN_SCHEMA_SOURCE", raising=False)
    monkeypatch.delenv("MCPGEN_RAW_BASE", raising=False)
    monkeypatch.delenv("MCPGEN_EXT_SOURCE", raising=False)
    return root


@pytest.fixture
def source(tmp_path: Path, schema_dir: Path) -> Path:
    """A schema source folder laid out as <version>/schema.json, with the pinned extensions under
    extensions/<name>/<release>/schema.json (a synced schema folder has this layout)."""
    for version in VERSIONS:
        (tmp_path / "source" / version).mkdir(parents=True)
        shutil.copy(schema_dir / version / "schema.json", tmp_path / "source" / version / "schema.json")
    for pin in read_extension_pins(PACKAGED_DATA):
        target = tmp_path / "source" / extension_file(Path(), pin)
        target.parent.mkdir(parents=True)
        shutil.copy(extension_file(schema_dir, pin), target)
    return tmp_path / "source"


# -- project folders -----------------------------------------------------------------------------


def test_version_option() -> None:
    out = ok("--version")
    assert out.startswith("mcpgen ") and out.split()[1][0].isdigit()


def test_init_sync_generate_stay_in_the_project(project: Path, source: Path) -> None:
    (project / "sub").mkdir()
    out = ok("init")
    assert "schema/versions.toml" in out and "next: mcpgen sync && mcpgen generate" in out
    pins = read_pins(project / "schema")
    assert [(p.version, p.sha256, p.commit) for p in pins] == [
        (p.version, p.sha256, p.commit) for p in read_pins(PACKAGED_DATA)
    ]
    assert invoke("init").exit_code == 1, "init does not overwrite without --force"

    ok("sync", "--from", str(source))
    assert (project / "schema" / "2025-11-25" / "schema.json").is_file()

    first = invoke("generate", "--version", "2025-11-25")
    assert first.exit_code == 0, first.output
    assert first.stdout == "", "progress goes to stderr"
    lines = first.stderr.splitlines()
    assert lines[0] == "generating 2025-11-25"
    assert lines[1].startswith("2025-11-25: generated in ") and lines[1].endswith(" schema fixes applied)")
    assert lines[-1].startswith(f"wrote {project / 'generated'}: generated 2025-11-25 in ")
    assert len(lines) == 3, "a fresh run says no fix outcome (some fixes are for other versions)"
    assert (project / "generated" / "v2025_11_25" / "models" / "__init__.py").is_file()
    assert (project / "generated" / "types.py").is_file()
    assert ok("generate", "--version", "2025-11-25") == "", "nothing changed: nothing printed"
    assert ok("generate", "--version", "2025-11-25", "--force", "-q") == "", "-q: nothing but errors"
    verbose = invoke("generate", "--version", "2025-11-25", "--force", "-v").stderr
    assert "2025-11-25: fix " in verbose and " matched nothing" in verbose and " applied at " in verbose


def test_pyproject_table_sets_the_folders(project: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "userapp"\nversion = "0"\n\n'
        '[tool.mcpgen]\nschema-dir = "mcp/pins"\nout = "src/userapp/mcp"\n'
    )
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")  # any folder of the project
    ok("init")
    assert (project / "mcp" / "pins" / "versions.toml").is_file()
    ok("sync", "--from", str(source), "--version", "2025-11-25")
    assert (project / "mcp" / "pins" / "2025-11-25" / "schema.json").is_file()
    rows = json.loads(ok("methods", "2025-11-25", "--json"))
    assert any(r["method"] == "initialize" for r in rows)


def test_unknown_config_keys_are_refused(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.mcpgen]\nschema_dir = "x"\n')
    result = invoke("init")
    assert result.exit_code == 1 and "unknown keys schema_dir" in result.output


def test_init_with_data_copies_the_data_files(project: Path) -> None:
    ok("init", "--with-data")
    for name in ("fixes.toml", "roles.toml", "gates.toml", "deprecations.toml", "results.toml"):
        assert (project / "schema" / name).read_bytes() == (PACKAGED_DATA / name).read_bytes()


# -- pins ----------------------------------------------------------------------------------------


def test_generate_without_pins_is_an_error_unless_asked(project: Path, source: Path) -> None:
    shutil.copytree(source, project / "schema")
    result = invoke("generate", "--version", "2025-11-25")
    assert result.exit_code == 1
    assert "no pins at schema/versions.toml: run `mcpgen init`" in result.output
    assert "--no-pin-check" in result.output
    assert not (project / "generated").exists()


def test_generate_refuses_an_unpinned_version(project: Path, source: Path) -> None:
    ok("init")
    ok("sync", "--from", str(source))
    shutil.copytree(project / "schema" / "2025-11-25", project / "schema" / "2025-06-18")
    result = invoke("generate", "--version", "2025-06-18")
    assert result.exit_code == 1 and "version 2025-06-18 is not pinned" in result.output


def test_generate_repin_hint_works_as_printed(project: Path, source: Path) -> None:
    ok("init", "--schema-dir", "elsewhere")
    ok("sync", "--from", str(source), "--schema-dir", "elsewhere")
    target = project / "elsewhere" / "2025-11-25" / "schema.json"
    target.write_bytes(target.read_bytes().replace(b'"type": "object"', b'"type":  "object"', 1))
    result = invoke("generate", "--schema-dir", "elsewhere", "--version", "2025-11-25")
    assert result.exit_code == 1 and "pinned at" in result.output
    command = after(result.output, "re-pin it as it is with ")
    assert "--schema-dir elsewhere" in command
    rerun = run_printed(command.replace("{version}", "2025-11-25"))
    assert rerun.exit_code == 0, rerun.output
    assert "2025-11-25: pinned" in rerun.output
    ok("generate", "--schema-dir", "elsewhere", "--version", "2025-11-25", "-q")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def raw_server(tmp_path: Path, schema_dir: Path) -> Iterator[str]:
    """A local server laid out like raw.githubusercontent.com: <owner>/<repo>/<commit>/<path>."""
    root = tmp_path / "raw"
    for pin in read_pins(PACKAGED_DATA):
        owner_repo = pin.repo.split("/", 1)[1]
        target = root / owner_repo / pin.commit / pin.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(schema_dir / pin.version / "schema.json", target)
    for ext in read_extension_pins(PACKAGED_DATA):
        target = root / ext.repo.split("/", 1)[1] / ext.commit / ext.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(extension_file(schema_dir, ext), target)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_sync_without_source_fetches_each_pin_at_its_commit(project: Path, raw_server: str) -> None:
    ok("init")
    out = ok("sync", "--raw-base", raw_server)
    for version in VERSIONS:
        assert f"{version}: copied" in out
        pinned = next(p for p in read_pins(PACKAGED_DATA) if p.version == version)
        data = (project / "schema" / version / "schema.json").read_bytes()
        assert hashlib.sha256(data).hexdigest() == pinned.sha256
    for ext in read_extension_pins(PACKAGED_DATA):
        assert f"{ext.id}: copied" in out
        data = extension_file(project / "schema", ext).read_bytes()
        assert hashlib.sha256(data).hexdigest() == ext.sha256


def test_sync_without_source_names_a_missing_file(project: Path, raw_server: str) -> None:
    ok("init")
    pins = (project / "schema" / "versions.toml").read_text()
    commit = read_pins(PACKAGED_DATA)[0].commit
    (project / "schema" / "versions.toml").write_text(pins.replace(commit, "0" * 40, 1))
    result = invoke("sync", "--raw-base", raw_server)
    assert result.exit_code == 1
    assert f"cannot fetch {raw_server}/" in result.output and "0" * 40 in result.output
    assert "Traceback" not in result.output


def test_sync_repin_and_review_hints_work_as_printed(project: Path, source: Path) -> None:
    ok("init", "--schema-dir", "pins")
    ok("sync", "--from", str(source), "--schema-dir", "pins")
    changed = source / "2026-07-28" / "schema.json"
    doc = json.loads(changed.read_text())
    defs_key = "$defs" if "$defs" in doc else "definitions"
    doc[defs_key]["Widget"] = {"type": "object", "properties": {"size": {"type": "integer"}}}
    changed.write_text(json.dumps(doc, indent=2))
    result = invoke("sync", "--from", str(source), "--schema-dir", "pins")
    assert result.exit_code == 1
    review = run_printed(after(result.output, "review it with "))
    assert review.exit_code == 0, review.output
    assert "Defs: 1 added, 0 removed" in review.output and "+ Widget" in review.output
    repin = run_printed(after(result.output, "re-pin with "))
    assert repin.exit_code == 0, repin.output
    assert "2026-07-28: pinned" in repin.output
    assert hashlib.sha256(changed.read_bytes()).hexdigest() in (project / "pins" / "versions.toml").read_text()
    assert not (project / "pins" / "2026-07-28" / "schema.json.new").exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"<html>not found</html>", "not valid JSON"), (b'{"type": "object"}', "neither `$defs` nor `definitions`")],
)
def test_update_pins_refuses_what_is_not_a_schema(project: Path, source: Path, content: bytes, why: str) -> None:
    ok("init")
    before = (project / "schema" / "versions.toml").read_text()
    (source / "2025-11-25" / "schema.json").write_bytes(content)
    result = invoke("sync", "--from", str(source), "--version", "2025-11-25", "--update-pins")
    assert result.exit_code == 1
    assert why in result.output and "not pinned" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (project / "schema" / "versions.toml").read_text() == before


def test_a_schema_without_defs_is_refused_in_one_line(project: Path, schema_dir: Path) -> None:
    (project / "schema" / "2030-01-01").mkdir(parents=True)
    (project / "schema" / "2030-01-01" / "schema.json").write_text('{"type": "object"}')
    for args in (("generate", "--no-pin-check"), ("methods", "2030-01-01")):
        result = invoke(*args)
        assert result.exit_code == 1
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "neither `$defs` nor `definitions`" in lines[0], result.output


# -- diff ----------------------------------------------------------------------------------------


def test_diff_two_copies_of_one_version(tmp_path: Path, schema_dir: Path, project: Path) -> None:
    a = tmp_path / "a" / "2026-07-28" / "schema.json"
    b = tmp_path / "b" / "2026-07-28" / "schema.json"
    for path in (a, b):
        path.parent.mkdir(parents=True)
        shutil.copy(schema_dir / "2026-07-28" / "schema.json", path)
    same = invoke("diff", str(a), str(b), "--exit-code")
    assert same.exit_code == 0, same.output
    assert "the files are identical" in same.output
    doc = json.loads(b.read_text())
    doc["$defs"]["CallToolResult"]["properties"]["isError"]["type"] = "string"
    b.write_text(json.dumps(doc))
    changed = invoke("diff", str(a), str(b), "--exit-code")
    assert changed.exit_code == 1
    assert "~ CallToolResult" in changed.output and "isError: type boolean -> string" in changed.output
    assert invoke("diff", str(a), str(b)).exit_code == 0, "without --exit-code a difference is not a failure"
    as_json = json.loads(invoke("diff", str(a), str(b), "--json").output)
    assert as_json["defs"]["changed"][0]["def"] == "CallToolResult"


def test_diff_a_version_against_a_file_and_files_of_no_version(tmp_path: Path, schema_dir: Path) -> None:
    loose = tmp_path / "upstream.json"
    shutil.copy(schema_dir / "2025-11-25" / "schema.json", loose)
    result = invoke("diff", "2025-11-25", str(loose), "--schema-dir", str(schema_dir))
    assert result.exit_code == 1 and "--as-version" in result.output
    result = invoke("diff", "2025-11-25", str(loose), "--schema-dir", str(schema_dir), "--as-version", "2025-11-25")
    assert result.exit_code == 0 and "the files are identical" in result.output
    missing = invoke("diff", "2025-11-25", "nope.json", "--schema-dir", str(schema_dir))
    assert missing.exit_code == 1 and "neither a version" in missing.output


# -- the toolchain -------------------------------------------------------------------------------


def test_generate_without_the_toolchain_says_what_to_install(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli_module.importlib.util.find_spec
    monkeypatch.setattr(
        cli_module.importlib.util, "find_spec", lambda name, *a: None if name == "black" else real(name, *a)
    )
    result = invoke("generate")
    assert result.exit_code == 1
    expected = "Error: the generator toolchain is not installed (no black): pip install 'mcpgen[codegen]'"
    assert result.output.strip() == expected
