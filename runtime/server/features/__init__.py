"""Server features defined from plain Python: tools, prompts, resources, resource templates,
the content helpers they may return, and how their functions are called (injection, threads)."""

from .calling import Callee, Depends, call_positional, describe, in_handler_thread, invoke
from .common import Context, pydantic_json, text
from .content import Audio, File, Image, media_block
from .prompts import PromptDef, make_prompt, prompt_result
from .resources import ResourceDef, TemplateDef, make_resource, make_template, resource_contents
from .tools import ToolDef, error_result, make_tool, mcp_header, tool_result

__all__ = [
    "Audio",
    "Callee",
    "Context",
    "Depends",
    "File",
    "Image",
    "PromptDef",
    "ResourceDef",
    "TemplateDef",
    "ToolDef",
    "call_positional",
    "describe",
    "error_result",
    "in_handler_thread",
    "invoke",
    "make_prompt",
    "make_resource",
    "make_template",
    "make_tool",
    "mcp_header",
    "media_block",
    "prompt_result",
    "pydantic_json",
    "resource_contents",
    "text",
    "tool_result",
]
