"""The server: features registered from plain Python, served to clients of either era.

`Server` holds what a server offers (tools, prompts, resources, templates, completions, extra
method handlers) and serves any number of connections; `ServerSession` is one connection.
Routing is table-driven: the version of each request (from `initialize` on a handshake-era
connection, from `_meta` on a modern request) selects the generated table, which says whether
the method exists, who may send it, which capability gates it and how to validate its params
and result. The handlers below implement features; none of them routes or validates.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import inspect
import json
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel, ValidationError

from .errors import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND_LEGACY,
    InternalError,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingClientCapability,
    UnsupportedProtocolVersion,
)
from .features import (
    Context,
    PromptDef,
    ResourceDef,
    TemplateDef,
    ToolDef,
    error_result,
    make_prompt,
    make_resource,
    make_template,
    make_tool,
    prompt_result,
    resource_contents,
    tool_result,
)
from .mrtr import InputRequired, StateSealer, apply_elicitation, gather, nested_capability
from .protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    Protocol,
    gate_allows,
    has_capability,
    merge_capabilities,
    validation_detail,
)
from .session import IncomingRequest, Session
from .transport import Transport, stdio_server

log = logging.getLogger("mcpgen.runtime.server")

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[["RequestContext", Any], Awaitable[Any]]


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


async def _call(fn: Callable[..., Any], is_async: bool, /, *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    if is_async or inspect.isawaitable(result):
        result = await result
    return result


class RequestContext(Context):
    """What a handler knows about the request it serves, and what it may send back while serving it."""

    def __init__(self, session: ServerSession, request: IncomingRequest, version: str, modern: bool) -> None:
        self.session = session
        self.request = request
        self.protocol_version = version
        self.modern = modern
        meta = request.meta
        if modern:
            caps = meta.get(CLIENT_CAPABILITIES_KEY)
            self.client_capabilities: dict[str, Any] = caps if isinstance(caps, dict) else {}
            info = meta.get(CLIENT_INFO_KEY)
            self.client_info: dict[str, Any] | None = info if isinstance(info, dict) else None
            level = meta.get(LOG_LEVEL_KEY)
            self.log_level: str | None = level if level in LOG_LEVELS else None
        else:
            self.client_capabilities = session.client_capabilities
            self.client_info = session.client_info
            self.log_level = session.log_level
        self._last_progress: float | None = None
        self.input_responses: dict[str, Any] = {}
        self.state: Any = None

    def input_response(self, key: str) -> Any:
        """The client's answer to the input request `key` of the previous round (a result model), or None."""
        return self.input_responses.get(key)

    def input_required(self, state: Any = None, **requests: dict[str, Any]) -> InputRequired:
        """Ask for input: `return ctx.input_required(confirm=elicit(...), state={...})`."""
        return InputRequired(dict(requests), state)

    @property
    def server(self) -> Server:
        return self.session.server

    @property
    def request_id(self) -> str | int:
        return self.request.id

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send `notifications/progress` if the request asked for progress (it must increase)."""
        token = self.request.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError(f"progress must increase: {progress} after {self._last_progress}")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.session.send_notification("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send `notifications/message` if the client asked for this level (legacy: `logging/setLevel`;
        modern: the request's `logLevel`, without which nothing is sent)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {LOG_LEVELS}")
        if not has_capability(self.server.capabilities(), "logging"):
            return
        threshold = self.log_level
        if threshold is None and self.modern:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.session.send_notification("notifications/message", params)

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)


@dataclass
class _Listen:
    """One `subscriptions/listen` stream (modern) on a session."""

    id: str | int
    tools: bool = False
    prompts: bool = False
    resources: bool = False
    uris: frozenset[str] = frozenset()


class Cursors:
    """Opaque, tamper-evident pagination cursors: base64url(JSON) + HMAC."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def encode(self, kind: str, offset: int) -> str:
        payload = base64.urlsafe_b64encode(json.dumps({"k": kind, "o": offset}).encode()).decode().rstrip("=")
        return payload + "." + self._sign(payload)

    def decode(self, kind: str, cursor: str) -> int:
        payload, _, signature = cursor.partition(".")
        if not signature or not hmac.compare_digest(signature, self._sign(payload)):
            raise InvalidParams("invalid cursor", data={"cursor": cursor[:100]})
        try:
            data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            offset = data["o"]
            if data["k"] != kind or not isinstance(offset, int) or offset < 0:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise InvalidParams("invalid cursor", data={"cursor": cursor[:100]}) from None
        return offset

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode(), hashlib.sha256).hexdigest()[:24]


class Server:
    """An MCP server. Register features, then `await server.serve(transport)` (or `run_stdio()`).

    `versions` pins the protocol versions served (default: every version of the registry);
    `capabilities` overrides the inferred ones (deep-merged; a `None` value removes a key), and
    `list_changed=False` stops advertising list-changed notifications.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        versions: Iterable[str] | None = None,
        registry: Protocol | ModuleType | None = None,
        capabilities: Mapping[str, Any] | None = None,
        list_changed: bool = True,
        logging: bool = True,
        page_size: int | None = 50,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
        validate_results: bool = True,
        cursor_secret: bytes | None = None,
        state_key: bytes | None = None,
        seal_request_state: bool = True,
        state_ttl_seconds: float = 600.0,
        max_input_rounds: int = 10,
    ) -> None:
        self.protocol = registry if isinstance(registry, Protocol) else Protocol(registry)
        self.versions = self.protocol.check_versions(versions)
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title:
            self.info["title"] = title
        self.instructions = instructions
        self.list_changed = list_changed
        self.logging = logging
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.validate_results = validate_results
        self._capability_overrides = dict(capabilities or {})
        self._cursors = Cursors(cursor_secret)
        self.sealer = StateSealer(state_key, state_ttl_seconds, seal_request_state)
        self.max_input_rounds = max_input_rounds
        self.tools: dict[str, ToolDef] = {}
        self.prompts: dict[str, PromptDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, TemplateDef] = {}
        self.completion_handler: Callable[..., Any] | None = None
        self.extensions: dict[str, dict[str, Any]] = {}
        self.handlers: dict[str, Handler] = {}
        self.on_roots_changed: Callable[[ServerSession], Any] | None = None
        self.sessions: set[ServerSession] = set()
        self._listen_stops: set[anyio.Event] = set()
        self._install_builtin_handlers()

    # -- capabilities ------------------------------------------------------------------------

    def capabilities(self, version: str | None = None) -> dict[str, Any]:
        """What this server advertises: inferred from what is registered, then the overrides.

        For a `version` whose capabilities object has no `extensions` field, extensions are left out.
        """
        caps: dict[str, Any] = {}
        if self.tools:
            caps["tools"] = {"listChanged": self.list_changed}
        if self.prompts:
            caps["prompts"] = {"listChanged": self.list_changed}
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, "listChanged": self.list_changed}
        if self.completion_handler is not None:
            caps["completions"] = {}
        if self.logging:
            caps["logging"] = {}
        if self.extensions and (version is None or self._has_field(version, "ServerCapabilities", "extensions")):
            caps["extensions"] = {k: dict(v) for k, v in self.extensions.items()}
        return merge_capabilities(caps, self._capability_overrides)

    def _has_field(self, version: str, model: str, wire_name: str) -> bool:
        fields = getattr(getattr(self.protocol.models(version), model, None), "model_fields", {})
        return any((f.alias or n) == wire_name for n, f in fields.items())

    # -- registration -------------------------------------------------------------------------

    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Any:
        """Register a function as a tool (usable bare, `@server.tool`, or with options)."""

        def register(f: F) -> F:
            self.add_tool(
                f,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
            )
            return f

        return register(fn) if fn is not None else register

    def add_tool(self, fn: Callable[..., Any], **options: Any) -> ToolDef:
        annotations = options.pop("annotations", None)
        tool = make_tool(fn, annotations=dict(annotations) if annotations else None, **options)
        self.tools[tool.name] = tool
        self._changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        if self.tools.pop(name, None) is not None:
            self._changed("tools")

    def prompt(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        argument_descriptions: Mapping[str, str] | None = None,
    ) -> Any:
        def register(f: F) -> F:
            self.add_prompt(
                f,
                name=name,
                title=title,
                description=description,
                argument_descriptions=dict(argument_descriptions or {}),
            )
            return f

        return register(fn) if fn is not None else register

    def add_prompt(self, fn: Callable[..., Any], **options: Any) -> PromptDef:
        prompt = make_prompt(fn, **options)
        self.prompts[prompt.name] = prompt
        self._changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        if self.prompts.pop(name, None) is not None:
            self._changed("prompts")

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Register a static resource (`uri`) or, when `uri` has `{...}`, a resource template."""

        def register(f: F) -> F:
            if "{" in uri:
                self.add_resource_template(f, uri, name=name, title=title, description=description, mime_type=mime_type)
            else:
                self.add_resource(f, uri, name=name, title=title, description=description, mime_type=mime_type)
            return f

        return register

    def add_resource(self, fn: Callable[..., Any], uri: str, **options: Any) -> ResourceDef:
        resource = make_resource(fn, uri, **options)
        self.resources[uri] = resource
        self._changed("resources")
        return resource

    def remove_resource(self, uri: str) -> None:
        if self.resources.pop(uri, None) is not None:
            self._changed("resources")

    def add_resource_template(self, fn: Callable[..., Any], uri_template: str, **options: Any) -> TemplateDef:
        template = make_template(fn, uri_template, **options)
        self.templates[uri_template] = template
        self._changed("resources")
        return template

    def remove_resource_template(self, uri_template: str) -> None:
        if self.templates.pop(uri_template, None) is not None:
            self._changed("resources")

    def completion(self, fn: F) -> F:
        """Register the completion handler: `fn(ref, argument, context) -> list[str]` (or a `completion` dict)."""
        self.completion_handler = fn
        return fn

    def method(self, name: str) -> Callable[[F], F]:
        """Register a handler for any method of the tables (e.g. one a newer schema added):
        `async def handler(ctx, params) -> result`. Params and result are validated by the table."""

        def register(f: F) -> F:
            self.handlers[name] = f
            return f

        return register

    def enable_extension(self, identifier: str, settings: Mapping[str, Any] | None = None) -> None:
        """Advertise an extension (SEP-2133); extensions are off unless enabled."""
        self.extensions[identifier] = dict(settings or {})

    # -- change notifications ---------------------------------------------------------------

    def _changed(self, kind: str) -> None:
        for session in list(self.sessions):
            session.list_changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell subscribed clients that `uri` changed (legacy subscribers and modern listen streams)."""
        for session in list(self.sessions):
            session.resource_updated(uri)

    # -- serving ---------------------------------------------------------------------------

    async def serve(self, transport: Transport, **session_options: Any) -> None:
        """Serve one connection until it closes."""
        session = ServerSession(self, transport, **session_options)
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    async def serve_stdio(self) -> None:
        async with stdio_server() as transport:
            await self.serve(transport)

    def run_stdio(self) -> None:
        """Serve on stdin/stdout until stdin closes (log to stderr)."""
        anyio.run(self.serve_stdio)

    def stop_listening(self) -> None:
        """End every open `subscriptions/listen` stream gracefully (each gets its result); later
        listens are served as usual."""
        for stop in list(self._listen_stops):
            stop.set()

    # -- built-in feature handlers -------------------------------------------------------------

    def _install_builtin_handlers(self) -> None:
        self.handlers.update(
            {
                "ping": self._ping,
                "server/discover": self._discover,
                "logging/setLevel": self._set_level,
                "tools/list": self._list_tools,
                "tools/call": self._call_tool,
                "prompts/list": self._list_prompts,
                "prompts/get": self._get_prompt,
                "resources/list": self._list_resources,
                "resources/templates/list": self._list_templates,
                "resources/read": self._read_resource,
                "resources/subscribe": self._subscribe,
                "resources/unsubscribe": self._unsubscribe,
                "subscriptions/listen": self._listen,
                "completion/complete": self._complete,
            }
        )

    def _page(
        self, kind: str, items: list[dict[str, Any]], cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        start = self._cursors.decode(kind, cursor) if cursor is not None else 0
        if start > len(items):
            raise InvalidParams("invalid cursor: past the end of the list")
        if self.page_size is None:
            return items[start:], None
        end = start + self.page_size
        return items[start:end], self._cursors.encode(kind, end) if end < len(items) else None

    def _list(self, key: str, kind: str, items: list[dict[str, Any]], params: Any) -> dict[str, Any]:
        page, next_cursor = self._page(kind, items, getattr(params, "cursor", None))
        result: dict[str, Any] = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _ping(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        return {}

    async def _discover(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": self.protocol.newest_first(self.versions),
            "capabilities": self.capabilities(ctx.protocol_version),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _set_level(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        ctx.session.log_level = params.level
        return {}

    async def _list_tools(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        return self._list("tools", "tools", [t.describe() for t in self.tools.values()], params)

    async def _call_tool(self, ctx: RequestContext, params: Any) -> Any:
        tool = self.tools.get(params.name)
        if tool is None:
            raise InvalidParams(f"unknown tool: {params.name}")
        try:
            arguments = tool.arguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return error_result(f"invalid arguments for tool {tool.name}: {validation_detail(exc)}")
        if tool.model_param is not None:
            kwargs: dict[str, Any] = {tool.model_param: arguments}
        else:
            kwargs = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        if tool.context_param is not None:
            kwargs[tool.context_param] = ctx
        try:
            value = await _call(tool.fn, tool.is_async, **kwargs)
        except McpError:
            raise
        except Exception as exc:  # a tool error is reported to the model, not as a protocol error
            log.info("tool %s raised %s: %s", tool.name, type(exc).__name__, exc)
            return error_result(f"{type(exc).__name__}: {exc}")
        if isinstance(value, InputRequired):
            return value
        return tool_result(tool, value)

    async def _list_prompts(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        return self._list("prompts", "prompts", [p.describe() for p in self.prompts.values()], params)

    async def _get_prompt(self, ctx: RequestContext, params: Any) -> Any:
        prompt = self.prompts.get(params.name)
        if prompt is None:
            raise InvalidParams(f"unknown prompt: {params.name}")
        arguments = dict(params.arguments or {})
        missing = [a["name"] for a in prompt.arguments if a["required"] and a["name"] not in arguments]
        if missing:
            raise InvalidParams(f"prompt {prompt.name} is missing required arguments: {', '.join(missing)}")
        known = {a["name"] for a in prompt.arguments}
        kwargs: dict[str, Any] = {k: v for k, v in arguments.items() if k in known}
        if prompt.context_param is not None:
            kwargs[prompt.context_param] = ctx
        value = await _call(prompt.fn, prompt.is_async, **kwargs)
        if isinstance(value, InputRequired):
            return value
        return prompt_result(prompt, value)

    async def _list_resources(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        return self._list("resources", "resources", [r.describe() for r in self.resources.values()], params)

    async def _list_templates(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        items = [t.describe() for t in self.templates.values()]
        return self._list("resourceTemplates", "templates", items, params)

    async def _read_resource(self, ctx: RequestContext, params: Any) -> Any:
        uri = params.uri
        resource = self.resources.get(uri)
        if resource is not None:
            kwargs: dict[str, Any] = {resource.context_param: ctx} if resource.context_param else {}
            value = await _call(resource.fn, resource.is_async, **kwargs)
            return self._resource_value(ctx, uri, resource.mime_type, value)
        for template in self.templates.values():
            variables = template.template.match(uri)
            if variables is None:
                continue
            kwargs = {k: v for k, v in variables.items() if k in template.params}
            if template.context_param:
                kwargs[template.context_param] = ctx
            value = await _call(template.fn, template.is_async, **kwargs)
            return self._resource_value(ctx, uri, template.mime_type, value)
        code = INVALID_PARAMS if ctx.modern else RESOURCE_NOT_FOUND_LEGACY
        raise McpError(f"resource not found: {uri}", code=code, data={"uri": uri})

    def _resource_value(self, ctx: RequestContext, uri: str, mime_type: str | None, value: Any) -> Any:
        if isinstance(value, InputRequired):
            return value
        return resource_contents(uri, mime_type, value)

    async def _subscribe(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        ctx.session.subscriptions.add(params.uri)
        return {}

    async def _unsubscribe(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        ctx.session.subscriptions.discard(params.uri)
        return {}

    async def _listen(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        wanted = params.notifications
        caps = self.capabilities()
        honoured: dict[str, Any] = {}
        stream = _Listen(ctx.request_id)
        if wanted.tools_list_changed and has_capability(caps, "tools.listChanged"):
            honoured["toolsListChanged"] = stream.tools = True
        if wanted.prompts_list_changed and has_capability(caps, "prompts.listChanged"):
            honoured["promptsListChanged"] = stream.prompts = True
        if wanted.resources_list_changed and has_capability(caps, "resources.listChanged"):
            honoured["resourcesListChanged"] = stream.resources = True
        if wanted.resource_subscriptions and has_capability(caps, "resources.subscribe"):
            stream.uris = frozenset(wanted.resource_subscriptions)
            honoured["resourceSubscriptions"] = sorted(stream.uris)
        session = ctx.session
        await session.send_notification(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": {SUBSCRIPTION_ID_KEY: ctx.request_id}},
        )
        session.listens[ctx.request_id] = stream
        stop = anyio.Event()  # made in the running loop, one per stream
        self._listen_stops.add(stop)
        try:
            await stop.wait()
        finally:
            self._listen_stops.discard(stop)
            session.listens.pop(ctx.request_id, None)
        return {"_meta": {SUBSCRIPTION_ID_KEY: ctx.request_id}}

    async def _complete(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        assert self.completion_handler is not None
        context = _plain(params.context) if params.context is not None else None
        value = await _call(self.completion_handler, False, _plain(params.ref), _plain(params.argument), context)
        if isinstance(value, dict) and "completion" in value:
            return value
        values = [str(v) for v in (value or [])]
        return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


class ServerSession(Session):
    """One client connection of a `Server` (either era, or both on one stdio process)."""

    side = "server"

    def __init__(self, server: Server, transport: Transport, **options: Any) -> None:
        super().__init__(transport, **options)
        self.server = server
        self.protocol = server.protocol
        self.legacy_version: str | None = None  # set by `initialize`
        self.initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.log_level: str | None = None
        self.advertised: dict[str, Any] = {}  # the capabilities sent in the initialize result
        self.subscriptions: set[str] = set()
        self.listens: dict[str | int, _Listen] = {}
        self._stamp_cache: dict[int, tuple[bool, bool]] = {}
        self._outbox: MemoryObjectSendStream[tuple[str, Any]] | None = None

    # -- routing -------------------------------------------------------------------------------

    def accepts_cancel(self, incoming: IncomingRequest) -> bool:
        return incoming.method != "initialize"

    def on_closed(self) -> None:
        if self._outbox is not None:
            self._outbox.close()  # ends the notification sender, so the session can finish

    def can_cancel(self, method: str) -> bool:
        version = self.legacy_version
        if version is None:
            return False
        spec = self.protocol.methods(version).get("notifications/cancelled")
        return spec is not None and spec.direction.allows("server")

    async def handle_request(self, request: IncomingRequest) -> Any:
        meta = request.meta
        requested = meta.get(PROTOCOL_VERSION_KEY) if request.method != "initialize" else None
        if request.method == "initialize":
            return await self._initialize(request)
        if requested is not None:
            if (
                not isinstance(requested, str)
                or requested not in self.server.versions
                or not self.protocol.is_modern(requested)
            ):
                raise UnsupportedProtocolVersion(
                    "Unsupported protocol version",
                    data={"supported": self.protocol.newest_first(self.server.versions), "requested": requested},
                )
            version, modern = requested, True
        elif self.legacy_version is not None:
            version, modern = self.legacy_version, False
        elif request.method == "ping" and self.server.protocol.handshake_versions(self.server.versions):
            return {}
        else:
            raise InvalidParams(
                f"missing _meta[{PROTOCOL_VERSION_KEY!r}]: a modern request must name its protocol version "
                "(a handshake-era client must send initialize first)",
                data={"supported": self.protocol.newest_first(self.server.versions)},
            )
        spec = self.protocol.methods(version).get(request.method)
        if spec is None or spec.kind.value != "request" or not spec.direction.allows("client"):
            raise MethodNotFound(f"method not found: {request.method} (protocol {version})")
        capabilities = self.server.capabilities()
        if spec.capability is not None and spec.capability.side in ("server", "receiver"):
            if not gate_allows(capabilities, spec.capability, request.params):
                raise MethodNotFound(
                    f"method not found: {request.method} (this server does not offer {spec.capability.path})"
                )
        handler = self.server.handlers.get(request.method)
        if handler is None:
            raise MethodNotFound(f"method not found: {request.method}")
        try:
            params = spec.parse_params(request.params)
        except ValidationError as exc:
            raise InvalidParams(
                f"invalid params for {request.method}: {validation_detail(exc)}",
                data={"errors": json.loads(exc.json(include_url=False, include_input=False))},
            ) from None
        ctx = RequestContext(self, request, version, modern)
        if modern and spec.may_require_input:
            self._read_input(spec, ctx, request)
        result = await handler(ctx, params)
        rounds = 0
        while isinstance(result, InputRequired):
            if not self.protocol.may_require_input(spec.method):
                log.error("the %s handler asked for input, which only multi-round-trip methods may do", spec.method)
                raise InternalError(
                    f"server error: the {spec.method} handler asked for input, which {spec.method} cannot carry"
                )
            self._check_input_capabilities(ctx, result)
            if modern:
                return self._finish(spec, ctx, self._input_required_result(spec, ctx, request, result))
            rounds += 1
            if rounds > self.server.max_input_rounds:
                raise InternalError(
                    f"the {spec.method} handler asked for input more than {self.server.max_input_rounds} times"
                )
            ctx.input_responses = await self._ask_client(ctx, result)
            ctx.state = result.state
            result = await handler(ctx, params)
        return self._finish(spec, ctx, result)

    # -- multi-round-trip requests -------------------------------------------------------------

    def _check_input_capabilities(self, ctx: RequestContext, asked: InputRequired) -> None:
        """The server never sends an input request kind the client did not declare."""
        table = self.protocol.methods(ctx.protocol_version)
        missing: dict[str, Any] = {}
        for key, request in asked.requests.items():
            spec = table.get(request["method"])
            if spec is None or not spec.direction.allows("server") or spec.kind.value == "notification":
                raise InternalError(f"input request {key!r}: {request['method']} is not something a server may ask for")
            gate = spec.capability
            if gate is not None and not gate_allows(ctx.client_capabilities, gate, request.get("params")):
                for path in (gate.path_for(request.get("params")), *gate.extra_paths(request.get("params"))):
                    if not has_capability(ctx.client_capabilities, path):
                        missing = merge_capabilities(missing, nested_capability(path))
                if not missing:  # the default refinement was declared but an extra path was not
                    missing = nested_capability(gate.path)
        if missing:
            message = "the client did not declare the capabilities this request needs: " + ", ".join(sorted(missing))
            raise MissingClientCapability(message, data={"requiredCapabilities": missing})

    def _input_required_result(
        self, spec: Any, ctx: RequestContext, request: IncomingRequest, asked: InputRequired
    ) -> dict[str, Any]:
        body = {
            "s": asked.state,
            "k": {key: r["method"] for key, r in asked.requests.items()},
            "q": {
                key: r["params"]["requestedSchema"]
                for key, r in asked.requests.items()
                if r["method"] == "elicitation/create" and "requestedSchema" in (r.get("params") or {})
            },
        }
        result: dict[str, Any] = {
            "resultType": "input_required",
            "requestState": self.server.sealer.seal(body, spec.method, request.params),
        }
        if asked.requests:
            result["inputRequests"] = asked.requests
        return result

    def _read_input(self, spec: Any, ctx: RequestContext, request: IncomingRequest) -> None:
        """Open a retry's `requestState` and decode its `inputResponses` by the kinds asked for."""
        params = request.params or {}
        token = params.get("requestState")
        responses = params.get("inputResponses")
        if token is None:
            if responses:
                raise InvalidParams("inputResponses without the requestState they answer")
            return
        body = self.server.sealer.open(token, spec.method, params)
        ctx.state = body.get("s")
        kinds = body.get("k") or {}
        schemas = body.get("q") or {}
        table = self.protocol.methods(ctx.protocol_version)
        for key, value in (responses or {}).items():
            kind = kinds.get(key)
            if kind is None or kind not in table:
                continue  # an answer to nothing we asked: ignored
            ctx.input_responses[key] = self._decode_answer(table[kind], key, value, schemas.get(key))

    def _decode_answer(self, spec: Any, key: str, value: Any, schema: Any) -> Any:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        try:
            answer = spec.parse_result(value)
        except ValidationError as exc:
            raise InvalidParams(f"invalid input response {key!r}: {validation_detail(exc)}") from None
        if isinstance(schema, dict) and getattr(answer, "action", None) == "accept":
            try:
                content = apply_elicitation(schema, getattr(answer, "content", None))
            except ValueError as exc:
                raise InvalidParams(f"input response {key!r} does not fit the requested schema: {exc}") from None
            answer = spec.parse_result({**value, "content": content})
        return answer

    async def _ask_client(self, ctx: RequestContext, asked: InputRequired) -> dict[str, Any]:
        """The legacy shim: each input request goes out as a server->client request, concurrently."""
        table = self.protocol.methods(ctx.protocol_version)
        answers: dict[str, Any] = {}

        async def ask(key: str, request: dict[str, Any]) -> None:
            spec = table[request["method"]]
            params = dict(request.get("params") or {})
            if request["method"] == "elicitation/create" and params.get("mode") == "url":
                params.setdefault("elicitationId", secrets.token_hex(8))  # handshake-era URL mode needs one
            try:
                spec.parse_params(params or None)
            except ValidationError as exc:
                raise InternalError(
                    f"input request {key!r} is not valid in {ctx.protocol_version}: {validation_detail(exc)}"
                ) from None
            raw = await self.send_request(request["method"], params or None)
            answers[key] = self._decode_answer(spec, key, raw, params.get("requestedSchema"))

        await gather([functools.partial(ask, key, request) for key, request in asked.requests.items()])
        return answers

    def _finish(self, spec: Any, ctx: RequestContext, result: Any) -> Any:
        """Stamp, validate and encode a handler's result."""
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not isinstance(result, dict):
            raise InternalError(f"the {spec.method} handler returned {type(result).__name__}, not a result object")
        if ctx.modern:
            result = dict(result)
            has_type, has_cache = self._stamp_fields(spec)
            if has_type:
                result.setdefault("resultType", "complete")
            if has_cache and result.get("resultType", "complete") == "complete":
                result.setdefault("ttlMs", self.server.cache_ttl_ms)
                result.setdefault("cacheScope", self.server.cache_scope)
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_KEY: self.server.info}
        if self.server.validate_results:
            try:
                spec.parse_result(result)
            except ValidationError as exc:
                log.error("%s produced an invalid result: %s", spec.method, exc)
                raise InternalError(
                    f"the server produced an invalid {spec.method} result: {validation_detail(exc)}"
                ) from None
        return result

    def _stamp_fields(self, spec: Any) -> tuple[bool, bool]:
        key = id(spec)
        found = self._stamp_cache.get(key)
        if found is None:
            aliases: set[str] = set()
            for model in spec.result:
                fields = getattr(model, "model_fields", {})
                aliases.update((f.alias or n) for n, f in fields.items())
            found = ("resultType" in aliases, "cacheScope" in aliases)
            self._stamp_cache[key] = found
        return found

    async def _initialize(self, request: IncomingRequest) -> dict[str, Any]:
        handshake = self.protocol.handshake_versions(self.server.versions)
        params = request.params or {}
        requested = params.get("protocolVersion")
        if not handshake:
            raise InvalidParams(
                "Unsupported protocol version: this server only serves per-request (modern) versions",
                data={"supported": self.protocol.newest_first(self.server.versions), "requested": requested},
            )
        version = (
            requested
            if isinstance(requested, str) and requested in handshake
            else self.protocol.newest_first(handshake)[0]
        )
        spec = self.protocol.methods(version)["initialize"]
        try:
            parsed = spec.parse_params(params)
        except ValidationError as exc:
            raise InvalidParams(f"invalid initialize params: {validation_detail(exc)}") from None
        self.legacy_version = version
        caps = params.get("capabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else None
        del parsed
        self.advertised = self.server.capabilities(version)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.advertised,
            "serverInfo": self.server.info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        spec.parse_result(result)
        return result

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self.initialized = True
        elif method == "notifications/roots/list_changed" and self.server.on_roots_changed is not None:
            self.defer(self.server.on_roots_changed, self)

    # -- pushing notifications ------------------------------------------------------------------

    def _spawn(self, method: str, params: dict[str, Any] | None) -> None:
        """Queue a notification; one task sends the queue in order."""
        if self._task_group is None or self.closed:
            return
        if self._outbox is None:
            self._outbox, outbox = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
            self._task_group.start_soon(self._drain, outbox)
        self._outbox.send_nowait((method, params))

    async def _drain(self, outbox: MemoryObjectReceiveStream[tuple[str, Any]]) -> None:
        async with outbox:
            async for method, params in outbox:
                try:
                    await self.send_notification(method, params)
                except Exception as exc:  # the session may be closing; a lost notification is not fatal
                    log.debug("could not send %s: %s", method, exc)

    def list_changed(self, kind: str) -> None:
        method = f"notifications/{kind}/list_changed"
        if self.legacy_version is not None:  # notifications may follow the initialize result at once
            if has_capability(self.advertised, f"{kind}.listChanged"):
                self._spawn(method, None)
        for stream in list(self.listens.values()):
            if getattr(stream, kind):
                self._spawn(method, {"_meta": {SUBSCRIPTION_ID_KEY: stream.id}})

    def resource_updated(self, uri: str) -> None:
        if self.legacy_version is not None and any(
            uri == s or uri.startswith(s.rstrip("/") + "/") for s in self.subscriptions
        ):
            self._spawn("notifications/resources/updated", {"uri": uri})
        for stream in list(self.listens.values()):
            if uri in stream.uris:
                self._spawn("notifications/resources/updated", {"uri": uri, "_meta": {SUBSCRIPTION_ID_KEY: stream.id}})


__all__ = ["Context", "Cursors", "RequestContext", "Server", "ServerSession"]
