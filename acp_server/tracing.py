"""Trace context: a request's `_meta.traceparent` / `tracestate` / `baggage` (W3C, the
`_meta` root keys ACP reserves for them) become the parent of the turn's OpenTelemetry
spans, ours (`session/prompt`) and ADK's under it (`invoke_agent`, the model call,
`execute_tool`), exported the way the standard `OTEL_*` variables say.

Nothing here imports OpenTelemetry unless an `OTEL_*` variable asks for export
(`wanted`): the cold path pays nothing. With export wanted, the first turn installs a
global `TracerProvider` (ADK's tracers are proxies of the global one, so its spans join)
with a batch processor over the exporter `OTEL_TRACES_EXPORTER` names (`otlp`, the
default, or `console`, written to stderr: stdout carries ACP). OTLP goes over HTTP to
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`),
with `OTEL_EXPORTER_OTLP_HEADERS`: protobuf through the official exporter package when it
is installed and the protocol is `http/protobuf` (the default), JSON otherwise
(`acp_server/otlp_json.py`; `grpc` needs the official gRPC exporter package). The
contexts are attached on the request's task before the turn starts, so the engine's
tasks inherit them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

logger = logging.getLogger(__name__)

TRACE_KEYS = ("traceparent", "tracestate", "baggage")
"""The `_meta` root keys of W3C trace context."""

_EXPORT_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)

_lock = threading.Lock()
_provider: Any = None
_failed = False


def wanted(env: Mapping[str, str]) -> bool:
    """True when the user asked for trace export through the standard variables."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in _EXPORT_VARIABLES)


def _exporter(env: Mapping[str, str]) -> Any:
    """The span exporter the variables name (None: none usable, told in the log)."""
    kind = (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")[0].strip().lower()
    if kind == "console":
        import sys

        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    if kind != "otlp":
        logger.error("OTEL_TRACES_EXPORTER=%s is not supported (otlp, console)", kind)
        return None
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
        except ImportError:
            logger.error("OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc installed")
            return None
        return OTLPSpanExporter()
    if protocol == "http/protobuf":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter as ProtobufExporter,
            )
        except ImportError:
            logger.info("opentelemetry-exporter-otlp-proto-http is not installed: OTLP as JSON")
        else:
            return ProtobufExporter()
    from acp_server.otlp_json import OtlpJsonSpanExporter

    return OtlpJsonSpanExporter.from_env(env)


def _ensure_provider(env: Mapping[str, str]) -> Any:
    """The global tracer provider, installed on first use (None if it cannot be)."""
    global _provider, _failed
    with _lock:
        if _provider is not None or _failed:
            return _provider
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            exporter = _exporter(env)
            if exporter is None:
                _failed = True
                return None
            attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "adk-acp"}
            provider = TracerProvider(resource=Resource.create(attributes))
            provider.add_span_processor(BatchSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
        except Exception:  # noqa: BLE001 - tracing never stops the agent; told once
            logger.exception("could not set up OpenTelemetry export")
            _failed = True
            return None
        _provider = provider
        return provider


def _carrier(meta: Mapping[str, Any] | None) -> dict[str, str]:
    return {k: v for k, v in (meta or {}).items() if k in TRACE_KEYS and isinstance(v, str)}


@contextlib.contextmanager
def turn_span(
    env: Mapping[str, str], meta: Mapping[str, Any] | None, session_id: str
) -> Iterator[None]:
    """Run a turn under a `session/prompt` span whose parent is the trace context in
    `meta` (a new trace without one); a no-op when no export is wanted."""
    if not wanted(env) or _ensure_provider(env) is None:
        yield
        return
    from opentelemetry import context, trace
    from opentelemetry.baggage.propagation import W3CBaggagePropagator
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = _carrier(meta)
    parent = W3CBaggagePropagator().extract(
        carrier, context=TraceContextTextMapPropagator().extract(carrier)
    )
    token = context.attach(parent)
    try:
        tracer = trace.get_tracer("adk-acp")
        with tracer.start_as_current_span(
            "session/prompt",
            kind=trace.SpanKind.SERVER,
            attributes={
                "rpc.system": "jsonrpc",
                "rpc.method": "session/prompt",
                "gen_ai.conversation.id": session_id,
            },
        ):
            yield
    finally:
        context.detach(token)


def flush(timeout_s: float = 5.0) -> None:
    """Export what is buffered (at exit: the process ends with `os._exit`)."""
    provider = _provider
    if provider is not None:
        provider.force_flush(int(timeout_s * 1000))
