"""`acp_server.tracing` and `otlp_json`: when export is wanted, the cold path without
OpenTelemetry, and the OTLP JSON encoding of a parent taken from a W3C traceparent."""

from __future__ import annotations

import subprocess
import sys

from opentelemetry import context, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from acp_server.otlp_json import OtlpJsonSpanExporter, _headers, encode
from acp_server.tracing import turn_span, wanted


def test_export_is_wanted_only_when_an_otel_variable_asks() -> None:
    assert not wanted({})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"})
    assert not wanted({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"})


def test_the_cold_path_imports_no_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from acp_server.tracing import turn_span\n"
        "import acp_server.handlers.prompt\n"
        "with turn_span({}, {'traceparent': '00-' + '1' * 32 + '-' + '2' * 16 + '-01'}, 's'):\n"
        "    pass\n"
        "mine = [m for m in sys.modules if m.startswith('opentelemetry.sdk')]\n"
        "assert not mine, mine\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_without_export_a_turn_runs_untraced() -> None:
    with turn_span({}, None, "s"):
        assert not trace.get_current_span().get_span_context().is_valid


def test_spans_encode_as_otlp_json_with_the_clients_parent() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    carrier = {"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01", "tracestate": "k=v"}
    token = context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        tracer = provider.get_tracer("adk-acp")
        with tracer.start_as_current_span("session/prompt", attributes={"n": 3, "ok": True}):
            pass
    finally:
        context.detach(token)
    body = encode(memory.get_finished_spans())
    (resource,) = body["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    (span,) = scope["spans"]
    assert scope["scope"]["name"] == "adk-acp"
    assert span["traceId"] == "ab" * 16 and span["parentSpanId"] == "cd" * 8
    assert span["traceState"] == "k=v" and span["kind"] == 1
    assert {"key": "n", "value": {"intValue": "3"}} in span["attributes"]
    assert {"key": "ok", "value": {"boolValue": True}} in span["attributes"]


def test_endpoint_and_headers_from_the_standard_variables() -> None:
    exporter = OtlpJsonSpanExporter.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        }
    )
    assert exporter.endpoint == "http://collector:4318/v1/traces"
    assert exporter.headers["api-key"] == "a b" and exporter.headers["x"] == "1"
    assert exporter.timeout_s == 2.5
    direct = OtlpJsonSpanExporter.from_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h/t"})
    assert direct.endpoint == "http://h/t"
    assert _headers("broken,=x") == {}
