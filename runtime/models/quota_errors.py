"""Classification of model-call errors into quota, capacity and not-found kinds.

Port of the behaviour of Gemini CLI's Google quota error classification (see
`docs/gemini-cli-behaviours.md#error-classification`). `classify_error` takes whatever the
ContentGenerator raised (a `google.genai.errors.APIError`, or any exception)
and returns one of the typed errors below, or the original error when none
applies. The typed errors are `ModelError`s so they can leave the engine as
they are.

Google error bodies look like::

    {"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
               "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [{"quotaMetric": "...", "quotaId": "...PerDay..."}]},
                           {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                            "retryDelay": "34s"}]}}

genai keeps that parsed JSON in `APIError.details` (the whole body, or only the
inner `error` object on some paths); both shapes are accepted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from runtime.durations import format_duration
from runtime.errors import ModelError
from runtime.models.google_errors import (
    GoogleApiError,
    get_http_status,
    parse_duration_seconds,
    parse_google_api_error,
)

logger = logging.getLogger(__name__)

MAX_RETRYABLE_DELAY_SECONDS = 300.0
"""A server-suggested delay above this makes a quota error terminal."""

PER_MINUTE_RETRY_SECONDS = 60.0

QUOTA_FAILURE_TYPE = "type.googleapis.com/google.rpc.QuotaFailure"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"

CAPACITY_REASON_PREFIX = "MODEL_CAPACITY_"
CLOUDCODE_DOMAINS = frozenset(
    {
        "cloudcode-pa.googleapis.com",
        "staging-cloudcode-pa.googleapis.com",
        "autopush-cloudcode-pa.googleapis.com",
    }
)

FailureKind = Literal["terminal", "transient", "not_found", "unknown"]

_QUOTA_STATUSES = frozenset({429, 499, 503})
_RETRY_IN_RE = re.compile(r"Please retry in ([0-9.]+(?:ms|s))")
_LIMIT_ZERO_RE = re.compile(r"\blimit:\s*0(?![0-9.])")


# --------------------------------------------------------------------------- errors


class QuotaError(ModelError):
    """Base of quota errors. Fields are None when the server did not say.

    `retry_delay_seconds` is the server's suggested wait (or the reset time for
    terminal errors when known); `quota_id` the violated quota (e.g.
    `GenerateRequestsPerDayPerProjectPerModel`), `quota_metric` its metric;
    `reason` the ErrorInfo reason. The message is a human sentence.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        http_status: int | None = None,
        code: str,
        quota_id: str | None = None,
        quota_metric: str | None = None,
        retry_delay_seconds: float | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(
            message,
            status="RESOURCE_EXHAUSTED",
            code=code,
            model=model,
            http_status=http_status,
        )
        self.quota_id = quota_id
        self.quota_metric = quota_metric
        self.retry_delay_seconds = retry_delay_seconds
        self.reason = reason

    @property
    def retry_delay_ms(self) -> float | None:
        return None if self.retry_delay_seconds is None else self.retry_delay_seconds * 1000.0


class TerminalQuotaError(QuotaError):
    """Retrying the same model will not help soon (daily quota, limit 0, long delay, capacity).

    `is_capacity` is True for MODEL_CAPACITY_* errors: the retry loop gives those
    two silent retries before treating them as terminal.
    """

    @property
    def is_capacity(self) -> bool:
        return bool(self.reason and self.reason.startswith(CAPACITY_REASON_PREFIX))


class RetryableQuotaError(QuotaError):
    """A rate limit: retry the same model after `retry_delay_seconds` (None: normal backoff)."""


class ModelNotFoundError(ModelError):
    """HTTP 404: the model id does not exist or is not available to this account."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(
            message, status="NOT_FOUND", code="MODEL_NOT_FOUND", model=model, http_status=404
        )


# ------------------------------------------------------------------ classification


@dataclass(frozen=True)
class _Facts:
    """What the error tells about the quota, gathered once."""

    api: GoogleApiError
    model: str | None
    http_status: int | None
    quota_ids: tuple[str, ...]
    quota_metric: str | None
    reason: str | None
    domain: str | None
    retry_delay: float | None

    @property
    def quota_id(self) -> str | None:
        return self.quota_ids[0] if self.quota_ids else None

    def quota_with(self, *markers: str) -> str | None:
        return next((q for q in self.quota_ids if any(m in q for m in markers)), None)

    def make(
        self,
        cls: type[QuotaError],
        message: str,
        *,
        code: str,
        quota_id: str | None = None,
        delay: float | None = None,
    ) -> QuotaError:
        return cls(
            message.replace("{who}", self.model or "The model"),
            model=self.model,
            http_status=self.http_status,
            code=code,
            quota_id=quota_id or self.quota_id,
            quota_metric=self.quota_metric,
            retry_delay_seconds=delay,
            reason=self.reason,
        )


def _gather(api: GoogleApiError, model: str | None, http_status: int | None) -> _Facts:
    quota_ids: list[str] = []
    metrics: list[str] = []
    quota_failure = api.find_detail(QUOTA_FAILURE_TYPE)
    violations = quota_failure.get("violations") if quota_failure else None
    for violation in violations if isinstance(violations, list) else []:
        if isinstance(violation, Mapping):
            quota_ids.append(str(violation.get("quotaId") or ""))
            metrics.append(str(violation.get("quotaMetric") or ""))
    error_info = api.find_detail(ERROR_INFO_TYPE) or {}
    metadata = error_info.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("quota_limit"):
        quota_ids.append(str(metadata["quota_limit"]))
    retry_info = api.find_detail(RETRY_INFO_TYPE)
    retry_delay = parse_duration_seconds(retry_info.get("retryDelay")) if retry_info else None
    return _Facts(
        api=api,
        model=model,
        http_status=http_status,
        quota_ids=tuple(q for q in quota_ids if q),
        quota_metric=next((m for m in metrics if m), None),
        reason=str(error_info["reason"]) if error_info.get("reason") else None,
        domain=str(error_info["domain"]) if error_info.get("domain") else None,
        retry_delay=retry_delay or None,
    )


def _classify_structured(f: _Facts) -> QuotaError | None:
    """Rules for a 429/499/503 that carries typed details, in the legacy order."""
    label = f" ({f.quota_id})" if f.quota_id else ""
    reset = f"; it resets in {format_duration(f.retry_delay)}" if f.retry_delay else ""
    cloudcode = f.domain in CLOUDCODE_DOMAINS
    if daily := f.quota_with("PerDay", "Daily"):
        return f.make(
            TerminalQuotaError,
            f"{{who}} is out of daily quota ({daily}){reset}.",
            code="QUOTA_EXHAUSTED",
            quota_id=daily,
            delay=f.retry_delay,
        )
    if f.reason and f.reason.startswith(CAPACITY_REASON_PREFIX):
        return f.make(
            TerminalQuotaError,
            f"{{who}} has no capacity available right now ({f.reason}).",
            code="MODEL_CAPACITY_EXHAUSTED",
            delay=f.retry_delay,
        )
    if cloudcode and f.reason == "RATE_LIMIT_EXCEEDED":
        delay = f.retry_delay or 10.0
        return f.make(
            RetryableQuotaError,
            f"{{who}} is rate limited; retrying in {format_duration(delay)}.",
            code="RATE_LIMITED",
            delay=delay,
        )
    too_long = f.retry_delay is not None and f.retry_delay > MAX_RETRYABLE_DELAY_SECONDS
    if (cloudcode and f.reason == "QUOTA_EXHAUSTED") or too_long:
        return f.make(
            TerminalQuotaError,
            f"{{who}} is out of quota{label}{reset}.",
            code="QUOTA_EXHAUSTED",
            delay=f.retry_delay,
        )
    if f.retry_delay:
        return f.make(
            RetryableQuotaError,
            f"{{who}} is rate limited{label}; retrying in {format_duration(f.retry_delay)}.",
            code="RATE_LIMITED",
            delay=f.retry_delay,
        )
    if per_minute := f.quota_with("PerMinute"):
        return f.make(
            RetryableQuotaError,
            f"{{who}} is rate limited ({per_minute}); retrying in 60s.",
            code="RATE_LIMITED",
            quota_id=per_minute,
            delay=PER_MINUTE_RETRY_SECONDS,
        )
    if f.http_status in (429, 499):
        return f.make(RetryableQuotaError, f"{{who}} is rate limited{label}.", code="RATE_LIMITED")
    return None


def _classify_from_message(f: _Facts) -> QuotaError | None:
    """No typed details: look for `Please retry in Xs`, else treat 429/499 as a rate limit."""
    match = _RETRY_IN_RE.search(f.api.message)
    delay = parse_duration_seconds(match.group(1)) if match else None
    if delay is not None and delay > MAX_RETRYABLE_DELAY_SECONDS:
        return f.make(
            TerminalQuotaError,
            f"{{who}} is out of quota; it resets in {format_duration(delay)}.",
            code="QUOTA_EXHAUSTED",
            delay=delay,
        )
    if delay is not None:
        return f.make(
            RetryableQuotaError,
            f"{{who}} is rate limited; retrying in {format_duration(delay)}.",
            code="RATE_LIMITED",
            delay=delay,
        )
    if f.http_status in (429, 499):
        return f.make(RetryableQuotaError, "{who} is rate limited.", code="RATE_LIMITED")
    return None


def _has_limit_zero(f: _Facts) -> bool:
    texts = [f.api.message]
    quota_failure = f.api.find_detail(QUOTA_FAILURE_TYPE)
    violations = quota_failure.get("violations") if quota_failure else None
    for violation in violations if isinstance(violations, list) else []:
        if isinstance(violation, Mapping):
            texts.append(str(violation.get("description") or ""))
    return any(_LIMIT_ZERO_RE.search(t) for t in texts)


def classify_error(error: BaseException, *, model: str | None = None) -> BaseException:
    """Classify a model-call error.

    Returns a `TerminalQuotaError`, `RetryableQuotaError` or `ModelNotFoundError`
    (with `__cause__` set to `error`), or `error` itself when it is none of those
    (or was already classified). `model` is only used for the messages.
    """
    if isinstance(error, QuotaError | ModelNotFoundError):
        return error
    api = parse_google_api_error(error)
    status = (api.code if api else None) or get_http_status(error)
    message = (api.message if api else "") or str(error)
    classified: BaseException | None
    if status == 404:
        classified = ModelNotFoundError(
            f"{model or 'The model'} was not found: {message}", model=model
        )
    else:
        details = api.details if api else ()
        facts = _gather(GoogleApiError(status, None, message, details), model, status)
        if status in _QUOTA_STATUSES and _has_limit_zero(facts):
            metric = f" for {facts.quota_metric}" if facts.quota_metric else ""
            classified = facts.make(
                TerminalQuotaError,
                f"{{who}} has no quota on this account (limit: 0{metric}).",
                code="QUOTA_EXHAUSTED",
            )
        elif status in _QUOTA_STATUSES and details:
            classified = _classify_structured(facts)
        else:
            classified = _classify_from_message(facts)
    if classified is None:
        return error
    classified.__cause__ = error
    logger.debug("classified %r as %s: %s", error, type(classified).__name__, classified)
    return classified


def failure_kind(error: BaseException) -> FailureKind:
    """The fallback policy's failure kind for an error (classified or raw)."""
    classified = classify_error(error)
    if isinstance(classified, TerminalQuotaError):
        return "terminal"
    if isinstance(classified, RetryableQuotaError):
        return "transient"
    if isinstance(classified, ModelNotFoundError):
        return "not_found"
    return "unknown"
