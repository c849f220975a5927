"""The version registry, pins and sync, and generation being deterministic and cached."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from mcpgen.codegen.generate import generate
from mcpgen.generated import versions

# -- registry ---------------------------------------------------------------------------------


def test_registry_lists_versions_in_date_order() -> None:
    assert versions.SUPPORTED == ("2025-11-25", "2026-07-28")
    assert versions.LATEST == "2026-07-28"
    assert versions.era("2025-11-25") == versions.HANDSHAKE
    assert versions.era("2026-07-28") == versions.MODERN


def test_compare_uses_dates_not_strings() -> None:
    # lexicographically "2026-07-28" < "2026-7-29" is wrong either way; a date comparison is exact
    assert versions.compare("2025-11-25", "2026-07-28") == -1
    assert versions.compare("2026-07-28", "2026-07-28") == 0
    assert versions.compare("2100-01-01", "2026-07-28") == 1
    with pytest.raises(versions.UnknownVersionError):
        versions.compare("2026-7-29", "2026-07-28")
    with pytest.raises(versions.UnknownVersionError):
        versions.compare("2026-02-30", "2026-07-28")


@pytest.mark.parametrize("bad", ["1.0.0", "", "2099-01-01", "2026-07-28 ", "latest"])
def test_unknown_versions_are_treated_conservatively(bad: str) -> None:
    assert not versions.is_supported(bad)
    with pytest.raises(versions.UnknownVersionError):
        versions.era(bad)
    with pytest.raises(versions.UnknownVersionError):
        versions.module(bad)


def test_newest_mutual_ignores_what_either_side_does_not_know() -> None:
    assert versions.newest_mutual(["2099-01-01", "2026-07-28", "2025-11-25", "junk"]) == "2026-07-28"
    assert versions.newest_mutual(["2025-11-25", "2026-07-28"], era=versions.HANDSHAKE) == "2025-11-25"
    assert versions.newest_mutual(["1900-01-01"]) is None
    assert versions.newest_mutual(["2026-07-28"], ours=["2025-11-25"]) is None


# -- sync and pins -----------------------------------------------------------------------------


@pytest.fixture
def source(tmp_path: Path, schema_dir: Path) -> Path:
    """A schema source folder (copies of the synced files)."""
    for version in ("2025-11-25", "2026-07-28"):
        target = tmp_path / "source" / version
        target.mkdir(parents=True)
        shutil.copy(schema_dir / version / "schema.json", target / "schema.json")
    return tmp_path / "source"


def make_pins(root: Path, sha: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "versions.toml").write_text(f'[[version]]\nversion = "2025-11-25"\nsha256 = "{sha}"\n')


def test_sync_copies_pinned_files(tmp_path: Path, source: Path) -> None:
    sha = hashlib.sha256((source / "2025-11-25" / "schema.json").read_bytes()).hexdigest()
    make_pins(tmp_path / "schema", sha)
    result = CliRunner().invoke(main, ["sync", "--from", str(source), "--schema-dir", str(tmp_path / "schema")])
    assert result.exit_code == 0, result.output
    assert "2025-11-25: copied" in result.output
    assert (tmp_path / "schema" / "2025-11-25" / "schema.json").read_bytes() == (
        source / "2025-11-25" / "schema.json"
    ).read_bytes()
    again = CliRunner().invoke(main, ["sync", "--from", str(source), "--schema-dir", str(tmp_path / "schema")])
    assert "2025-11-25: unchanged" in again.output


def test_sync_refuses_a_changed_file_and_says_what_to_do(tmp_path: Path, source: Path) -> None:
    make_pins(tmp_path / "schema", "0" * 64)
    result = CliRunner().invoke(main, ["sync", "--from", str(source), "--schema-dir", str(tmp_path / "schema")])
    assert result.exit_code == 1
    assert "pins " + "0" * 64 in result.output
    assert "--update-pins" in result.output
    assert not (tmp_path / "schema" / "2025-11-25").exists(), "nothing is copied when the pin does not match"


def test_update_pins_records_the_new_hash(tmp_path: Path, source: Path) -> None:
    make_pins(tmp_path / "schema", "0" * 64)
    result = CliRunner().invoke(
        main, ["sync", "--from", str(source), "--schema-dir", str(tmp_path / "schema"), "--update-pins"]
    )
    assert result.exit_code == 0, result.output
    text = (tmp_path / "schema" / "versions.toml").read_text()
    assert hashlib.sha256((source / "2025-11-25" / "schema.json").read_bytes()).hexdigest() in text


def test_sync_of_an_unpinned_version_explains_how_to_pin(tmp_path: Path, source: Path) -> None:
    make_pins(tmp_path / "schema", "0" * 64)
    result = CliRunner().invoke(
        main,
        ["sync", "--from", str(source), "--schema-dir", str(tmp_path / "schema"), "--version", "2026-07-28"],
    )
    assert result.exit_code == 1
    assert "not pinned" in result.output and "--update-pins" in result.output


def test_sync_from_a_url(tmp_path: Path, source: Path) -> None:
    sha = hashlib.sha256((source / "2025-11-25" / "schema.json").read_bytes()).hexdigest()
    make_pins(tmp_path / "schema", sha)
    result = CliRunner().invoke(
        main, ["sync", "--from", source.resolve().as_uri(), "--schema-dir", str(tmp_path / "schema")]
    )
    assert result.exit_code == 0, result.output


def test_sync_source_from_environment(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sha = hashlib.sha256((source / "2025-11-25" / "schema.json").read_bytes()).hexdigest()
    make_pins(tmp_path / "schema", sha)
    monkeypatch.setenv("MCPGEN_SCHEMA_SOURCE", str(source))
    result = CliRunner().invoke(main, ["sync", "--schema-dir", str(tmp_path / "schema")])
    assert result.exit_code == 0, result.output


def test_unreachable_source_is_a_clear_error(tmp_path: Path, source: Path) -> None:
    make_pins(tmp_path / "schema", "0" * 64)
    result = CliRunner().invoke(
        main, ["sync", "--from", str(tmp_path / "nowhere"), "--schema-dir", str(tmp_path / "schema")]
    )
    assert result.exit_code == 1
    assert "cannot read" in result.output and "Traceback" not in result.output


# -- generate -------------------------------------------------------------------------------


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_generation_is_deterministic_and_cached(tmp_path: Path, schema_dir: Path, data_dir: Path) -> None:
    first = generate(schema_dir, tmp_path / "a", ["2025-11-25", "2026-07-28"], data_dir, force=True)
    assert [o.status for o in first.outcomes] == ["generated", "generated"]
    generate(schema_dir, tmp_path / "b", ["2026-07-28", "2025-11-25"], data_dir, force=True, jobs=1)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    again = generate(schema_dir, tmp_path / "a", ["2025-11-25", "2026-07-28"], data_dir)
    assert [o.status for o in again.outcomes] == ["unchanged", "unchanged"]
    # a hand edit to a generated file is noticed and undone
    models = tmp_path / "a" / "v2026_07_28" / "models" / "__init__.py"
    models.write_text(models.read_text() + "\n# edited\n")
    healed = generate(schema_dir, tmp_path / "a", ["2025-11-25", "2026-07-28"], data_dir)
    assert [o.status for o in healed.outcomes] == ["unchanged", "generated"]
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


def test_generated_files_hold_no_paths_or_times(tmp_path: Path, schema_dir: Path, data_dir: Path) -> None:
    copy = tmp_path / "elsewhere" / "schema"
    shutil.copytree(schema_dir / "2025-11-25", copy / "2025-11-25")
    generate(copy, tmp_path / "out", ["2025-11-25"], data_dir)
    for path in (tmp_path / "out").rglob("*.py"):
        text = path.read_text()
        assert str(tmp_path) not in text and "#   timestamp:" not in text, path
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert str(tmp_path) not in json.dumps(manifest)


def test_generate_reports_a_missing_version(tmp_path: Path, schema_dir: Path) -> None:
    result = CliRunner().invoke(
        main, ["generate", "--schema-dir", str(schema_dir), "--out", str(tmp_path), "--version", "2030-01-01"]
    )
    assert result.exit_code == 1
    assert "no schema file for version 2030-01-01" in result.output


def test_generate_prunes_versions_no_longer_pinned(tmp_path: Path, schema_dir: Path, data_dir: Path) -> None:
    generate(schema_dir, tmp_path, ["2025-11-25", "2026-07-28"], data_dir)
    report = generate(schema_dir, tmp_path, ["2026-07-28"], data_dir, prune=True)
    assert report.removed == ["2025-11-25"]
    assert not (tmp_path / "v2025_11_25").exists()
    assert "'2025-11-25'" not in (tmp_path / "versions.py").read_text()


def test_generate_refuses_a_file_that_differs_from_its_pin(tmp_path: Path, schema_dir: Path) -> None:
    root = tmp_path / "schema"
    (root / "2025-11-25").mkdir(parents=True)
    original = (schema_dir / "2025-11-25" / "schema.json").read_bytes()
    (root / "2025-11-25" / "schema.json").write_bytes(original.replace(b'"type": "object"', b'"type":  "object"', 1))
    make_pins(root, hashlib.sha256(original).hexdigest())
    result = CliRunner().invoke(
        main, ["generate", "--schema-dir", str(root), "--out", str(tmp_path / "out"), "--data-dir", str(schema_dir)]
    )
    assert result.exit_code == 1
    assert "pinned at" in result.output and "--update-pins" in result.output
    assert not (tmp_path / "out" / "v2025_11_25").exists()
    forced = CliRunner().invoke(
        main,
        [
            "generate",
            "--no-pin-check",
            "--schema-dir",
            str(root),
            "--out",
            str(tmp_path / "out"),
            "--data-dir",
            str(schema_dir),
        ],
    )
    assert forced.exit_code == 0, forced.output
