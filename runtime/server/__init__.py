"""The server: features registered from plain Python, served to clients of either era.

    server = Server("demo", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    server.run_stdio()

`Server` holds what a server offers (tools, prompts, resources, templates, completions, extra
method handlers) and serves any number of connections; each is a `ServerSession`. Routing is
table-driven (`protocol.routing`), what differs by era lives in the era strategies (`eras`), and
the built-in handlers (`handlers`) implement the features. The Streamable HTTP application is
`http` (`http_app()`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import anyio
import anyio.from_thread
import anyio.lowlevel
from typing_extensions import Unpack

from ..core.stdio import stdio_server
from ..core.telemetry import Telemetry, instrument
from ..core.transport import Transport
from ..protocol.capabilities import merge_capabilities
from ..protocol.changes import Change
from ..protocol.eras import Eras
from ..protocol.routing import Router
from ..protocol.sealing import StateSealer
from ..protocol.tables import VersionRegistry
from . import handlers as builtin
from .bus import ChangeBus, LocalBus
from .catalog import Feature, FeatureSet, Visibility, infer_capabilities, scopes_needed, visible_by_scopes
from .context import Elicited, RequestContext
from .eras import serving
from .failures import ErrorReporter, NotFound, ToolError
from .features import (
    Audio,
    Context,
    Depends,
    File,
    Image,
    PromptDef,
    ResourceDef,
    TemplateDef,
    ToolDef,
    describe,
    in_handler_thread,
    make_prompt,
    make_resource,
    make_template,
    make_tool,
)
from .hooks import AnyMiddleware, Chains, Lifespan, LifespanRunner, Middleware, State
from .loading import not_while_loading
from .options import (
    Caching,
    DeprecatedServerOptions,
    Diagnostics,
    HttpOptions,
    Sealing,
    ServerAdvertising,
    ServerLimits,
    SessionOptions,
    resolve_server_options,
)
from .pagination import CursorSealer
from .session import ServerSession
from .subscriptions import ListenStream
from .tasks import TaskManager, TaskOptions, TaskSupport

if TYPE_CHECKING:
    from anyio import CapacityLimiter

    from ..auth.server.resource import ProtectedResource
    from .features.calling import Callee
    from .http.app import HttpApp
    from .http.routes import RouteHandler

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[[RequestContext, Any], Awaitable[Any]]


class Server(Generic[State]):
    """An MCP server. Register features, then `await server.serve(transport)` (or `run_stdio()`).

    - `name`, `version`, `instructions`: what the server tells clients about itself (the
      instructions are for the model);
    - `versions`: the protocol versions served (default: every version of the registry);
      `registry`: the generated tree to serve (default: the one mcpgen ships);
    - `lifespan`: `lifespan(server)`, an async context manager run once per process while the
      server serves; what it yields is `ctx.lifespan` in every handler (a `Server[YourState]`);
    - `middleware`: wrapped around every request and every tool call, the first outermost
      (`hooks.Middleware`);
    - the groups: `advertising` (`ServerAdvertising`: the title, capability overrides,
      list-changed and logging capabilities, cache hints, and what each caller is shown),
      `sealing` (`Sealing`: the keys of `requestState` and cursors; every worker of a
      deployment needs the same), `limits` (`ServerLimits`: pages, input rounds, worker
      threads), `diagnostics` (`Diagnostics`: result validation, error details, OpenTelemetry),
      `tasks` (`TaskOptions`: where tool calls that run as tasks are kept, and for how long).

    The keywords these groups replace (`title=`, `capabilities=`, `list_changed=`, `logging=`,
    `caching=`, `visibility=`, `validate_results=`, `page_size=`, ...) still work for one
    release, with a `DeprecationWarning`.
    """

    def __init__(  # noqa: PLR0913, PLR0915 - the grouped options (see the class docstring)
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        versions: Iterable[str] | None = None,
        registry: VersionRegistry | ModuleType | None = None,
        advertising: ServerAdvertising | None = None,
        sealing: Sealing | None = None,
        limits: ServerLimits | None = None,
        diagnostics: Diagnostics | None = None,
        tasks: TaskOptions | None = None,
        lifespan: Lifespan[State] | None = None,
        middleware: Sequence[AnyMiddleware] = (),
        **deprecated: Unpack[DeprecatedServerOptions],
    ) -> None:
        options = resolve_server_options(
            {"advertising": advertising, "sealing": sealing, "limits": limits, "diagnostics": diagnostics}, deprecated
        )
        shown = options.advertising
        self.registry = registry if isinstance(registry, VersionRegistry) else VersionRegistry(registry)
        self.eras = Eras(self.registry)
        self.serving = serving(self.eras)
        self.versions = self.registry.check_versions(versions)
        """The protocol versions served, oldest first."""
        self.info: dict[str, Any] = {"name": name, "version": version}
        """What the server tells clients about itself: `name`, `version` (and `title`)."""
        if shown.title:
            self.info["title"] = shown.title
        self.instructions = instructions
        self.advertising = shown
        """What the server shows its clients (`ServerAdvertising`), as given."""
        self.list_changed = shown.list_changed
        self.logging = shown.logging
        self.validate_results = options.diagnostics.validate_results
        self.vouched_results: set[tuple[str, str]] = set()
        """(version, method) pairs whose runtime-built results passed validation once (`ServerSession.finish`)."""
        self.sealing = options.sealing
        self.caching = shown.caching
        self.limits = options.limits
        self.diagnostics = options.diagnostics
        self.errors = ErrorReporter(options.diagnostics.error_details)
        self.telemetry = instrument(options.diagnostics.telemetry, "server")
        self.lifespan = LifespanRunner[State](self, lifespan)
        self.middleware = Chains(middleware)
        self.visibility = shown.visibility
        self.dependency_overrides: dict[Callable[..., Any], Callable[..., Any]] = {}
        """Providers to use instead of others (`server.dependency_overrides[get_db] = fake_db`)."""
        self.routes: dict[str, tuple[frozenset[str], RouteHandler]] = {}  # custom HTTP routes
        self._limiter: anyio.lowlevel.RunVar[CapacityLimiter | None] = anyio.lowlevel.RunVar("mcpgen_thread_limiter")
        self._capability_overrides = dict(shown.capabilities or {})
        self._capabilities: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.cursors = CursorSealer(options.sealing.cursor_secret)
        self.sealer = StateSealer(options.sealing.keys, options.sealing.ttl_seconds, options.sealing.seal_request_state)
        self.tools: FeatureSet[ToolDef] = FeatureSet("tools", self._changed, "tool")
        """The registered tools, by name, in registration order (a read-only mapping)."""
        self.prompts: FeatureSet[PromptDef] = FeatureSet("prompts", self._changed, "prompt")
        """The registered prompts, by name."""
        self.resources: FeatureSet[ResourceDef] = FeatureSet("resources", self._changed, "resource")
        """The registered static resources, by URI."""
        self.templates: FeatureSet[TemplateDef] = FeatureSet("resources", self._changed, "resource template")
        """The registered resource templates, by template."""
        self.completion_handler: Callable[..., Any] | None = None
        self.completion_callee: Callee | None = None
        self.extensions: dict[str, dict[str, Any]] = {}
        self.handlers: dict[str, Handler] = {
            method: functools.partial(fn, self) for method, fn in builtin.BUILTIN.items()
        }
        self.on_roots_changed: Callable[[ServerSession], Any] | None = None
        """Called with the session when a handshake-era client says its roots changed."""
        self.sessions: set[ServerSession] = set()
        self.listening: set[ListenStream] = set()
        self.bus: ChangeBus = LocalBus()  # a shared bus (redis_bus.RedisBus) spreads changes across processes
        """Where change notifications go: this process (the default), or every process of a
        deployment with a shared bus (`redis_bus.RedisBus`)."""
        self.http_auth: ProtectedResource | None = None  # what `http_app()` applies when given no `auth`
        """The OAuth protection `http_app()` applies when given no `auth` (and so `mcpgen serve` and
        the worker app factory)."""
        self.tasks = TaskManager(self, tasks)  # tool calls that run as tasks (`task_support=`)
        self.handlers.update(self.tasks.handlers())
        self._extension_ids: frozenset[str] = frozenset()
        self.router = Router(
            self.registry,
            self.versions,
            self.eras,
            self.handlers,
            self._offered,
            self._header_params,
            self._enabled_extensions,
            self.tasks.validated_params,
        )

    # -- capabilities ------------------------------------------------------------------------

    def capabilities(self, version: str | None = None) -> dict[str, Any]:
        """What this server advertises: inferred from what is registered, then the overrides.

        For a `version` whose capabilities object has no `extensions` field, extensions are left out.
        """
        return copy.deepcopy(self._cached_capabilities(version))

    def _cached_capabilities(self, version: str | None) -> dict[str, Any]:
        """`capabilities(version)`, computed once until something registered changes (not to be mutated)."""
        key = (version, self.logging, self.list_changed, len(self.extensions))
        found = self._capabilities.get(key)
        if found is None:
            found = self._capabilities[key] = self._infer_capabilities(version)
        return found

    def _infer_capabilities(self, version: str | None) -> dict[str, Any]:
        extensions = {**self.extensions, **self.tasks.advertised()}
        if extensions and version is not None and not self._has_extensions(version):
            extensions = {}
        caps = infer_capabilities(
            tools=bool(self.tools),
            prompts=bool(self.prompts),
            resources=bool(self.resources or self.templates),
            completions=self.completion_handler is not None,
            logging=self.logging,
            list_changed=self.list_changed,
            extensions=extensions,
        )
        caps = merge_capabilities(caps, self.tasks.legacy_capabilities(version))
        return merge_capabilities(caps, self._capability_overrides)

    def _has_extensions(self, version: str) -> bool:
        method, path = self.eras.of(version).server_capabilities_at
        return self.registry.has_field(version, method, (*path, "extensions"), result=True)

    def _offered(self) -> dict[str, Any]:
        return self._cached_capabilities(None)

    def _enabled_extensions(self) -> frozenset[str]:
        """The extensions whose rows are in force in the tables this server serves."""
        return self._extension_ids

    def _extensions_changed(self) -> None:
        self._capabilities.clear()
        self.tasks.refresh()
        self._extension_ids = frozenset(self.extensions) | self.tasks.extension_ids()

    def _header_params(self, params: Mapping[str, Any] | None) -> Mapping[str, str]:
        name = (params or {}).get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        return tool.header_params if tool is not None else {}

    # -- registration -------------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Collection[str] = (),
        task_support: TaskSupport = "forbidden",
        defer_task: bool = False,
        replace: bool = False,
    ) -> Callable[[F], F]: ...

    def tool(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Collection[str] = (),
        task_support: TaskSupport = "forbidden",
        defer_task: bool = False,
        replace: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a function as a tool (`@server.tool`, or `@server.tool(...)` with options);
        `add_tool` does the same without a decorator.

        Args:
            fn: the function (given when used bare, as `@server.tool`).
            name: the tool's name (default: the function's name).
            title: a human-readable title.
            description: what the tool does (default: the function's docstring).
            annotations: the tool's behaviour hints (`readOnlyHint`, `destructiveHint`, ...).
            structured_output: whether results carry `structuredContent` and the tool an
                `outputSchema` (default: when the return annotation is a type other than `str`,
                `None`, `Any` or content blocks).
            scopes: the OAuth scopes a caller needs (checked by the HTTP auth middleware).
            task_support: whether its calls may (`"optional"`) or must (`"required"`) run as
                tasks (see `tasks`).
            defer_task: the task begins when the handler awaits `ctx.run_as_task()`, the input
                it asks for before that being the call's own (multi-round-trip) input.
            replace: replace a tool registered under the same name (without it, that is an error).

        Returns:
            The function itself (bare use), or a decorator that registers one and returns it.

        Raises:
            TypeError: the function's signature cannot be described as a schema.
            ValueError: a tool of that name is registered already (and `replace` is not set).
        """

        def register(f: F) -> F:
            self.add_tool(
                f,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
                scopes=scopes,
                task_support=task_support,
                defer_task=defer_task,
                replace=replace,
            )
            return f

        return register(fn) if fn is not None else register

    @functools.cached_property
    def content_types(self) -> frozenset[str]:
        """The content block kinds of the versions served (read from the tables)."""
        return frozenset().union(*(self.registry.content_types(v) for v in self.versions))

    def add_tool(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Collection[str] = (),
        task_support: TaskSupport = "forbidden",
        defer_task: bool = False,
        replace: bool = False,
    ) -> ToolDef:
        """Register `fn` as a tool (what the `tool` decorator does), at any time: connected
        clients are told the list changed.

        The input schema comes from `fn`'s parameters (a `RequestContext`-annotated one is the
        context, and injected ones (`Depends`) are the server's to fill in: neither is an
        argument), the output schema from its return annotation.

        Args:
            fn: the function, sync (run in a worker thread) or async, called with the validated
                arguments.
            name: the tool's name (default: `fn.__name__`).
            title: a human-readable title.
            description: what the tool does (default: `fn`'s docstring).
            annotations: the tool's behaviour hints (`readOnlyHint`, `destructiveHint`, ...).
            icons: icons for the tool, as the protocol's icon objects.
            meta: the tool's `_meta` in `tools/list`.
            structured_output: whether results carry `structuredContent` and the tool an
                `outputSchema` (default: when the return annotation is a type other than `str`,
                `None`, `Any` or content blocks).
            scopes: the OAuth scopes a caller needs (checked by the HTTP auth middleware).
            task_support: whether calls may (`"optional"`) or must (`"required"`) run as tasks.
            defer_task: the task begins when the handler awaits `ctx.run_as_task()`.
            replace: replace a tool registered under the same name (without it, that is an error).

        Returns:
            The tool's definition (its `name`, `input_schema`, `output_schema`, ...).

        Raises:
            TypeError: `fn`'s signature cannot be described as a schema (`*args`,
                `**kwargs`), or its return type gives an unusable output schema.
            ValueError: `task_support` is not one of the three values, or a tool of that name
                is registered already (and `replace` is not set).
        """
        tool = make_tool(
            fn,
            content_types=self.content_types,
            name=name,
            title=title,
            description=description,
            annotations=dict(annotations) if annotations else None,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
            scopes=scopes,
            task_support=task_support,
            defer_task=defer_task,
        )
        return self.tools.add(tool.name, tool, replace=replace)

    def remove_tool(self, name: str) -> None:
        """Unregister the tool `name`; connected clients are told the list changed (nothing happens,
        and no notification is sent, if no tool has that name).

        Args:
            name: the tool's name.
        """
        self.tools.remove(name)

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        argument_descriptions: Mapping[str, str] | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> Callable[[F], F]: ...

    def prompt(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        argument_descriptions: Mapping[str, str] | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a function as a prompt (`@server.prompt`, or `@server.prompt(...)` with options);
        `add_prompt` does the same without a decorator.

        Args:
            fn: the function (given when used bare, as `@server.prompt`).
            name: the prompt's name (default: the function's name).
            title: a human-readable title.
            description: what the prompt is for (default: the function's docstring).
            argument_descriptions: a description per argument name.
            scopes: the OAuth scopes a caller needs (checked by the HTTP auth middleware).
            replace: replace a prompt registered under the same name (without it, that is an error).

        Returns:
            The function itself (bare use), or a decorator that registers one and returns it.
        """

        def register(f: F) -> F:
            descriptions = dict(argument_descriptions or {})
            self.add_prompt(
                f,
                name=name,
                title=title,
                description=description,
                argument_descriptions=descriptions,
                scopes=scopes,
                replace=replace,
            )
            return f

        return register(fn) if fn is not None else register

    def add_prompt(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        argument_descriptions: Mapping[str, str] | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> PromptDef:
        """Register `fn` as a prompt (what the `prompt` decorator does), at any time: connected
        clients are told the list changed. The prompt's arguments are `fn`'s parameters.

        Args:
            fn: the function, sync (run in a worker thread) or async; it returns a string, a
                message, or a list of them (or raises `NotFound`).
            name: the prompt's name (default: `fn.__name__`).
            title: a human-readable title.
            description: what the prompt is for (default: `fn`'s docstring).
            argument_descriptions: a description per argument name.
            scopes: the OAuth scopes a caller needs (checked by the HTTP auth middleware).
            replace: replace a prompt registered under the same name (without it, that is an error).

        Returns:
            The prompt's definition.

        Raises:
            ValueError: a prompt of that name is registered already (and `replace` is not set).
        """
        prompt = make_prompt(
            fn,
            content_types=self.content_types,
            name=name,
            title=title,
            description=description,
            argument_descriptions=dict(argument_descriptions) if argument_descriptions is not None else None,
            scopes=scopes,
        )
        return self.prompts.add(prompt.name, prompt, replace=replace)

    def remove_prompt(self, name: str) -> None:
        """Unregister the prompt `name`; connected clients are told the list changed (nothing happens,
        and no notification is sent, if no prompt has that name).

        Args:
            name: the prompt's name.
        """
        self.prompts.remove(name)

    def resource(  # noqa: PLR0913 - every keyword is a documented option
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> Callable[[F], F]:
        """Register a static resource (`uri`) or, when `uri` has `{...}`, a resource template
        (`add_resource` and `add_resource_template` do the same without a decorator). A handler
        raises `NotFound` for a URI it has nothing for.

        Args:
            uri: the resource's URI, or an RFC 6570 template (`notes://{id}`).
            name: the resource's name (default: the function's name).
            title: a human-readable title.
            description: what it holds (default: the function's docstring).
            mime_type: the MIME type of its contents.
            scopes: the OAuth scopes a caller needs for reading it, subscribing to it and
                listening to its changes.
            replace: replace a resource (or template) registered under the same URI (without
                it, that is an error).

        Returns:
            A decorator that registers the function and returns it.
        """

        def register(f: F) -> F:
            options: dict[str, Any] = {"name": name, "title": title, "description": description}
            options.update(mime_type=mime_type, scopes=scopes, replace=replace)
            if "{" in uri:
                self.add_resource_template(f, uri, **options)
            else:
                self.add_resource(f, uri, **options)
            return f

        return register

    def add_resource(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: dict[str, Any] | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> ResourceDef:
        """Register `fn` as the static resource `uri` (what the `resource` decorator does for a
        URI without `{...}`), at any time: connected clients are told the list changed.

        Args:
            fn: the function, sync (run in a worker thread) or async, that returns the contents
                (text, bytes, a model or JSON-representable data), or raises `NotFound`.
            uri: the resource's URI.
            name: the resource's name (default: `fn.__name__`).
            title: a human-readable title.
            description: what the resource holds (default: `fn`'s docstring).
            mime_type: the MIME type of its contents.
            annotations: the resource's annotations (`audience`, `priority`, ...).
            scopes: the OAuth scopes a reader needs (checked by the HTTP auth middleware).
            replace: replace a resource registered under the same URI (without it, that is an error).

        Returns:
            The resource's definition.

        Raises:
            ValueError: a resource of that URI is registered already (and `replace` is not set).
        """
        resource = make_resource(
            fn,
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            scopes=scopes,
        )
        return self.resources.add(uri, resource, replace=replace)

    def remove_resource(self, uri: str) -> None:
        """Unregister the resource `uri`; connected clients are told the list changed (nothing happens,
        and no notification is sent, if no resource has that URI).

        Args:
            uri: the resource's URI.
        """
        self.resources.remove(uri)

    def add_resource_template(  # noqa: PLR0913 - every keyword is a documented option
        self,
        fn: Callable[..., Any],
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        scopes: Collection[str] = (),
        replace: bool = False,
    ) -> TemplateDef:
        """Register `fn` as the resource template `uri_template` (RFC 6570, e.g.
        `notes://{id}`): a read of a matching URI calls `fn` with the template's variables.

        Args:
            fn: the function, sync (run in a worker thread) or async, with a parameter per
                variable of the template; it raises `NotFound` for a URI it has nothing for.
            uri_template: the template.
            name: the template's name (default: `fn.__name__`).
            title: a human-readable title.
            description: what the resources hold (default: `fn`'s docstring).
            mime_type: the MIME type of their contents.
            scopes: the OAuth scopes a reader needs (checked by the HTTP auth middleware).
            replace: replace a template registered already (without it, that is an error).

        Returns:
            The template's definition.

        Raises:
            TypeError: `fn` has no parameter for a variable of the template.
            ValueError: the template is registered already (and `replace` is not set).
        """
        template = make_template(
            fn, uri_template, name=name, title=title, description=description, mime_type=mime_type, scopes=scopes
        )
        return self.templates.add(uri_template, template, replace=replace)

    def remove_resource_template(self, uri_template: str) -> None:
        """Unregister the resource template `uri_template`; connected clients are told the list
        changed (nothing happens, and no notification is sent, if no template is registered under it).

        Args:
            uri_template: the template, as registered.
        """
        self.templates.remove(uri_template)

    def completion(self, fn: F) -> F:
        """Register the completion handler: `fn(ref, argument, context) -> list[str]` (or a `completion` dict)."""
        self.completion_handler = fn
        self.completion_callee = describe(fn, {})
        self._capabilities.clear()
        return fn

    def method(self, name: str) -> Callable[[F], F]:
        """Register a handler for any method of the tables (e.g. one a newer schema added):
        `async def handler(ctx, params) -> result`. Params and result are validated by the table.

        Args:
            name: the method's name (e.g. `tools/call`: a registered handler replaces the built-in one).

        Returns:
            A decorator that registers the handler and returns it.
        """

        def register(f: F) -> F:
            self.handlers[name] = f
            return f

        return register

    def enable_extension(self, identifier: str, settings: Mapping[str, Any] | None = None) -> None:
        """Advertise an extension (SEP-2133); extensions are off unless enabled. The rows of an
        extension the generated tree has are in force in the tables served from then on.
        (The tasks extension is enabled by registering a tool with `task_support`.)

        Args:
            identifier: the extension's identifier (e.g. `io.modelcontextprotocol/tasks`).
            settings: the extension's settings, advertised with it.
        """
        self.extensions[identifier] = dict(settings or {})
        self._extensions_changed()

    # -- the toolkit: lifespan, middleware, visibility, threads, routes -----------------------

    def running(self) -> AbstractAsyncContextManager[State]:
        """Hold the server's lifespan for the body (start it unless it runs already), yielding its
        state: what serving does by itself; for tests and embedding (`async with server.running():`)."""
        return self.lifespan.hold()

    def build_validators(self) -> None:
        """Build now what the first request of each method would otherwise build: the
        validators of every method of every version served (with the enabled extensions in
        force) and telemetry's import. The generated models are deferred, so without this each
        method's first request builds them, tens of milliseconds (hundreds on a loaded machine)
        a peer's timeout counts against the server. The HTTP app calls it while starting, before
        it serves (its lifespan); it builds each validator once per process, a later call finds
        them built."""
        for version in self.versions:
            self.registry.build_validators(version, self._enabled_extensions())
        if self.telemetry is not None:
            self.telemetry.load()

    @property
    def state(self) -> State:
        """What the lifespan yielded (`LifespanNotRunning` while it is not running; None without a lifespan)."""
        return self.lifespan.state

    def add_middleware(self, middleware: AnyMiddleware) -> None:
        """Add a middleware inside the ones already there (see `hooks.Middleware`).

        Args:
            middleware: a `Middleware`, or an `async def (request, call_next)` request middleware.
        """
        self.middleware.add(middleware)

    def visible(self, ctx: RequestContext[Any], item: Feature) -> bool:
        """May the caller of `ctx` see and use `item` (the `visibility` filter; True without one)?"""
        return self.visibility is None or self.visibility(ctx, item)

    def thread_limiter(self) -> CapacityLimiter | None:
        """The limiter of this server's worker threads (None: anyio's default limiter)."""
        size = self.limits.worker_threads
        if size is None:
            return None
        limiter = self._limiter.get(None)  # one per event loop (a server may serve in several runs)
        if limiter is None:
            limiter = anyio.CapacityLimiter(size)
            self._limiter.set(limiter)
        return limiter

    def custom_route(self, path: str, methods: Collection[str] = ("GET",)) -> Callable[[F], F]:
        """Serve `path` of the HTTP app with your own handler (a health check, say):
        `async def handler(request: HttpRequest) -> HttpReply | str | bytes | dict | list`
        (`http.routes`: text, bytes, JSON or a full reply). Routes are public: the `auth=`
        protection and the Host/Origin checks cover the MCP endpoint only.

        Args:
            path: the route's path (under the app's root path).
            methods: the HTTP methods it answers (`GET` answers `HEAD` too; others get 405).

        Returns:
            A decorator that registers the handler and returns it.
        """
        from .http.routes import check_route

        def register(f: F) -> F:
            self.routes[check_route(path, self.routes)] = (frozenset(m.upper() for m in methods), f)
            return f

        return register

    def scopes_for(self, message: Mapping[str, Any]) -> frozenset[str]:
        """The OAuth scopes a JSON-RPC message needs (the `scopes=` of the tool, prompt or resource
        it names): the hook the HTTP auth middleware asks (`scopes_for_request`).

        Args:
            message: a JSON-RPC request or notification, as decoded JSON.
        """
        return scopes_needed(self, message)

    # -- change notifications ---------------------------------------------------------------

    def _changed(self, kind: str) -> None:
        self._extensions_changed()
        self.deliver(Change(kind))

    def notify_resource_updated(self, uri: str) -> None:
        """Tell subscribed clients that `uri` changed (handshake-era subscribers and modern listen streams)."""
        self.deliver(Change("resource", uri))

    def deliver(self, change: Change) -> None:
        """Send a change to the clients of every era that asked for it, here and, through the
        change bus (`self.bus`), in the other processes of the deployment. From a plain `def`
        handler (a worker thread) it is done on the event loop.

        Args:
            change: what changed (a list kind, or a resource's URI).
        """
        if in_handler_thread():
            anyio.from_thread.run_sync(self._deliver, change)
        else:
            self._deliver(change)

    def _deliver(self, change: Change) -> None:
        self.deliver_here(change)
        self.bus.publish(change)

    def deliver_here(self, change: Change) -> None:
        """Send a `change` to this process's clients only (what a bus does with other processes' changes)."""
        for era in self.serving.values():
            era.deliver_change(self, change)

    def stop_listening(self) -> None:
        """End every open `subscriptions/listen` stream gracefully (each gets its result); later
        listens are served as usual."""
        for stream in list(self.listening):
            stream.stop()

    # -- serving ---------------------------------------------------------------------------

    async def serve(self, transport: Transport, **session_options: Unpack[SessionOptions]) -> None:
        """Serve one connection until it closes (holding the lifespan: the first connection of the
        process starts it, the last one stops it).

        Args:
            transport: the connection (from `stdio_server`, `memory_pair`, or your own `Transport`).
            **session_options: the session's settings (`SessionOptions`).
        """
        session = ServerSession(self, transport, **session_options)
        self.sessions.add(session)
        try:
            if self.lifespan.configured:
                async with self.lifespan.hold():
                    await session.run()
            else:
                await session.run()
        finally:
            self.sessions.discard(session)

    async def serve_stdio(self) -> None:
        """Serve on this process's stdin/stdout until stdin closes (the async form of `run_stdio`)."""
        async with stdio_server() as transport:
            await self.serve(transport)

    def run_stdio(self) -> None:
        """Serve on stdin/stdout until stdin closes (log to stderr)."""
        not_while_loading("run_stdio()")
        anyio.run(self.serve_stdio)

    def http_app(self, path: str = "/mcp", **options: Unpack[HttpOptions]) -> HttpApp:
        """This server's Streamable HTTP endpoint (both eras) as an ASGI 3 application.
        Without an `auth` option, `self.http_auth` protects it: set that where the server is made,
        and `mcpgen serve` and the worker app factory serve it protected too.

        Args:
            path: where the endpoint is.
            **options: the endpoint's settings (`HttpOptions`: security, event store, keep-alive,
                session limits, `auth`).

        Returns:
            The ASGI application (serve it with uvicorn or hypercorn, or mount it).
        """
        from .http.app import HttpApp

        if "auth" not in options and self.http_auth is not None:  # `auth=None` serves it unprotected
            options["auth"] = self.http_auth
        return HttpApp(self, path=path, **options)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        log_level: str = "info",
        access_log: bool = False,
        **options: Unpack[HttpOptions],
    ) -> None:
        """Serve Streamable HTTP at http://host:port/path with uvicorn until interrupted
        (needs the `http` extra: `pip install 'mcpgen[http]'`).

        Args:
            host: the address to listen on.
            port: the port to listen on.
            path: the endpoint's path.
            log_level: uvicorn's log level.
            access_log: log a line per request (uvicorn's access log; off by default: writing a
                line per request cut the rate of short calls by a third or more in the benchmarks).
            **options: the endpoint's settings, as for `http_app`.

        Raises:
            ImportError: uvicorn is not installed (the message names the extra).
        """
        from .http.run import require_uvicorn, run_http

        not_while_loading("run_http()")
        require_uvicorn()  # before anything else: without the extra, one line that names it
        run_http(self.http_app(path, **options), host=host, port=port, log_level=log_level, access_log=access_log)


__all__ = [
    "Audio",
    "Caching",
    "Context",
    "CursorSealer",
    "Depends",
    "Diagnostics",
    "Elicited",
    "Feature",
    "File",
    "Image",
    "Middleware",
    "NotFound",
    "RequestContext",
    "Sealing",
    "Server",
    "ServerAdvertising",
    "ServerLimits",
    "ServerSession",
    "TaskOptions",
    "Telemetry",
    "ToolError",
    "Visibility",
    "visible_by_scopes",
]
