"""Google API error bodies, read (part of the error classification in
`quota_errors.py`): the `error` object genai keeps in `APIError.details` (the
whole body, or only the inner object on some paths; a gateway may wrap it as JSON
inside the message), the HTTP status of any error, and Google's durations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GoogleApiError:
    """The `error` object of a Google API error body. `details` are the typed detail dicts."""

    code: int | None
    status: str | None
    message: str
    details: tuple[Mapping[str, Any], ...]

    def find_detail(self, type_url: str) -> Mapping[str, Any] | None:
        return next((d for d in self.details if d.get("@type") == type_url), None)


def _inner_error(body: Any) -> Mapping[str, Any] | None:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return inner
    return body


def _nested_json_error(message: str) -> Mapping[str, Any] | None:
    """Some gateways wrap the real error body as JSON inside the message string."""
    start = message.find("{")
    if start < 0:
        return None
    try:
        parsed = json.loads(message[start:])
    except ValueError:
        return None
    inner = parsed.get("error") if isinstance(parsed, Mapping) else None
    return inner if isinstance(inner, Mapping) else None


def parse_google_api_error(error: BaseException) -> GoogleApiError | None:
    """The Google error object carried by `error`, or None if it carries none."""
    body = getattr(error, "details", None)
    inner = _inner_error(body)
    if inner is None:
        return None
    message = inner.get("message")
    message = message if isinstance(message, str) else ""
    nested = _nested_json_error(message)
    if nested is not None:
        inner = nested
        message = str(inner.get("message") or message)
    raw_details = inner.get("details")
    details = (
        tuple(d for d in raw_details if isinstance(d, Mapping))
        if isinstance(raw_details, list)
        else ()
    )
    code = inner.get("code")
    status = inner.get("status")
    return GoogleApiError(
        code=code if isinstance(code, int) else get_http_status(error),
        status=status if isinstance(status, str) else None,
        message=message,
        details=details,
    )


def get_http_status(error: BaseException) -> int | None:
    """The HTTP status of an error (genai `.code`, `.status_code`, `.response.status_code`)."""
    for candidate in (
        getattr(error, "code", None),
        getattr(error, "status_code", None),
        getattr(error, "status", None),  # aiohttp.ClientResponseError
        getattr(getattr(error, "response", None), "status_code", None),
        getattr(getattr(error, "response", None), "status", None),
    ):
        if type(candidate) is int and 100 <= candidate < 600:
            return candidate
    return None


def parse_duration_seconds(value: Any) -> float | None:
    """`"34s"`, `"1.5s"`, `"900ms"` or `{"seconds": 34, "nanos": 0}` → seconds; else None."""
    if isinstance(value, Mapping):
        try:
            return float(value.get("seconds", 0)) + float(value.get("nanos", 0)) / 1e9
        except (TypeError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if text.endswith("ms"):
            return float(text[:-2]) / 1000.0
        if text.endswith("s"):
            return float(text[:-1])
    except ValueError:
        return None
    return None
