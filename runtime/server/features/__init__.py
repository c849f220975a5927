"""Server features defined from plain Python: tools, prompts, resources, resource templates."""

from .common import Context, pydantic_json, text
from .prompts import PromptDef, make_prompt, prompt_result
from .resources import ResourceDef, TemplateDef, make_resource, make_template, resource_contents
from .tools import ToolDef, error_result, make_tool, mcp_header, tool_result

__all__ = [
    "Context",
    "PromptDef",
    "ResourceDef",
    "TemplateDef",
    "ToolDef",
    "error_result",
    "make_prompt",
    "make_resource",
    "make_template",
    "make_tool",
    "mcp_header",
    "prompt_result",
    "pydantic_json",
    "resource_contents",
    "text",
    "tool_result",
]
