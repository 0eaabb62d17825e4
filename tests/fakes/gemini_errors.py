"""Google API error bodies, as the Gemini API sends them.

A Google error is an HTTP status plus a JSON body
`{"error": {"code", "status", "message", "details": [...]}}`; each detail is a
`google.rpc.*` message tagged with `@type`. The builders here return plain
dicts (the wire form, camelCase) so a test can also tweak them. The shapes
follow what the Gemini API returns for quota and capacity failures, which is
what Gemini CLI's error classification (`googleQuotaErrors.ts`) reads:

- `QuotaFailure.violations[].quotaId` containing `PerDay` / `PerMinute`;
- `RetryInfo.retryDelay` (a duration string such as `"12s"`);
- `ErrorInfo.reason` such as `MODEL_CAPACITY_EXHAUSTED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

GOOGLE_RPC = "type.googleapis.com/google.rpc."
QUOTA_METRIC_REQUESTS = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
RATE_LIMITS_DOC = "https://ai.google.dev/gemini-api/docs/rate-limits"

# HTTP status → canonical Google status, for bodies built without an explicit one.
STATUS_BY_CODE: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def quota_failure(
    quota_id: str,
    *,
    quota_metric: str = QUOTA_METRIC_REQUESTS,
    dimensions: Mapping[str, str] | None = None,
    quota_value: str | int | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """A `google.rpc.QuotaFailure` detail with one violation."""
    violation: dict[str, Any] = {"quotaMetric": quota_metric, "quotaId": quota_id}
    if dimensions:
        violation["quotaDimensions"] = dict(dimensions)
    if quota_value is not None:
        violation["quotaValue"] = str(quota_value)
    if description is not None:
        violation["description"] = description
    return {"@type": GOOGLE_RPC + "QuotaFailure", "violations": [violation]}


def retry_info(delay: str | float) -> dict[str, Any]:
    """A `google.rpc.RetryInfo` detail; `delay` is a duration ("12s", "0.5s") or seconds."""
    text = delay if isinstance(delay, str) else f"{delay:g}s"
    return {"@type": GOOGLE_RPC + "RetryInfo", "retryDelay": text}


def error_info(
    reason: str,
    domain: str = "generativelanguage.googleapis.com",
    metadata: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A `google.rpc.ErrorInfo` detail, e.g. reason `MODEL_CAPACITY_EXHAUSTED`."""
    detail: dict[str, Any] = {"@type": GOOGLE_RPC + "ErrorInfo", "reason": reason, "domain": domain}
    if metadata:
        detail["metadata"] = dict(metadata)
    return detail


def help_links(*links: tuple[str, str]) -> dict[str, Any]:
    """A `google.rpc.Help` detail from (description, url) pairs."""
    return {
        "@type": GOOGLE_RPC + "Help",
        "links": [{"description": d, "url": u} for d, u in links],
    }


def google_error_body(
    code: int,
    status: str | None,
    message: str,
    details: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The JSON body of a Google API error response."""
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "status": status or STATUS_BY_CODE.get(code, "UNKNOWN"),
    }
    if details:
        error["details"] = [dict(d) for d in details]
    return {"error": error}


# ---------------------------------------------------------------- typical bodies


def per_day_quota_body(model: str, *, limit: int = 250) -> dict[str, Any]:
    """429: the free tier's daily request quota for `model` is used up (terminal)."""
    message = (
        "You exceeded your current quota, please check your plan and billing details. "
        f"For more information on this error, head to: {RATE_LIMITS_DOC}.\n"
        f"* Quota exceeded for metric: {QUOTA_METRIC_REQUESTS}, limit: {limit}, model: {model}"
    )
    return google_error_body(
        429,
        "RESOURCE_EXHAUSTED",
        message,
        [
            quota_failure(
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                dimensions={"location": "global", "model": model},
                quota_value=limit,
            ),
            help_links(("Learn more about Gemini API quotas", RATE_LIMITS_DOC)),
        ],
    )


def per_minute_quota_body(model: str, *, retry: str = "12s", limit: int = 5) -> dict[str, Any]:
    """429: the per-minute request quota for `model` is used up (retryable after `retry`)."""
    seconds = retry.removesuffix("s")
    message = (
        "You exceeded your current quota, please check your plan and billing details. "
        f"For more information on this error, head to: {RATE_LIMITS_DOC}.\n"
        f"* Quota exceeded for metric: {QUOTA_METRIC_REQUESTS}, limit: {limit}, model: {model}\n"
        f"Please retry in {seconds}s."
    )
    return google_error_body(
        429,
        "RESOURCE_EXHAUSTED",
        message,
        [
            quota_failure(
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                dimensions={"location": "global", "model": model},
                quota_value=limit,
            ),
            help_links(("Learn more about Gemini API quotas", RATE_LIMITS_DOC)),
            retry_info(retry),
        ],
    )


def capacity_body(model: str) -> dict[str, Any]:
    """429: no capacity for `model` on the server right now (ErrorInfo MODEL_CAPACITY_EXHAUSTED)."""
    return google_error_body(
        429,
        "RESOURCE_EXHAUSTED",
        f"No capacity available for model {model} on the server",
        [error_info("MODEL_CAPACITY_EXHAUSTED", metadata={"model": model})],
    )


def not_found_body(model: str) -> dict[str, Any]:
    """404: the model does not exist (or is not available to this key)."""
    return google_error_body(
        404,
        "NOT_FOUND",
        f"models/{model} is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their "
        "supported methods.",
    )


def server_error_body(
    message: str = "An internal error has occurred. Please retry.",
) -> dict[str, Any]:
    """500 INTERNAL."""
    return google_error_body(500, "INTERNAL", message)


def overloaded_body() -> dict[str, Any]:
    """503 UNAVAILABLE: the model is overloaded (retryable)."""
    return google_error_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
