"""The lazy `models` package (codegen/modules.py): one submodule per group of definitions that
refer to each other, each class created on first use, every name seen by type checkers."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcpgen.codegen.errors import GenerationError
from mcpgen.codegen.generate import generate
from mcpgen.codegen.modules import split_package

# A models module as the generator makes it: A and B refer to each other (B by a string forward
# reference), C stands alone, D is an alias of A and C (with a docstring after it), E refers to D.
CODE = '''"""Models of a test. Do not edit."""

from .._base import MCPModel

from typing import Literal
from typing_extensions import TypeAliasType


class A(MCPModel):
    b: "B | None" = None


class C(MCPModel):
    kind: Literal["c"]


class B(MCPModel):
    a: A | None = None


D = TypeAliasType("D", A | C)
"""A or C."""


class E(MCPModel):
    d: D
'''


def test_components_become_submodules_importing_what_they_refer_to() -> None:
    files = split_package(CODE)
    assert sorted(files) == ["__init__.py", "_a.py", "_c.py", "_d.py", "_e.py"]
    assert "class A(" in files["_a.py"] and "class B(" in files["_a.py"]  # a cycle stays together
    assert "from ._a import A\n" in files["_d.py"] and "from ._c import C\n" in files["_d.py"]
    assert '"""A or C."""' in files["_d.py"]  # the alias keeps its docstring
    assert "from ._d import D\n" in files["_e.py"] and "_a import" not in files["_e.py"]
    assert "from ..._base import MCPModel" in files["_e.py"]  # one level deeper than the module was
    assert "Literal" not in files["_e.py"] and "TypeAliasType" not in files["_e.py"]  # unused imports dropped
    init = files["__init__.py"]
    assert init.startswith('"""Models of a test. Do not edit.')
    for name, module in {"A": "_a", "B": "_a", "C": "_c", "D": "_d", "E": "_e"}.items():
        assert f"    from .{module} import {name} as {name}\n" in init  # what type checkers see
    assert split_package(CODE) == files  # deterministic


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """The split module written as `lazytree.v.models` under a tree with a `_base`."""
    root = tmp_path / "lazytree"
    (root / "v" / "models").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "v" / "__init__.py").write_text("")
    (root / "_base.py").write_text("from pydantic import BaseModel as MCPModel\n")
    for name, text in split_package(CODE).items():
        (root / "v" / "models" / name).write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "lazytree.v.models"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "lazytree" or n.startswith("lazytree.")]:
            del sys.modules[name]


def test_a_name_creates_only_what_it_refers_to(package: str) -> None:
    models = importlib.import_module(package)
    loaded = lambda: sorted(n.rpartition(".")[2] for n in sys.modules if n.startswith(package + "."))  # noqa: E731
    assert loaded() == []  # importing the package creates no class
    assert models.C(kind="c").kind == "c"
    assert loaded() == ["_c"]
    e = models.E.model_validate({"d": {"b": {"a": {}}}})
    assert type(e.d).__name__ == "A" and e.d.b is not None  # the forward reference resolved in its module
    assert loaded() == ["_a", "_c", "_d", "_e"]
    assert type(e.d.b) is models.B
    assert sorted(models.__all__) == ["A", "B", "C", "D", "E"]
    assert {"A", "E"} <= set(dir(models))
    with pytest.raises(AttributeError, match="has no attribute 'F'"):
        _ = models.F


def test_an_unknown_top_level_statement_is_refused() -> None:
    with pytest.raises(GenerationError, match="unexpected top-level statement"):
        split_package(CODE + "\nif E:\n    pass\n")


def test_a_stale_file_of_an_earlier_layout_is_removed(tmp_path: Path, schema_dir: Path, data_dir: Path) -> None:
    out = tmp_path / "out"
    generate(schema_dir, out, ["2025-11-25"], data_dir)
    # as a tree of the earlier layout left it: a `models.py` beside the package, in the manifest
    stale = out / "v2025_11_25" / "models.py"
    stale.write_text("raise ImportError\n")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["versions"]["2025-11-25"]["files"]["v2025_11_25/models.py"] = "0" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    generate(schema_dir, out, ["2025-11-25"], data_dir)
    assert not stale.exists()
    assert (out / "v2025_11_25" / "models" / "__init__.py").is_file()


def test_the_shipped_tree_creates_classes_on_first_use() -> None:
    # a fresh interpreter: what importing a version's models and its table creates
    code = textwrap.dedent(
        """
        import sys
        from mcpgen.generated.v2026_07_28 import models
        loaded = lambda: {n for n in sys.modules if n.startswith(models.__name__ + ".")}
        assert not loaded(), loaded()
        assert "pydantic" not in sys.modules
        from mcpgen.generated.v2026_07_28 import methods
        spec = methods.METHODS["tools/call"]
        assert spec.kind.value == "request" and spec.may_require_input
        assert models.__name__ + "._call_tool_request" not in loaded()  # its row's models not looked up yet
        assert spec.message is models.CallToolRequest and spec.params is models.CallToolRequestParams
        assert dict(spec.result_tags)["input_required"] is models.InputRequiredResult
        some = len(loaded())
        for name in models.__all__:
            getattr(models, name)
        assert some < len(loaded())
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
