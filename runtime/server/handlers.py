"""The server's built-in handlers: one per method the runtime implements.

Each is `async (server, ctx, params) -> result`, where `params` is the model the router already
validated. They implement features only: routing, validation of results and stamping happen
around them (`ServerSession`), and what differs by era comes from `ctx.era`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic import ValidationError

from ..protocol import wire
from ..protocol.errors import InvalidParams, McpError, validation_detail
from ..protocol.input_requests import InputRequired
from .catalog import MAX_URI_LENGTH, resolve_resource
from .failures import NotFound, ToolError
from .features import (
    TemplateDef,
    call_positional,
    describe,
    error_result,
    invoke,
    prompt_result,
    resource_contents,
    tool_result,
)
from .hooks.middleware import ToolCall, run_chain
from .pagination import page
from .session import HandshakeState
from .subscriptions import serve_listen

if TYPE_CHECKING:
    from . import Server
    from .context import RequestContext
    from .features import ToolDef

log = logging.getLogger("mcpgen.runtime.server")

Handler = Callable[["RequestContext", Any], Awaitable[Any]]


def _listing(  # noqa: PLR0913 - the listing's key, its cursor kind, its items
    server: Server, ctx: RequestContext, key: str, kind: str, items: Any, params: Any, *described_with: Any
) -> dict[str, Any]:
    """A page of `items` the caller may see, described (with `described_with`: a tool's `execution`)."""
    if server.visibility is None:
        described = [item.describe(*described_with) for item in items]
    else:
        described = [item.describe(*described_with) for item in items if server.visibility(ctx, item)]
    found, next_cursor = page(server.cursors, server.limits.page_size, kind, described, getattr(params, "cursor", None))
    result: dict[str, Any] = {key: found}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def initialize(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    """The handshake: the router chose the version; the session remembers what was negotiated."""
    version = ctx.protocol_version
    advertised = server.capabilities(version)
    capabilities = wire.to_wire(params.capabilities)
    ctx.session.handshake = HandshakeState(
        version, capabilities if isinstance(capabilities, dict) else {}, wire.to_wire(params.client_info), advertised
    )
    result: dict[str, Any] = {"protocolVersion": version, "capabilities": advertised, "serverInfo": server.info}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def ping(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    return {}


async def discover(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": server.registry.newest_first(server.versions),
        "capabilities": server.capabilities(ctx.protocol_version),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def set_level(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    if ctx.session.handshake is not None:
        ctx.session.handshake.log_level = params.level
    return {}


async def list_tools(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    execution = server.tasks.lists_support(ctx.protocol_version)  # 2025-11-25: each tool's task support
    return _listing(server, ctx, "tools", "tools", server.tools.values(), params, execution)


async def call_tool(server: Server, ctx: RequestContext, params: Any) -> Any:  # noqa: PLR0912 - one branch per way a call ends
    tool = server.tools.get(params.name)
    if tool is None or (server.visibility is not None and not server.visibility(ctx, tool)):
        raise InvalidParams(f"unknown tool: {params.name}")
    given = params.arguments or {}
    try:  # as strictly as the advertised input schema says: "7" is not an integer, "yes" not a boolean
        if tool.python_arguments:  # the values as parsed from JSON read as the JSON text would
            arguments = tool.arguments.__pydantic_validator__.validate_python(given, strict=True)
        else:
            arguments = tool.arguments.model_validate_json(pydantic_core.to_json(given), strict=True)
    except ValidationError as exc:
        return error_result(f"invalid arguments for tool {tool.name}: {validation_detail(exc)}")
    if tool.model_param is not None:
        kwargs: dict[str, Any] = {tool.model_param: arguments}
    else:
        kwargs = dict(arguments.__dict__)  # the fields' values, by name (extra values live elsewhere)
    try:
        if server.middleware.tools:
            call = ToolCall(tool.name, kwargs, tool, ctx)
            value = await run_chain(server.middleware.tools, call, lambda: _run_tool(server, tool, call.arguments, ctx))
        else:
            callee = tool.callee
            if callee.is_async and not callee.dependencies:  # (what `invoke` does for it, without its frames)
                if callee.context_param is not None:
                    kwargs[callee.context_param] = ctx
                value = await callee.fn(**kwargs)
            else:
                limiter = None if callee.is_async else server.thread_limiter()  # only a plain `def` needs one
                value = await invoke(callee, kwargs, ctx, overrides=server.dependency_overrides, limiter=limiter)
    except (McpError, InputRequired):
        raise
    except (ToolError, NotFound) as exc:  # meant for the model
        return error_result(str(exc))
    except Exception as exc:  # unexpected: the model learns that it failed, the log learns why
        return error_result(server.errors.tool_failure(exc, tool.name))
    if isinstance(value, InputRequired):
        raise value
    return tool_result(tool, value)


async def _run_tool(server: Server, tool: ToolDef, kwargs: dict[str, Any], ctx: RequestContext) -> Any:
    return await invoke(
        tool.callee, dict(kwargs), ctx, overrides=server.dependency_overrides, limiter=server.thread_limiter()
    )


async def list_prompts(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    return _listing(server, ctx, "prompts", "prompts", server.prompts.values(), params)


async def get_prompt(server: Server, ctx: RequestContext, params: Any) -> Any:
    prompt = server.prompts.get(params.name)
    if prompt is None or (server.visibility is not None and not server.visibility(ctx, prompt)):
        raise InvalidParams(f"unknown prompt: {params.name}")
    arguments = dict(params.arguments or {})
    missing = [a["name"] for a in prompt.arguments if a["required"] and a["name"] not in arguments]
    if missing:
        raise InvalidParams(f"prompt {prompt.name} is missing required arguments: {', '.join(missing)}")
    known = {a["name"] for a in prompt.arguments}
    kwargs: dict[str, Any] = {k: v for k, v in arguments.items() if k in known}
    try:
        value = await invoke(
            prompt.callee, kwargs, ctx, overrides=server.dependency_overrides, limiter=server.thread_limiter()
        )
    except NotFound as exc:
        raise InvalidParams(str(exc) or f"prompt not found: {prompt.name}", data={"name": prompt.name}) from None
    if isinstance(value, InputRequired):
        raise value
    return prompt_result(prompt, value)


async def list_resources(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    return _listing(server, ctx, "resources", "resources", server.resources.values(), params)


async def list_templates(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    return _listing(server, ctx, "resourceTemplates", "templates", server.templates.values(), params)


async def read_resource(server: Server, ctx: RequestContext, params: Any) -> Any:
    uri = params.uri
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidParams(f"the URI is {len(uri)} characters long, over the {MAX_URI_LENGTH}-character limit")
    found = resolve_resource(server, uri)
    if found is None or (server.visibility is not None and not server.visibility(ctx, found[0])):
        raise ctx.era.resource_not_found(uri)
    served, variables = found
    names = served.params if isinstance(served, TemplateDef) else ()
    kwargs: dict[str, Any] = {k: v for k, v in variables.items() if k in names}
    try:
        value = await invoke(
            served.callee, kwargs, ctx, overrides=server.dependency_overrides, limiter=server.thread_limiter()
        )
    except NotFound:
        raise ctx.era.resource_not_found(uri) from None
    if isinstance(value, InputRequired):
        raise value
    return resource_contents(uri, served.mime_type, value)


async def subscribe(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    ctx.session.subscriptions.add(params.uri)
    return {}


async def unsubscribe(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    ctx.session.subscriptions.discard(params.uri)
    return {}


async def listen(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    return await serve_listen(ctx, params)


async def complete(server: Server, ctx: RequestContext, params: Any) -> dict[str, Any]:
    assert server.completion_handler is not None
    callee = server.completion_callee
    if callee is None or callee.fn is not server.completion_handler:
        callee = server.completion_callee = describe(server.completion_handler, {})
    context = wire.to_wire(params.context) if params.context is not None else None
    args = (wire.to_wire(params.ref), wire.to_wire(params.argument), context)
    value = await call_positional(callee, args, server.thread_limiter())
    if isinstance(value, dict) and "completion" in value:
        return value
    values = [str(v) for v in (value or [])]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


BUILTIN: dict[str, Callable[..., Awaitable[Any]]] = {
    "initialize": initialize,
    "ping": ping,
    "server/discover": discover,
    "logging/setLevel": set_level,
    "tools/list": list_tools,
    "tools/call": call_tool,
    "prompts/list": list_prompts,
    "prompts/get": get_prompt,
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
    "resources/read": read_resource,
    "resources/subscribe": subscribe,
    "resources/unsubscribe": unsubscribe,
    "subscriptions/listen": listen,
    "completion/complete": complete,
}
"""The methods the runtime implements (a method of a table without an entry here needs `@server.method`)."""
