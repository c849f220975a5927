"""The client's typed convenience calls: tools, prompts, resources, completion, pagination.

Each is one table method (`Client.request` checks and sends it); listing iterators follow
`nextCursor` page after page, at most `max_pages` pages (`PaginationError` past that, or when
the server repeats a cursor). Structured tool output is checked against the tool's
`outputSchema` (`StructuredOutputError`), the schemas learned from `tools/list`; a schema that
cannot be used (a `$ref` to nothing) is a `StructuredOutputError` too, never the validator's own.
"""

from __future__ import annotations

import abc
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

from ..core.correlation import ProgressCallback
from ..core.session import DEFAULT, Timeout
from ..protocol import wire
from ..protocol.capabilities import has_capability
from ..protocol.errors import HeaderMismatch, McpError, PaginationError, StructuredOutputError
from ..protocol.schema_check import InvalidSchema, SchemaCheck

if TYPE_CHECKING:
    from mcpgen.generated.types import (
        CallToolResult,
        CompleteResult,
        GetPromptResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Tool,
    )

    from .options import ClientChecks
    from .tasks import ClientTasks, ToolTask

log = logging.getLogger("mcpgen.runtime.client")


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


class ToolLister(Protocol):
    """What checking tool output needs of the client: what the server offers, and its tools."""

    server_capabilities: dict[str, Any] | None

    def tools(self) -> AsyncIterator[Tool]: ...


SHARED_CHECKS = 256  # compiled output schemas kept for the clients of a process (the least recently used go)
_checks: dict[str, SchemaCheck] = {}


def shared_check(schema: dict[str, Any]) -> SchemaCheck:
    """The compiled check of `schema`, shared by the clients of this process: one per schema (by
    its canonical JSON), the `SHARED_CHECKS` last used kept (a compiled check holds no state of a
    call or a client)."""
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # not JSON text as it is (it came off the wire: not expected)
        return SchemaCheck(schema)
    check = _checks.pop(key, None)
    if check is None:
        check = SchemaCheck(schema)
        while len(_checks) >= SHARED_CHECKS:
            del _checks[next(iter(_checks))]
    _checks[key] = check  # (again) the most recently used
    return check


class OutputChecker:
    """Checks structured tool output against each tool's `outputSchema`, learned from listing tools."""

    def __init__(self, client: ToolLister) -> None:
        self.client = client
        self._validators: dict[str, SchemaCheck] = {}
        self._known = False

    def forget(self) -> None:
        """The tool list changed: learn again on the next call."""
        self._validators.clear()
        self._known = False

    def learn(self, tool: Any) -> None:
        schema = wire.to_wire(getattr(tool, "output_schema", None))
        if isinstance(schema, dict):
            self._validators[tool.name] = shared_check(schema)

    async def check(self, name: str, result: Any) -> None:
        """Raise `StructuredOutputError` if `result`'s structured content does not fit the tool's schema."""
        if wire.field(result, "is_error") or wire.field(result, "result_type", "complete") != "complete":
            return
        if (
            not self._known
            and name not in self._validators
            and has_capability(self.client.server_capabilities, "tools")
        ):
            self._known = True  # learn the schemas once (again after a tools list change)
            try:
                async for tool in self.client.tools():
                    self.learn(tool)
            except McpError as exc:
                log.debug("could not list tools to learn output schemas: %s", exc)
        validator = self._validators.get(name)
        if validator is None:
            return
        structured = wire.field(result, "structured_content")
        if structured is None:
            raise StructuredOutputError(f"tool {name} has an outputSchema but its result carries no structuredContent")
        try:
            problem = validator.problem(structured)
        except InvalidSchema as exc:  # the server's schema is at fault: say so, in our own error type
            raise StructuredOutputError(
                f"tool {name} advertised an outputSchema that cannot be checked ({exc}); "
                "ClientChecks(structured_output=False) turns the check off"
            ) from None
        if problem is not None:
            raise StructuredOutputError(
                f"tool {name} returned structuredContent that does not match its outputSchema: {problem}"
            )


class TypedCalls(abc.ABC):
    """Typed calls over `request` (mixed into `Client`). Results are annotated with the
    version-independent types (`mcpgen.generated.types`): each is the union of that result's
    models in every version, so code written against them works whichever version was negotiated."""

    checks: ClientChecks
    output_checker: OutputChecker | None
    tasks: ClientTasks

    @abc.abstractmethod
    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
    ) -> Any: ...

    async def _pages(self, method: str, attribute: str) -> AsyncIterator[Any]:
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(self.checks.max_pages):
            page = await self.request(method, _cursor(cursor))
            for item in getattr(page, attribute):
                yield item
            cursor = page.next_cursor
            if not cursor:
                return
            if cursor in seen:
                raise PaginationError(f"{method}: the server repeated cursor {cursor!r}; stopping to avoid a loop")
            seen.add(cursor)
        raise PaginationError(f"{method}: the server returned more than {self.checks.max_pages} pages (max_pages)")

    # -- tools ---------------------------------------------------------------------------------

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the server's tools (`tools/list`); `tools()` reads every page.

        Args:
            cursor: the `next_cursor` of the previous page (None: the first page).

        Returns:
            The page: its `tools`, and `next_cursor` when more follow.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        page = cast("ListToolsResult", await self.request("tools/list", _cursor(cursor)))
        if self.output_checker is not None:
            for tool in page.tools:
                self.output_checker.learn(tool)
        return page

    async def tools(self) -> AsyncIterator[Tool]:
        """Every tool, page after page."""
        async for tool in self._pages("tools/list", "tools"):
            if self.output_checker is not None:
                self.output_checker.learn(tool)
            yield tool

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: Literal[True] = True,
        wait: Literal[True] = True,
    ) -> CallToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: Literal[False],
        wait: Literal[True] = True,
    ) -> CallToolResult | InputRequiredResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: Literal[True] = True,
        wait: Literal[False],
    ) -> CallToolResult | ToolTask: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: Literal[False],
        wait: Literal[False],
    ) -> CallToolResult | InputRequiredResult | ToolTask: ...

    async def call_tool(  # noqa: PLR0913 - every keyword is a documented option
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = DEFAULT,
        progress: ProgressCallback | None = None,
        resolve_input: bool = True,
        wait: bool = True,
    ) -> CallToolResult | InputRequiredResult | ToolTask:
        """Call a tool; input the server asks for is answered by this client's handlers (with
        `resolve_input=False`, an `InputRequiredResult` comes back for you to answer, see `retry`).

        A call the server runs as a task (a client made with `tasks=True`) is waited for and its
        outcome returned as if the call had been synchronous (a `timeout` given here bounds the
        whole wait, and a call that times out or is cancelled cancels its task); with
        `wait=False` it comes back as a `ToolTask` to wait on, poll or cancel yourself.

        Over HTTP some arguments travel in headers too, as the tool's listing says; a server that
        finds them missing or stale (`HeaderMismatch`) gets the tool list read again and the call
        once more.

        Args:
            name: the tool's name.
            arguments: the tool's arguments (checked by the server against its input schema).
            timeout: seconds to wait for the result (default: `Timeouts.request`; None: no limit).
            progress: called with each progress notification the server sends for the call.
            resolve_input: answer the server's input requests with this client's handlers.
            wait: wait for a call the server runs as a task (False: return the `ToolTask`).

        Returns:
            The tool's result (`is_error` set when the tool failed), or, as described above, an
            `InputRequiredResult` or a `ToolTask`.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
            StructuredOutputError: the result's structured content does not match the tool's
                output schema (`ClientChecks.structured_output`).
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if self.tasks.enabled:  # the handshake era's design asks for a task in the params
            params = await self.tasks.prepare(name, params)
        try:
            result = await self.request(
                "tools/call", params, timeout=timeout, progress=progress, resolve_input=resolve_input
            )
        except HeaderMismatch:
            async for _ in self.tools():  # what the transport mirrors into headers comes from the listing
                pass
            result = await self.request(
                "tools/call", params, timeout=timeout, progress=progress, resolve_input=resolve_input
            )
        if self.tasks.enabled and self.tasks.is_task(result):
            task = self.tasks.adopt(name, result)
            if not wait:
                return task
            result = await self.tasks.finish_call(task, timeout)
        if self.output_checker is not None:
            await self.output_checker.check(name, result)
        return cast("CallToolResult | InputRequiredResult", result)

    # -- prompts -------------------------------------------------------------------------------

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of the server's prompts (`prompts/list`); `prompts()` reads every page.

        Args:
            cursor: the `next_cursor` of the previous page (None: the first page).

        Returns:
            The page: its `prompts`, and `next_cursor` when more follow.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        return cast("ListPromptsResult", await self.request("prompts/list", _cursor(cursor)))

    async def prompts(self) -> AsyncIterator[Prompt]:
        """Every prompt, page after page (`PaginationError` if the server's cursors loop or never end)."""
        async for prompt in self._pages("prompts/list", "prompts"):
            yield prompt

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: Timeout = DEFAULT
    ) -> GetPromptResult:
        """Get a prompt, filled in with `arguments` (`prompts/get`).

        Args:
            name: the prompt's name.
            arguments: a string value per argument of the prompt.
            timeout: seconds to wait for the result (default: `Timeouts.request`; None: no limit).

        Returns:
            The prompt's `messages` (and its `description`).

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return cast("GetPromptResult", await self.request("prompts/get", params, timeout=timeout))

    # -- resources -----------------------------------------------------------------------------

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """One page of the server's resources (`resources/list`); `resources()` reads every page.

        Args:
            cursor: the `next_cursor` of the previous page (None: the first page).

        Returns:
            The page: its `resources`, and `next_cursor` when more follow.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        return cast("ListResourcesResult", await self.request("resources/list", _cursor(cursor)))

    async def resources(self) -> AsyncIterator[Resource]:
        """Every resource, page after page (`PaginationError` if the server's cursors loop or never end)."""
        async for resource in self._pages("resources/list", "resources"):
            yield resource

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        """One page of the server's resource templates (`resources/templates/list`);
        `resource_templates()` reads every page.

        Args:
            cursor: the `next_cursor` of the previous page (None: the first page).

        Returns:
            The page: its `resource_templates`, and `next_cursor` when more follow.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        return cast("ListResourceTemplatesResult", await self.request("resources/templates/list", _cursor(cursor)))

    async def resource_templates(self) -> AsyncIterator[ResourceTemplate]:
        """Every resource template, page after page (`PaginationError` if the server's cursors loop or never end)."""
        async for template in self._pages("resources/templates/list", "resource_templates"):
            yield template

    async def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> ReadResourceResult:
        """Read a resource, static or matching a template (`resources/read`).

        Args:
            uri: the resource's URI.
            timeout: seconds to wait for the result (default: `Timeouts.request`; None: no limit).

        Returns:
            The resource's `contents`: text or base64 `blob` entries, each with its `uri`.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        return cast("ReadResourceResult", await self.request("resources/read", {"uri": uri}, timeout=timeout))

    # -- completion ----------------------------------------------------------------------------

    async def complete(
        self, ref: Mapping[str, Any], argument: Mapping[str, str], context: Mapping[str, Any] | None = None
    ) -> CompleteResult:
        """Ask for completions of an argument's value (`completion/complete`).

        Args:
            ref: what the argument belongs to: `{"type": "ref/prompt", "name": ...}` or
                `{"type": "ref/resource", "uri": <template>}`.
            argument: the argument's `name` and the `value` typed so far.
            context: the values of the other arguments already given (`{"arguments": {...}}`).

        Returns:
            The `completion`: its `values`, and optionally `total` and `has_more`.

        Raises:
            McpError: the server answered with an error (its subclass names the code).
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the connection ended before the answer.
        """
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return cast("CompleteResult", await self.request("completion/complete", params))
