"""`RequestContext`: what a handler knows about the request it serves, and what it may send back.

Handlers get it by annotating a parameter with `RequestContext` (or `Context`). It carries the
request's protocol version and era, the client's capabilities and info (from `initialize` on a
handshake-era session, from `_meta` on a modern request), the transport context (kind, headers,
the authenticated principal as `ctx.auth`), progress and logging, and multi-round-trip input:
`ctx.input_required(...)` to ask, `ctx.elicitation(key, Model)` / `ctx.input_response(key)` to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, NoReturn, TypeVar, cast

from pydantic import BaseModel, ValidationError

from ..core.transport import TransportContext
from ..protocol.capabilities import has_capability
from ..protocol.errors import InvalidParams, validation_detail
from ..protocol.input_requests import InputRequest, InputRequired
from ..protocol.keys import LOG_LEVELS
from .features import Context
from .hooks.lifespan import State

if TYPE_CHECKING:
    from mcpgen.generated.types import CreateMessageResult, ListRootsResult

    from ..core.session import IncomingRequest
    from ..protocol.eras import EraRules
    from . import Server
    from .eras import ClientView, EraServing
    from .session import ServerSession

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Elicited(Generic[M]):
    """A user's answer to a form elicitation: `action` is `accept`, `decline` or `cancel`;
    `content` is the model the tool asked with, when accepted."""

    action: Literal["accept", "decline", "cancel"]
    content: M | None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (and `content` holds the answer)."""
        return self.action == "accept"


class RequestContext(Context, Generic[State]):
    """The context of one request being served: what a handler declares a `RequestContext`
    parameter for. The runtime makes one per request (from the serving `session`, the incoming
    `request`, its protocol `version`, the era `serving` it and the client's `view`: capabilities,
    info and log level, read from the request when first asked for if not given); handlers do not
    make their own. `RequestContext[AppState]` types
    `ctx.lifespan` as what the server's lifespan yields.

    Attributes:
        protocol_version: the request's protocol version.
        era: the rules of the request's era.
        client_capabilities: what the client declared (at `initialize`, or in the request's `_meta`).
        client_info: the client's name and version, when it sent them.
        log_level: the level from which the client wants log messages (None: none asked for).
        input_responses: the client's answers to input requests, by key (multi-round-trip requests).
        state: the state the handler handed out with its last input request, back from the client.
    """

    def __init__(
        self,
        session: ServerSession,
        request: IncomingRequest,
        version: str,
        serving: EraServing,
        view: ClientView | None = None,
    ) -> None:
        self.session = session
        self.request = request
        self.protocol_version = version
        self.serving = serving
        self.era: EraRules = serving.rules
        self._view = view  # None: read from the request when first asked for (most handlers never ask)
        self.input_responses: dict[str, Any] = {}
        self.state: Any = None
        self._last_progress: float | None = None

    # -- who the client is ---------------------------------------------------------------------

    @property
    def client_view(self) -> ClientView:
        """What the server knows of the client for this request (read as the request's era
        conveys it, the first time it is asked for)."""
        view = self._view
        if view is None:
            view = self._view = self.serving.client_view(self.request, self.session)
        return view

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared (at `initialize`, or in the request's `_meta`)."""
        return self.client_view.capabilities

    @client_capabilities.setter
    def client_capabilities(self, value: dict[str, Any]) -> None:
        self.client_view.capabilities = value

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's name and version, when it sent them."""
        return self.client_view.info

    @client_info.setter
    def client_info(self, value: dict[str, Any] | None) -> None:
        self.client_view.info = value

    @property
    def log_level(self) -> str | None:
        """The level from which the client wants log messages (None: none asked for)."""
        return self.client_view.log_level

    @log_level.setter
    def log_level(self, value: str | None) -> None:
        self.client_view.log_level = value

    # -- what the request is -------------------------------------------------------------------

    @property
    def modern(self) -> bool:
        """Is this a self-contained request of the modern era (its version and the client's
        capabilities in its `_meta`, no session)?"""
        return self.era.self_contained

    @property
    def server(self) -> Server[State]:
        """The server serving the request."""
        return self.session.server

    @property
    def lifespan(self) -> State:
        """What the server's lifespan yielded (None without a lifespan)."""
        state: State = self.session.server.lifespan.state
        return state

    @property
    def request_id(self) -> str | int:
        """The request's JSON-RPC id."""
        return self.request.id

    @property
    def transport(self) -> TransportContext:
        """How the request arrived: transport kind, headers (HTTP), principal, reply route."""
        return self.request.context

    @property
    def auth(self) -> Any:
        """The authenticated principal of the request (None when the transport does not authenticate)."""
        return self.request.context.auth

    # -- tasks ---------------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (None: an ordinary call; see `run_as_task`)."""
        return None

    async def run_as_task(self) -> None:
        """Hand a task-capable tool's call over to a task from here on: the client gets its task
        handle now and the handler goes on. For tools registered with `defer_task=True`, whose
        multi-round-trip input is asked before the task exists; a no-op when the call cannot be a
        task (the client did not opt in, the tool does not support tasks) or is one already."""

    # -- multi-round-trip input ------------------------------------------------------------------

    def input_required(self, state: Any = None, **requests: InputRequest) -> NoReturn:
        """Ask the client for input and stop this invocation: `return ctx.input_required(confirm=elicit(...))`.

        The handler is called again with the answers (and `state`). Typed as `NoReturn`, so it
        fits any return annotation.
        """
        raise InputRequired(requests, state)

    def input_response(self, key: str) -> Any:
        """The client's answer to the input request `key` of the previous round (a result model), or None."""
        return self.input_responses.get(key)

    def elicitation(self, key: str, model: type[M]) -> Elicited[M] | None:
        """The answer to the form elicitation `key`, its content validated into `model` (None if not asked yet)."""
        answer = self.input_responses.get(key)
        if answer is None:
            return None
        action = getattr(answer, "action", None)
        if action not in ("accept", "decline", "cancel"):
            raise InvalidParams(f"input response {key!r} is not an elicitation answer")
        if action != "accept":
            return Elicited(action, None)
        try:
            content = model.model_validate(getattr(answer, "content", None) or {})
        except ValidationError as exc:
            raise InvalidParams(
                f"input response {key!r} does not fit {model.__name__}: {validation_detail(exc)}"
            ) from None
        return Elicited("accept", content)

    def sampling(self, key: str) -> CreateMessageResult | None:
        """The client's model reply to the sampling request `key` (None if not asked yet)."""
        return cast("CreateMessageResult | None", self.input_responses.get(key))

    def roots(self, key: str) -> ListRootsResult | None:
        """The client's roots, answering the roots request `key` (None if not asked yet)."""
        return cast("ListRootsResult | None", self.input_responses.get(key))

    # -- progress and logging --------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send `notifications/progress` if the request asked for progress (nothing otherwise).

        Args:
            progress: the progress so far; it must increase from one call to the next.
            total: the total `progress` will reach, if known.
            message: a human-readable status.

        Raises:
            ValueError: `progress` did not increase.
        """
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
        await self.session.send_notification("notifications/progress", params, route=self.request.context.reply)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send `notifications/message` if the client asked for this level (handshake era:
        `logging/setLevel`; modern: the request's `logLevel`, without which nothing is sent).

        Args:
            level: the syslog level (`debug`, `info`, `notice`, `warning`, `error`, `critical`,
                `alert`, `emergency`).
            data: what to log: a string or any JSON-representable value.
            logger: the name of the logger it comes from.

        Raises:
            ValueError: `level` is not one of the levels.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {LOG_LEVELS}")
        if not has_capability(self.server._offered(), "logging"):
            return
        threshold = self.log_level
        if threshold is None and not self.era.logs_without_level:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.session.send_notification("notifications/message", params, route=self.request.context.reply)

    async def debug(self, data: Any) -> None:
        """Log `data` at level `debug` (see `log`: sent only if the client asked for it)."""
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        """Log `data` at level `info` (see `log`: sent only if the client asked for it)."""
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        """Log `data` at level `warning` (see `log`: sent only if the client asked for it)."""
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        """Log `data` at level `error` (see `log`: sent only if the client asked for it)."""
        await self.log("error", data)
