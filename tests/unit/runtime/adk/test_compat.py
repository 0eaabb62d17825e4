"""`compat.quiet_inference_results`: a streamed response is recorded on the inference
span by ADK's own function whenever anything would see it (a recording span, or a log
provider), and skipped only when nothing would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.models.llm_response import LlmResponse
from google.adk.telemetry import tracing
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runtime.adk import compat


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """ADK's function replaced by a recorder, then quieted as the engine does."""
    seen: list[Any] = []
    monkeypatch.setattr(tracing, "trace_inference_result", lambda c, s, r: seen.append(s))
    compat.quiet_inference_results()
    yield seen


def _response() -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text="hi")]),
        finish_reason=types.FinishReason.STOP,
    )


def test_nothing_recorded_without_a_tracer_or_a_log_provider(
    calls: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compat, "logs_configured", lambda: False)
    span = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    tracing.trace_inference_result(None, span, _response())
    tracing.trace_inference_result(None, tracing.GenerateContentSpan(span), _response())
    assert calls == []
    tracing.trace_inference_result(None, None, _response())  # ADK's own answer to no span
    assert calls == [None]


def test_a_recording_span_or_a_log_provider_gets_adk_s_function(
    calls: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    monkeypatch.setattr(compat, "logs_configured", lambda: False)
    with provider.get_tracer("t").start_as_current_span("gen") as span:
        tracing.trace_inference_result(None, span, _response())
    monkeypatch.setattr(compat, "logs_configured", lambda: True)
    quiet = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    tracing.trace_inference_result(None, quiet, _response())
    assert calls == [span, quiet]


def test_installed_once() -> None:
    compat.quiet_inference_results()
    installed = tracing.trace_inference_result
    compat.quiet_inference_results()
    assert tracing.trace_inference_result is installed


def test_httpx_without_its_command_line_client() -> None:
    """httpx works as the agent uses it, without importing click, rich or pygments."""
    code = """
import sys
from runtime.adk.compat import skip_httpx_cli
skip_httpx_cli()
import httpx
transport = httpx.MockTransport(lambda request: httpx.Response(200, text="ok"))
assert httpx.Client(transport=transport).get("http://x/").text == "ok"
print(sorted(m for m in ("click", "rich", "pygments") if m in sys.modules))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
