"""Generated code is formatted once (black's single pass), and that is byte-identical to black's
full `format_str` (which formats a second time whenever the first pass changed anything).

If every generated file is a fixed point of the full `format_str`, the single pass already gave
what the full one would: `format_str(raw)` is `once(once(raw))`, and `once(once(raw))` is
`once(raw)` when `once(raw)` is stable.
"""

from __future__ import annotations

from pathlib import Path

import black
import pytest
from mcpgen.codegen.generate import black_mode

TREE = Path(__file__).resolve().parents[2] / "generated"
FILES = sorted(p for p in TREE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_tree_was_generated() -> None:
    assert len(FILES) >= 8


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(TREE).as_posix())
def test_single_pass_output_is_what_full_black_gives(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert black.format_str(text, mode=black_mode()) == text
