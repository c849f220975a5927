"""Build the sdist and the wheel from a clean clone and install each into a fresh virtualenv.

The clone is the set of files `git clone` of the current state would give (tracked files and new
files that are not ignored: no generated tree, no synced schemas). Building it (`python -m build`:
the sdist, then the wheel from that sdist) makes the generated tree from the schema source the
tests use; the wheel then installs with the runtime's dependencies only, and so does the sdist.
A clone whose schemas cannot be reached fails to build with one line that says what to run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLCHAIN = ("black", "datamodel-code-generator", "jinja2")


def schema_source() -> Path:
    """The schema files `.ci/setup` synced into this checkout: a source laid out as
    `<version>/schema.json`, whatever they were synced from."""
    path = REPO / "schema"
    assert list(path.glob("*/schema.json")), f"no synced schemas under {path}: run .ci/setup"
    return path


def extension_files() -> list[str]:
    """The files of every extension package in this checkout's generated tree (as the manifest lists them)."""
    manifest = json.loads((REPO / "generated" / "manifest.json").read_text())
    files = [f"{ext['module']}/__init__.py" for ext in manifest["extensions"].values()]
    for ext in manifest["extensions"].values():
        for entry in ext["versions"].values():
            files.extend(entry["files"])
    return sorted(files)


def clean_clone(target: Path) -> Path:
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        source = REPO / rel
        if source.is_file():  # a tracked file deleted in the working tree is not in the clone
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    assert not (target / "generated" / "versions.py").exists(), "a clean clone has no generated tree"
    return target


def environment(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPGEN_")}
    env.update({k: v for k, v in changes.items() if v is not None})
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clone = clean_clone(tmp_path_factory.mktemp("clone"))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(clone)],
        env=environment(MCPGEN_SCHEMA_SOURCE=str(schema_source())),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    BUILD_OUTPUT.append(result.stdout + result.stderr)
    return out


BUILD_OUTPUT: list[str] = []


def test_the_build_does_not_warn_about_the_package_layout(dist: Path) -> None:
    """setuptools' warnings about this project's own configuration: folders of data that look
    like packages it would ignore, and MANIFEST.in lines matching nothing in a fresh clone."""
    output = BUILD_OUTPUT[0]
    assert "is absent from the `packages` configuration" not in output
    assert "no files found matching" not in output
    assert "no previously-included files" not in output


def fresh_venv(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=300)
    return root / "bin"


def pip_install(bin_dir: Path, target: Path) -> None:
    result = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(target)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def installed(bin_dir: Path) -> set[str]:
    out = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True, text=True
    ).stdout
    return {line.split("==")[0].lower() for line in out.splitlines()}


USE = """
import json
from mcpgen.runtime import Server
from mcpgen.generated import versions
from mcpgen.generated.types import CallToolResult
from mcpgen.generated.v2026_07_28 import models

server = Server("demo", "1.0")
result: CallToolResult = models.CallToolResult(content=[models.TextContent(type="text", text="hi")])
extensions = {
    ext_id: {v: sorted(versions.extension(ext_id, v).methods) for v in on} for ext_id, on in versions.EXTENSIONS.items()
}
print(
    json.dumps(
        {"supported": list(versions.SUPPORTED), "dump": json.loads(result.model_dump_json()), "extensions": extensions}
    )
)
"""


def pinned_extensions() -> dict[str, dict[str, list[str]]]:
    """Each pinned extension, the versions it is generated on and its methods, from this checkout's tree."""
    from mcpgen.generated import versions

    return {
        ext_id: {v: sorted(versions.extension(ext_id, v).methods) for v in on}
        for ext_id, on in versions.EXTENSIONS.items()
    }


def check_runtime_install(bin_dir: Path, project: Path) -> None:
    names = installed(bin_dir)
    assert {"mcpgen", "pydantic", "anyio", "click"} <= names
    assert not names & set(TOOLCHAIN), "the runtime installs without the generator toolchain"
    run = subprocess.run([str(bin_dir / "python"), "-c", USE], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    pinned = [
        line.split('"')[1]
        for line in (REPO / "schema" / "versions.toml").read_text().splitlines()
        if line.startswith("version = ")
    ]
    extensions = pinned_extensions()
    assert extensions, "this checkout pins an extension"
    assert json.loads(run.stdout) == {
        "supported": pinned,
        "dump": {"content": [{"type": "text", "text": "hi"}]},
        "extensions": extensions,
    }
    mcpgen = str(bin_dir / "mcpgen")
    version = subprocess.run([mcpgen, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "mcpgen 0.1.0"
    helptext = subprocess.run([mcpgen, "--help"], capture_output=True, text=True, check=True).stdout
    assert "inspect" in helptext and "call" in helptext and "generate" in helptext
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "user"\nversion = "0"\n')
    init = subprocess.run([mcpgen, "init"], cwd=project, capture_output=True, text=True, check=False)
    assert init.returncode == 0, init.stderr
    assert (project / "schema" / "versions.toml").is_file(), "init writes into the project, not the package"
    # the commands that need no generator toolchain work in the user's project
    sync = subprocess.run(
        [mcpgen, "sync", "--from", str(schema_source())], cwd=project, capture_output=True, text=True, check=False
    )
    assert sync.returncode == 0, sync.stderr
    methods = subprocess.run(
        [mcpgen, "methods", "2026-07-28", "--json"], cwd=project, capture_output=True, text=True, check=False
    )
    assert methods.returncode == 0 and '"tools/call"' in methods.stdout, methods.stderr
    for ext_id, on in extensions.items():  # synced from the same folder (its extensions/), read without the toolchain
        ext_methods = subprocess.run(
            [mcpgen, "methods", ext_id, "--json"], cwd=project, capture_output=True, text=True, check=False
        )
        assert ext_methods.returncode == 0, ext_methods.stderr
        record = json.loads(ext_methods.stdout)
        assert [r["method"] for r in record["methods"]] == on[record["version"]]
    diff = subprocess.run(
        [mcpgen, "diff", "2025-11-25", "2026-07-28", "--exit-code"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert diff.returncode == 1 and "Methods: " in diff.stdout, diff.stderr
    gen = subprocess.run([mcpgen, "generate"], cwd=project, capture_output=True, text=True, check=False)
    assert gen.returncode == 1
    assert gen.stderr.strip().splitlines() == [
        "Error: the generator toolchain is not installed (no datamodel_code_generator, black, jinja2): "
        "pip install 'mcpgen[codegen]'"
    ]


def test_sdist_carries_the_tree_and_no_schema_text(dist: Path) -> None:
    (sdist,) = dist.glob("mcpgen-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    root = sdist.name.removesuffix(".tar.gz")
    for rel in (
        "generated/versions.py",
        "generated/types.py",
        "generated/py.typed",
        "generated/v2026_07_28/models/__init__.py",
    ):
        assert f"{root}/{rel}" in names, rel
    for rel in extension_files():
        assert f"{root}/generated/{rel}" in names, rel
    assert f"{root}/build_backend/mcpgen_build.py" in names
    assert not [n for n in names if n.endswith("schema.json")], "no upstream schema text is shipped"


def test_wheel_contents_and_dependencies(dist: Path) -> None:
    (wheel,) = dist.glob("mcpgen-*.whl")
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    templates = {
        f"mcpgen/codegen/{p.relative_to(REPO / 'codegen').as_posix()}"
        for p in (REPO / "codegen" / "templates").rglob("*.jinja2")
    }
    assert templates and templates <= names, templates - names
    data = {f"mcpgen/schema/{p.name}" for p in (REPO / "schema").glob("*.toml")}
    assert data <= names, data - names
    assert {
        "mcpgen/generated/versions.py",
        "mcpgen/generated/types.py",
        "mcpgen/generated/_base.py",
        "mcpgen/generated/v2026_07_28/models/__init__.py",
        "mcpgen/generated/v2026_07_28/models/_call_tool_request.py",
        "mcpgen/generated/v2025_11_25/methods.py",
        "mcpgen/generated/py.typed",
        "mcpgen/runtime/py.typed",
        "mcpgen/codegen/py.typed",
    } <= names
    shipped = {f"mcpgen/generated/{rel}" for rel in extension_files()}
    assert shipped and shipped <= names, shipped - names
    assert not [n for n in names if n.endswith("schema.json")], "no upstream schema text is shipped"
    runtime = {f"mcpgen/runtime/{p.relative_to(REPO / 'runtime').as_posix()}" for p in (REPO / "runtime").rglob("*.py")}
    assert runtime <= names, f"runtime modules missing from the wheel: {sorted(runtime - names)}"
    (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = Parser().parsestr(archive.read(meta).decode()).get_all("Requires-Dist") or []
    unconditional = {
        r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in requires if ";" not in r
    }
    assert unconditional == {"pydantic", "typing_extensions", "anyio", "click", "jsonschema", "fastjsonschema"}
    codegen = [r for r in requires if 'extra == "codegen"' in r]
    assert {r.split("=")[0].split(">")[0] for r in codegen} == {"datamodel-code-generator", "black", "jinja2"}


def test_wheel_installs_the_runtime_alone(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("mcpgen-*.whl")
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, wheel)
    check_runtime_install(bin_dir, tmp_path / "project")
    # without its generated tree, importing the runtime says what to run, in one line
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    shutil.rmtree(site / "mcpgen" / "generated")
    broken = subprocess.run(
        [str(bin_dir / "python"), "-c", "import mcpgen.runtime"], capture_output=True, text=True, check=False
    )
    assert broken.returncode == 1
    last = broken.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ModuleNotFoundError: mcpgen's generated tree is missing: run `mcpgen sync && mcpgen generate`"
    )


def test_sdist_installs_the_runtime_alone(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("mcpgen-*.tar.gz")
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, sdist)
    check_runtime_install(bin_dir, tmp_path / "project")


def test_a_clone_without_schemas_fails_to_build_in_one_line(tmp_path: Path) -> None:
    clone = clean_clone(tmp_path / "clone")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--outdir", str(tmp_path / "dist"), str(clone)],
        env=environment(MCPGEN_RAW_BASE="http://127.0.0.1:9"),  # nothing listens there: the pins cannot be fetched
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if line.startswith("mcpgen: ")]
    assert len(ours) == 1, result.stderr[-3000:]
    assert "cannot build without the generated tree" in ours[0]
    assert "MCPGEN_SCHEMA_SOURCE" in ours[0] and "mcpgen sync && mcpgen generate" in ours[0]
    assert not list((tmp_path / "dist").glob("*.tar.gz")) if (tmp_path / "dist").exists() else True
