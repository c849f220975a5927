"""OpenTelemetry for MCP, as its semantic conventions describe it (spans, metrics, `_meta` propagation).

With `opentelemetry-api` installed (`pip install 'mcpgen[otel]'`) and an OpenTelemetry SDK
configured (a tracer or meter provider set globally, or given as `Telemetry(tracer_provider=...,
meter_provider=...)`), every request a session handles or sends is

- a span named `{mcp.method.name} {target}` (the tool or prompt name, when there is one), of kind
  SERVER for a request handled and CLIENT for one sent, with the attributes the conventions
  list: `mcp.method.name`, `mcp.protocol.version`, `mcp.session.id` (an HTTP session's),
  `jsonrpc.request.id`, `gen_ai.tool.name` and `gen_ai.operation.name=execute_tool` for a tool
  call, `gen_ai.prompt.name`, `mcp.resource.uri`, `network.transport` (`pipe` for stdio, `tcp`
  for HTTP) and `network.protocol.name`; and when it fails, `error.type` (the JSON-RPC error
  code, `tool_error` for a tool's error result, or what went wrong on our side) with
  `rpc.response.status_code` and an ERROR status;
- a measure of `mcp.server.operation.duration` or `mcp.client.operation.duration` (seconds, the
  conventions' bucket boundaries);
- and the trace context travels in the request's `params._meta` (`traceparent`, `tracestate`,
  `baggage`, by the configured propagators): a client's span is the parent of the server's (the
  ambient context at the server, an HTTP server span say, becomes a link).

Without the package nothing of it is imported and nothing runs; with the package but no SDK
configured, a clock read per request is all it costs (the global providers are looked at once a
second until one is set).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import McpError

DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")
_NAMED_TARGET = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_URI_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
_TRANSPORTS = {"stdio": ("pipe", None), "http": ("tcp", "http")}
_SCOPE = "mcpgen"
RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Telemetry:
    """OpenTelemetry settings (see the module docstring): `enabled=False` turns it off;
    `tracer_provider` and `meter_provider` replace the global providers (tests, several SDKs)."""

    enabled: bool = True
    tracer_provider: Any = None
    meter_provider: Any = None


def available() -> bool:
    """Is `opentelemetry-api` installed (without importing it)?"""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):
        return False


def instrument(options: Telemetry | None, side: str) -> Instrumentation | None:
    """The instrumentation of one client or server: None when turned off or not installed."""
    if options is not None and not options.enabled:
        return None
    if not available():
        return None
    return Instrumentation(options or Telemetry(), side)


class Outcome:
    """What the span of one request learns about how it ended."""

    __slots__ = ("error_code", "error_type", "message")

    def __init__(self) -> None:
        self.error_type: str | None = None
        self.error_code: int | None = None
        self.message: str | None = None

    def result(self, method: str, result: Any) -> None:
        """A tool's error result is a failure of the operation (`tool_error`)."""
        if method == "tools/call" and isinstance(result, Mapping) and result.get("isError") is True:
            self.error_type = "tool_error"

    def failed(self, exc: BaseException, cancelled: type[BaseException]) -> None:
        if isinstance(exc, McpError):
            self.error_code = exc.code
            self.error_type = str(exc.code)
            self.message = exc.message
        elif isinstance(exc, cancelled):
            self.error_type = "cancelled"
        elif isinstance(exc, TimeoutError):
            self.error_type = "timeout"
        else:
            self.error_type = type(exc).__qualname__
            self.message = str(exc)


class Instrumentation:
    """Spans, metrics and propagation for one side (`client` or `server`), lazily set up."""

    def __init__(self, options: Telemetry, side: str) -> None:
        self.options = options
        self.side = side
        self._tracer: Any = None
        self._histogram: Any = None
        self._ready = False
        self._next_look = 0.0

    def ready(self) -> bool:
        """Is an SDK configured (providers given, or set globally), so there is something to do?
        Until one is, the global providers are looked at once a second at most (a provider set
        later is picked up within a second), so an unconfigured process pays a clock read."""
        if self._ready:
            return True
        now = time.monotonic()
        if now < self._next_look:
            return False
        self._next_look = now + RECHECK_SECONDS
        from opentelemetry import metrics, trace

        tracer_provider = self.options.tracer_provider
        meter_provider = self.options.meter_provider
        if tracer_provider is None:
            found = trace.get_tracer_provider()
            tracer_provider = None if isinstance(found, trace.ProxyTracerProvider) else found
        if meter_provider is None:
            found_meter = metrics.get_meter_provider()
            meter_provider = None if type(found_meter).__name__.startswith("_Proxy") else found_meter
        if tracer_provider is None and meter_provider is None:
            return False
        self._setup(tracer_provider, meter_provider)
        self._ready = True
        return True

    def load(self) -> None:
        """Import what `ready` imports (the package, some 50 ms on a quiet machine), so a first
        request does not wait on it; nothing else is looked at or set up."""
        from opentelemetry import metrics, trace  # noqa: F401

    def _setup(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry import metrics, trace

        version = _version()
        self._tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(_SCOPE, version)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(_SCOPE, version)
        name = f"mcp.{self.side}.operation.duration"
        description = (
            "MCP request duration as observed on the receiver from the time it was received until the result is sent"
            if self.side == "server"
            else "The duration of the MCP request as observed on the sender until the response is received"
        )
        try:
            self._histogram = meter.create_histogram(
                name, unit="s", description=description, explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS)
            )
        except TypeError:  # an API older than the bucket advice
            self._histogram = meter.create_histogram(name, unit="s", description=description)

    # -- spans -------------------------------------------------------------------------------

    @contextmanager
    def handling(  # noqa: PLR0913 - what the conventions record of a request
        self,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: str | int | None,
        version: str | None,
        transport: str,
        headers: Mapping[str, str] | None = None,
    ) -> Iterator[Outcome]:
        """The SERVER span of a request handled (parent: the trace context of its `_meta`)."""
        from opentelemetry import propagate, trace
        from opentelemetry.trace import Link, SpanKind

        meta = (params or {}).get("_meta")
        parent = None
        links: list[Any] = []
        if isinstance(meta, Mapping) and any(key in meta for key in PROPAGATION_KEYS):
            try:
                extracted = propagate.extract({k: v for k, v in meta.items() if isinstance(v, str)})
            except (ValueError, TypeError):
                extracted = None
            if extracted is not None and trace.get_current_span(extracted).get_span_context().is_valid:
                parent = extracted
                ambient = trace.get_current_span().get_span_context()
                if ambient.is_valid:
                    links.append(Link(ambient))
        attributes = _attributes(method, params, request_id, version, transport)
        session = (headers or {}).get("mcp-session-id")
        if session:
            attributes["mcp.session.id"] = session
        with self._span(method, params, SpanKind.SERVER, attributes, parent, links) as outcome:
            yield outcome

    @contextmanager
    def sending(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: str | int | None,
        version: str | None,
        transport: str,
    ) -> Iterator[tuple[Outcome, dict[str, str]]]:
        """The CLIENT span of a request sent, and the trace context to put in its `_meta`."""
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind

        attributes = _attributes(method, params, request_id, version, transport)
        with self._span(method, params, SpanKind.CLIENT, attributes, None, []) as outcome:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            yield outcome, carrier

    @contextmanager
    def _span(  # noqa: PLR0913
        self,
        method: str,
        params: Mapping[str, Any] | None,
        kind: Any,
        attributes: dict[str, Any],
        parent: Any,
        links: list[Any],
    ) -> Iterator[Outcome]:
        import anyio
        from opentelemetry.trace import Status, StatusCode

        outcome = Outcome()
        started = time.perf_counter()
        with self._tracer.start_as_current_span(
            _span_name(method, params),
            context=parent,
            kind=kind,
            attributes=attributes,
            links=links or None,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield outcome
            except BaseException as exc:
                outcome.failed(exc, anyio.get_cancelled_exc_class())
                if outcome.error_code is None and outcome.error_type not in ("cancelled", "timeout"):
                    span.record_exception(exc)
                raise
            finally:
                if outcome.error_type is not None:
                    span.set_attribute("error.type", outcome.error_type)
                    if outcome.error_code is not None:
                        span.set_attribute("rpc.response.status_code", str(outcome.error_code))
                    span.set_status(Status(StatusCode.ERROR, outcome.message))
                self._measure(time.perf_counter() - started, attributes, outcome)

    def _measure(self, seconds: float, attributes: Mapping[str, Any], outcome: Outcome) -> None:
        if self._histogram is None:
            return
        kept = {k: v for k, v in attributes.items() if k not in ("jsonrpc.request.id", "mcp.resource.uri")}
        if outcome.error_type is not None:
            kept["error.type"] = outcome.error_type
            if outcome.error_code is not None:
                kept["rpc.response.status_code"] = str(outcome.error_code)
        self._histogram.record(seconds, kept)


def _target(method: str, params: Mapping[str, Any] | None) -> str | None:
    if method in _NAMED_TARGET and params is not None:
        name = params.get("name")
        return name if isinstance(name, str) else None
    return None


def _span_name(method: str, params: Mapping[str, Any] | None) -> str:
    target = _target(method, params)
    return f"{method} {target}" if target else method


def _attributes(
    method: str, params: Mapping[str, Any] | None, request_id: str | int | None, version: str | None, transport: str
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if request_id is not None:
        attributes["jsonrpc.request.id"] = str(request_id)
    if version:
        attributes["mcp.protocol.version"] = version
    target = _target(method, params)
    if target is not None:
        attributes[_NAMED_TARGET[method]] = target
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    if method in _URI_METHODS and params is not None and isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = params["uri"]
    network, protocol = _TRANSPORTS.get(transport, (None, None))
    if network is not None:
        attributes["network.transport"] = network
    if protocol is not None:
        attributes["network.protocol.name"] = protocol
    return attributes


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("mcpgen")
    except Exception:
        return None
