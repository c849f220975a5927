"""What users write against the generated tree passes the type checkers they use.

`make_constructions.py` writes, from the generated tree, one construction per model of every
version (snake_case names, every optional field omitted) and one assignment per version model to
each name of the version-independent `types` layer; `user_code.py` is hand-written user code over
that layer. Both must pass pyright (strict) and `mypy --strict`, with and without the pydantic
mypy plugin, with zero errors.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcpgen.generated.v2025_11_25 import models as m25
from mcpgen.generated.v2026_07_28 import models as m26

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent

MYPY_COMMON = """\
[mypy]
strict = True
python_version = 3.10
mypy_path = {packages}
namespace_packages = True
explicit_package_bases = True
cache_dir = {cache}
"""


@pytest.fixture(scope="module")
def user_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the constructions, the user code, and a `mcpgen` package tree the checkers can
    follow (setuptools' editable finder is invisible to them)."""
    root = tmp_path_factory.mktemp("user-types")
    packages = root / "packages" / "mcpgen"
    packages.mkdir(parents=True)
    os.symlink(REPO / "generated", packages / "generated", target_is_directory=True)
    subprocess.run(
        [sys.executable, str(HERE / "make_constructions.py"), str(root / "constructions.py")],
        check=True,
        capture_output=True,
        text=True,
    )
    shutil.copy(HERE / "user_code.py", root / "user_code.py")
    return root


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=False, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_constructions_cover_every_model(user_files: Path) -> None:
    text = (user_files / "constructions.py").read_text()
    from pydantic import BaseModel
    from typing_extensions import is_typeddict

    for module in (m25, m26):
        exported = {name: getattr(module, name) for name in module.__all__}  # created on first access
        classes = [
            name
            for name, obj in exported.items()
            if isinstance(obj, type)
            and (issubclass(obj, BaseModel) or is_typeddict(obj))
            and obj.__module__.startswith(module.__name__ + ".")
        ]
        assert len(classes) > 100
        alias = "v" + module.__name__.split(".")[-2][1:]
        missing = [name for name in classes if f"m_{name}: {alias}.{name} = " not in text]
        assert not missing, missing


def test_pyright_strict(user_files: Path) -> None:
    config = {
        "typeCheckingMode": "strict",
        "pythonVersion": "3.10",
        "extraPaths": ["packages"],
        "include": ["constructions.py", "user_code.py"],
    }
    (user_files / "pyrightconfig.json").write_text(json.dumps(config))
    result = run([str(BIN / "pyright"), "--outputjson", "-p", "pyrightconfig.json"], user_files)
    report = json.loads(result.stdout)
    errors = [d for d in report["generalDiagnostics"] if d["severity"] in ("error", "warning")]
    assert not errors, json.dumps(errors[:20], indent=2)
    assert report["summary"]["filesAnalyzed"] >= 2
    assert result.returncode == 0, result.stdout[-2000:]


@pytest.mark.parametrize("plugin", [False, True], ids=["plain", "pydantic-plugin"])
def test_mypy_strict(user_files: Path, plugin: bool) -> None:
    name = "plugin" if plugin else "plain"
    config = MYPY_COMMON.format(packages=user_files / "packages", cache=user_files / f".mypy-{name}")
    if plugin:
        config += "plugins = pydantic.mypy\n\n[pydantic-mypy]\ninit_typed = True\ninit_forbid_extra = True\n"
    (user_files / f"mypy-{name}.ini").write_text(config)
    result = run(
        [str(BIN / "mypy"), "--config-file", f"mypy-{name}.ini", "constructions.py", "user_code.py"], user_files
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert "Success: no issues found in 2 source files" in result.stdout


def test_user_code_runs_on_both_versions() -> None:
    spec = importlib.util.spec_from_file_location("user_code", HERE / "user_code.py")
    assert spec is not None and spec.loader is not None
    user_code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user_code)
    for models in (m25, m26):
        result = models.CallToolResult(content=[models.TextContent(type="text", text="hi")], is_error=True)
        assert user_code.first_text(result) == "hi"
        assert user_code.texts(list(result.content)) == ["hi"]
        assert user_code.failed(result)
        assert user_code.first_text(models.CallToolResult(content=[])) is None
        tools = models.ListToolsResult.model_validate({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})
        assert user_code.tool_names(tools) == ["a"]
