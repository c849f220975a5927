"""Code a user writes against the version-independent layer; type-checked with the constructions.

It must pass `pyright` (strict) and `mypy --strict` (with and without the pydantic plugin) as it
is, and it runs: `test_user_types.py` executes it against models of both versions.
"""

from __future__ import annotations

from mcpgen.generated.types import CallToolResult, ContentBlock, ListToolsResult, TextContent


def first_text(result: CallToolResult) -> str | None:
    """The text of the first text block of a `tools/call` result of any version."""
    for block in result.content:
        if block.type == "text":
            return block.text
    return None


def texts(blocks: list[ContentBlock]) -> list[str]:
    return [block.text for block in blocks if isinstance(block, TextContent)]


def tool_names(result: ListToolsResult) -> list[str]:
    return [tool.name for tool in result.tools]


def failed(result: CallToolResult) -> bool:
    return bool(result.is_error)
