"""OTLP/HTTP with JSON encoding: the span exporter used when the official protobuf
exporter package is not installed (OTLP receivers accept `application/json` on the same
`/v1/traces` path). Standard library only on top of the OpenTelemetry SDK; it runs on
the batch processor's thread.

The OTLP JSON mapping: ids in hex, 64-bit integers as strings, enums as numbers.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT_S = 10.0


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in (attributes or {}).items()]


_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


def _span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None
    out: dict[str, Any] = {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "name": span.name,
        "kind": span.kind.value + 1,  # the SDK counts from INTERNAL=0, OTLP from UNSPECIFIED=0
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "status": {"code": _STATUS.get(span.status.status_code, 0)},
    }
    if span.parent is not None:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    if ctx.trace_state:
        out["traceState"] = ctx.trace_state.to_header()
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": _attributes(e.attributes),
            }
            for e in span.events
        ]
    return out


def encode(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An `ExportTraceServiceRequest`, grouped by resource and instrumentation scope."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        resource, scopes = by_resource.setdefault(id(span.resource), (span.resource, {}))
        scope = span.instrumentation_scope
        key = (scope.name if scope else "", (scope.version or "") if scope else "")
        scopes.setdefault(key, []).append(_span(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource.attributes)},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": encoded}
                    for (name, version), encoded in scopes.items()
                ],
            }
            for resource, scopes in by_resource.values()
        ]
    }


def _headers(raw: str) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, comma-separated, URL-encoded."""
    headers: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[urllib.parse.unquote(key.strip())] = urllib.parse.unquote(value.strip())
    return headers


class OtlpJsonSpanExporter(SpanExporter):
    """POSTs each batch to the traces endpoint; a failure is logged, never raised."""

    def __init__(self, endpoint: str, headers: Mapping[str, str], timeout_s: float) -> None:
        self.endpoint = endpoint
        self.headers = {**headers, "Content-Type": "application/json"}
        self.timeout_s = timeout_s

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OtlpJsonSpanExporter:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        if not endpoint:
            base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
            endpoint = base.rstrip("/") + "/v1/traces"
        headers = _headers(
            env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            or env.get("OTEL_EXPORTER_OTLP_HEADERS")
            or ""
        )
        timeout = env.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or env.get(
            "OTEL_EXPORTER_OTLP_TIMEOUT"
        )
        try:
            timeout_s = float(timeout) / 1000 if timeout else DEFAULT_TIMEOUT_S
        except ValueError:
            timeout_s = DEFAULT_TIMEOUT_S
        return cls(endpoint, headers, timeout_s)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        body = json.dumps(encode(spans)).encode("utf-8")
        request = urllib.request.Request(
            self.endpoint, data=body, headers=self.headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            logger.warning("OTLP export to %s failed: %s", self.endpoint, exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
