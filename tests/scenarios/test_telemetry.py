"""OpenTelemetry as the MCP semantic conventions describe it, read back with the SDK's in-memory exporters."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcpgen.runtime import Client, ClientHooks, Diagnostics, InvalidParams, Server, Telemetry, ToolError
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from support.live import live

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    telemetry: Telemetry
    tracer_provider: TracerProvider

    def finished(self, kind: SpanKind, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.kind == kind and s.name == name]

    def durations(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for entry in scope.metrics:
                    if entry.name == metric:
                        found.extend(entry.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metrics])
    yield Otel(
        spans, metrics, Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider), tracer_provider
    )
    tracer_provider.shutdown()
    meter_provider.shutdown()


def make_server(otel: Otel) -> Server:
    server = Server("otel", diagnostics=Diagnostics(telemetry=otel.telemetry))
    tracer = otel.tracer_provider.get_tracer("handler")

    @server.tool()
    async def add(a: int, b: int) -> int:
        with tracer.start_as_current_span("inside add"):  # the handler's own spans nest under the server's
            return a + b

    @server.tool()
    def refuse() -> str:
        raise ToolError("no")

    @server.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    @server.resource("mem://{key}")
    def item(key: str) -> str:
        return key

    return server


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_call_is_a_client_span_and_its_server_child(mode: str, otel: Otel) -> None:
    async with Client(make_server(otel), mode=mode, hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        version = client.protocol_version
    (sent,) = otel.finished(SpanKind.CLIENT, "tools/call add")
    (handled,) = otel.finished(SpanKind.SERVER, "tools/call add")
    (inner,) = otel.finished(SpanKind.INTERNAL, "inside add")
    assert handled.context.trace_id == sent.context.trace_id, "one trace across the two sides"
    assert handled.parent is not None and handled.parent.span_id == sent.context.span_id
    assert inner.parent is not None and inner.parent.span_id == handled.context.span_id
    for span in (sent, handled):
        attributes = dict(span.attributes or {})
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == "add" and attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["mcp.protocol.version"] == version
        assert "error.type" not in attributes and span.status.status_code == StatusCode.UNSET
    assert sent.attributes and handled.attributes
    assert sent.attributes["jsonrpc.request.id"] == handled.attributes["jsonrpc.request.id"]
    negotiation = "initialize" if mode == "handshake" else "server/discover"
    assert otel.finished(SpanKind.CLIENT, negotiation) and otel.finished(SpanKind.SERVER, negotiation)


@pytest.mark.parametrize("mode", MODES)
async def test_failures_set_error_type_and_status(mode: str, otel: Otel) -> None:
    async with Client(make_server(otel), mode=mode, hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        refused = await client.call_tool("refuse")
        assert refused.is_error
        with pytest.raises(InvalidParams):
            await client.get_prompt("nope")
    for kind in (SpanKind.CLIENT, SpanKind.SERVER):
        (tool,) = otel.finished(kind, "tools/call refuse")
        assert tool.attributes and tool.attributes["error.type"] == "tool_error"
        assert tool.status.status_code == StatusCode.ERROR
        (prompt,) = otel.finished(kind, "prompts/get nope")
        assert prompt.attributes and prompt.attributes["gen_ai.prompt.name"] == "nope"
        assert prompt.attributes["error.type"] == "-32602" and prompt.attributes["rpc.response.status_code"] == "-32602"
        assert prompt.status.status_code == StatusCode.ERROR and "nope" in (prompt.status.description or "")


@pytest.mark.parametrize("mode", MODES)
async def test_resources_and_prompts_are_named_by_the_conventions(mode: str, otel: Otel) -> None:
    async with Client(make_server(otel), mode=mode, hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        await client.read_resource("mem://k")
        await client.get_prompt("greet", {"name": "x"})
    (read,) = otel.finished(SpanKind.SERVER, "resources/read")  # the URI is no part of the name (cardinality)
    assert read.attributes and read.attributes["mcp.resource.uri"] == "mem://k"
    (prompt,) = otel.finished(SpanKind.SERVER, "prompts/get greet")
    assert prompt.attributes and prompt.attributes["gen_ai.prompt.name"] == "greet"


async def test_durations_are_recorded_on_both_sides(otel: Otel) -> None:
    async with Client(make_server(otel), mode="auto", hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        for _ in range(3):
            await client.call_tool("add", {"a": 1, "b": 2})
    for metric in ("mcp.server.operation.duration", "mcp.client.operation.duration"):
        points = [p for p in otel.durations(metric) if p.attributes.get("gen_ai.tool.name") == "add"]
        assert len(points) == 1 and points[0].count == 3, metric
        assert points[0].attributes["mcp.method.name"] == "tools/call"
        assert list(points[0].explicit_bounds) == [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]


@pytest.mark.parametrize("mode", MODES)
async def test_trace_context_travels_over_http(mode: str, otel: Otel) -> None:
    server = make_server(otel)
    async with live(server) as (url, _), Client(url, mode=mode, hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    (sent,) = otel.finished(SpanKind.CLIENT, "tools/call add")
    (handled,) = otel.finished(SpanKind.SERVER, "tools/call add")
    assert handled.parent is not None and handled.parent.span_id == sent.context.span_id
    assert handled.attributes and handled.attributes["network.transport"] == "tcp"
    assert handled.attributes["network.protocol.name"] == "http"
    if mode == "handshake":
        assert handled.attributes["mcp.session.id"], "a handshake-era HTTP session has an id"


async def test_a_client_span_of_the_application_is_the_parent(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    async with Client(make_server(otel), mode="auto", hooks=ClientHooks(telemetry=otel.telemetry)) as client:
        with tracer.start_as_current_span("agent step") as step:
            await client.call_tool("add", {"a": 1, "b": 2})
    (sent,) = otel.finished(SpanKind.CLIENT, "tools/call add")
    assert sent.parent is not None and sent.parent.span_id == step.get_span_context().span_id


async def test_turned_off_nothing_is_recorded(otel: Otel) -> None:
    server = Server("quiet", diagnostics=Diagnostics(telemetry=Telemetry(enabled=False)))
    server.add_tool(lambda: "x", name="x")
    async with Client(server, mode="auto", hooks=ClientHooks(telemetry=Telemetry(enabled=False))) as client:
        await client.call_tool("x")
    assert server.telemetry is None and client.telemetry is None
    assert otel.spans.get_finished_spans() == ()


def test_without_the_package_nothing_is_imported() -> None:
    """opentelemetry made unimportable: a round trip works and imports none of it."""
    script = textwrap.dedent(
        """
        import sys
        import anyio

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Block())
        from mcpgen.runtime import Client, Server

        async def main():
            server = Server("plain")
            server.add_tool(lambda: "ok", name="ok")
            async with Client(server) as client:
                print((await client.call_tool("ok")).content[0].text, server.telemetry, client.telemetry)

        anyio.run(main)
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["ok None None", "[]"]


def test_a_global_provider_set_later_is_found_within_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without providers the global ones are looked at once a second (a clock read otherwise),
    so an SDK configured after the server was made is picked up."""
    from types import SimpleNamespace

    from mcpgen.runtime.core import telemetry
    from opentelemetry import trace

    now = [100.0]
    monkeypatch.setattr(telemetry, "time", SimpleNamespace(monotonic=lambda: now[0], perf_counter=lambda: now[0]))
    looked: list[bool] = []
    provider = TracerProvider()

    def global_provider() -> Any:
        looked.append(True)
        return provider if now[0] >= 100.5 else trace.ProxyTracerProvider()

    monkeypatch.setattr(trace, "get_tracer_provider", global_provider)
    instrumentation = telemetry.Instrumentation(Telemetry(), "server")
    assert not instrumentation.ready() and len(looked) == 1
    now[0] = 100.5  # an SDK is configured now
    assert not instrumentation.ready() and len(looked) == 1, "within the second: the clock only"
    now[0] = 101.0
    assert instrumentation.ready() and len(looked) == 2
    now[0] = 500.0
    assert instrumentation.ready() and len(looked) == 2, "found once, kept"
    provider.shutdown()


@dataclass
class LateSdk:
    """An OpenTelemetry SDK not configured yet: the global providers are the API's proxies until
    `configure()`, and telemetry's clock stands still until `advance()` moves it."""

    spans: InMemorySpanExporter
    now: float = 100.0
    configured: bool = False

    def configure(self) -> None:
        self.configured = True

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def late_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[LateSdk]:
    from types import SimpleNamespace

    from mcpgen.runtime.core import telemetry
    from opentelemetry import metrics, trace
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    sdk = LateSdk(InMemorySpanExporter())
    monkeypatch.setattr(telemetry, "time", SimpleNamespace(monotonic=lambda: sdk.now, perf_counter=lambda: sdk.now))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sdk.spans))
    unset = trace.ProxyTracerProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider if sdk.configured else unset)
    monkeypatch.setattr(metrics, "get_meter_provider", _ProxyMeterProvider)
    yield sdk
    provider.shutdown()


@pytest.mark.parametrize("mode", MODES)
async def test_a_connection_decides_when_it_opens(mode: str, late_sdk: LateSdk) -> None:
    """A session on a transport looks for an SDK once, when it starts: one configured later is
    used by the next connection (a second or more later), and costs the open one nothing."""
    server = Server("late")
    server.add_tool(lambda: "x", name="x")
    quiet = ClientHooks(telemetry=Telemetry(enabled=False))
    async with Client(server, mode=mode, hooks=quiet) as opened_before:
        late_sdk.configure()  # an SDK is set up while the connection is open
        late_sdk.advance(5)  # long after the last look
        await opened_before.call_tool("x")
        assert late_sdk.spans.get_finished_spans() == (), "the open connection decided when it started"
    async with Client(server, mode=mode, hooks=quiet) as opened_after:
        await opened_after.call_tool("x")
    assert "tools/call x" in [s.name for s in late_sdk.spans.get_finished_spans() if s.kind == SpanKind.SERVER]


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_connection_decides_when_it_opens(mode: str, late_sdk: LateSdk) -> None:
    """The client's side of the same rule: its session looks for an SDK once, when it starts, so
    one configured later traces the next connection's calls, not the open one's."""
    server = Server("late", diagnostics=Diagnostics(telemetry=Telemetry(enabled=False)))
    server.add_tool(lambda: "x", name="x")
    async with Client(server, mode=mode) as opened_before:
        late_sdk.configure()  # an SDK is set up while the connection is open
        late_sdk.advance(5)  # long after the last look
        await opened_before.call_tool("x")
        assert late_sdk.spans.get_finished_spans() == (), "the open connection decided when it started"
    late_sdk.advance(5)
    async with Client(server, mode=mode) as opened_after:
        await opened_after.call_tool("x")
    assert "tools/call x" in [s.name for s in late_sdk.spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
