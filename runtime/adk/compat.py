"""Workarounds for measured costs in google-adk (2.13, still so in 2.15), each with its reason.

ADK imports its optional `RemoteA2aAgent` (which needs the `a2a` package) every
time it wraps the agent as a workflow node, that is at every step of every
turn. Without `a2a` installed the import fails anew each time, reloading the
module from disk: ~5 ms per step on the CI machine, the largest single cost of
a warm turn. We use no A2A agents, so when `a2a` is absent the module is
recorded as unavailable once and the lookup fails at once.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from typing import Any

_REMOTE_A2A = "google.adk.agents.remote_a2a_agent"


def skip_unavailable_optional_imports() -> None:
    if _REMOTE_A2A not in sys.modules and importlib.util.find_spec("a2a") is None:
        sys.modules[_REMOTE_A2A] = None  # type: ignore[assignment]


def use_httpx_for_genai() -> None:
    """Make google-genai use its httpx transport in this process, as it does without aiohttp.

    genai imports aiohttp whenever it is installed and then streams with it;
    aiohttp costs ~10 MB of resident memory in the agent (measured: 135 → 125 MB
    after session/new). The agent uses httpx everywhere (ADK and genai require
    it), so aiohttp is only a test dependency (the fake Gemini server); marking it
    absent before genai loads keeps one transport, the same in tests and for
    users. httpx itself is imported without its command-line client (`skip_httpx_cli`).
    Call before `google.genai` is imported.
    """
    skip_httpx_cli()
    if "google.genai" in sys.modules:
        return
    sys.modules.setdefault("aiohttp", None)  # type: ignore[arg-type]


def skip_httpx_cli() -> None:
    """Import httpx without its command-line client (start-up time).

    `httpx/__init__` imports its CLI module (`httpx._main`) when it can, and that
    brings in click, rich and pygments whenever they are installed (click is, for
    uvicorn): ~0.14 s of CPU at a cold start and ~100 modules (measured), for a CLI
    the agent never runs. httpx handles the module being
    absent (its `main` then says the CLI is not installed), so it is recorded as
    absent before httpx loads. Call before `httpx` is imported.
    """
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def quiet_inference_logs() -> None:
    """ADK emits one OpenTelemetry log record per history message on every model call
    (stable semconv), even when no log provider is installed and the records go
    nowhere: an engine cost that grew with the conversation (measured: ~6 ms per call
    at 400 turns). With no log provider set, the span is still made, but over a request
    whose contents are hidden while ADK opens it (it only reads them to emit those
    records); they are back before the model is called."""
    from contextlib import contextmanager

    from google.adk.telemetry import tracing

    original = tracing._use_native_generate_content_span_stable_semconv
    if getattr(original, "_gcli_quiet", False):
        return

    @contextmanager
    def quiet(llm_request: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if logs_configured():
            with original(llm_request, *args, **kwargs) as span:
                yield span
            return
        contents, llm_request.contents = llm_request.contents, []
        try:
            with original(llm_request, *args, **kwargs) as span:
                llm_request.contents = contents
                yield span
        finally:
            llm_request.contents = contents

    quiet._gcli_quiet = True  # type: ignore[attr-defined]
    tracing._use_native_generate_content_span_stable_semconv = quiet


def logs_configured() -> bool:
    """Whether an OpenTelemetry log provider is set (else ADK's log records go nowhere)."""
    try:
        from opentelemetry._logs import _internal as logs

        return logs._LOGGER_PROVIDER is not None
    except (ImportError, AttributeError):
        return True


def quiet_inference_results() -> None:
    """ADK records every streamed response on the inference span at once: span
    attributes (usage, finish reason, grounding and cache metadata) and one log record
    with the response's content, on the path of each chunk to the editor. With no
    tracer the span does not record, and with no log provider the record goes nowhere:
    then the response is not recorded at all (measured: ~5% of a warm prompt's time
    to its first chunk). A recording span or a log provider gets ADK's own function."""
    from google.adk.telemetry import tracing

    original = tracing.trace_inference_result
    if getattr(original, "_gcli_quiet", False):
        return

    def trace_inference_result(invocation_context: Any, span: Any, llm_response: Any) -> None:
        inner = getattr(span, "span", span)  # a GenerateContentSpan holds its span
        if inner is not None and not inner.is_recording() and not logs_configured():
            return
        original(invocation_context, span, llm_response)

    trace_inference_result._gcli_quiet = True  # type: ignore[attr-defined]
    tracing.trace_inference_result = trace_inference_result


def quiet_telemetry() -> Any:
    """ADK's OpenTelemetry config for our runs: stable semconv, no message content.

    No tracer is installed, but ADK still builds span and log payloads for every
    streamed chunk; the experimental semconv path serializes each chunk's content
    (about a third of the per-chunk cost, measured). Content never belongs in
    telemetry here anyway.
    """
    from google.adk.telemetry.context import ContentCapturingMode, TelemetryConfig

    return TelemetryConfig(
        genai_semconv_stability_opt_in="stable",
        capture_message_content=ContentCapturingMode.NO_CONTENT,
    )
