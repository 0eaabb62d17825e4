"""Classification of Google API errors into quota / capacity / not-found kinds."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import errors

from runtime.errors import ModelError
from runtime.models.google_errors import get_http_status, parse_duration_seconds
from runtime.models.quota_errors import (
    ModelNotFoundError,
    QuotaError,
    RetryableQuotaError,
    TerminalQuotaError,
    classify_error,
    failure_kind,
)
from tests.fakes.gemini_errors import (
    QUOTA_METRIC_REQUESTS,
    capacity_body,
    error_info,
    google_error_body,
    not_found_body,
    overloaded_body,
    per_day_quota_body,
    per_minute_quota_body,
    quota_failure,
    retry_info,
    server_error_body,
)

PRO = "gemini-2.5-pro"


def client_error(code: int, body: dict[str, Any]) -> errors.APIError:
    """An error exactly as genai raises it from an HTTP response."""
    if code >= 500:
        return errors.ServerError(code, body)
    return errors.ClientError(code, body)


def body_429(
    *details: dict[str, Any], message: str = "Resource has been exhausted"
) -> dict[str, Any]:
    return google_error_body(429, "RESOURCE_EXHAUSTED", message, details)


# ------------------------------------------------------------------ not found


def test_404_is_model_not_found() -> None:
    result = classify_error(client_error(404, not_found_body("gemini-9")), model="gemini-9")
    assert isinstance(result, ModelNotFoundError)
    assert isinstance(result, ModelError)
    assert result.status == "NOT_FOUND"
    assert result.model == "gemini-9"
    assert "gemini-9 was not found" in str(result)
    assert failure_kind(result) == "not_found"


# ----------------------------------------------------------------- terminal


def test_daily_quota_is_terminal_with_quota_id() -> None:
    error = client_error(429, per_day_quota_body(PRO))
    result = classify_error(error, model=PRO)
    assert isinstance(result, TerminalQuotaError)
    assert result.quota_id == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    assert result.quota_metric == QUOTA_METRIC_REQUESTS
    assert str(result) == (
        "gemini-2.5-pro is out of daily quota (GenerateRequestsPerDayPerProjectPerModel-FreeTier)."
    )
    assert result.__cause__ is error
    assert result.http_status == 429
    assert result.status == "RESOURCE_EXHAUSTED"
    assert not result.is_capacity
    assert failure_kind(result) == "terminal"


def test_daily_quota_with_retry_info_says_when_it_resets() -> None:
    body = body_429(quota_failure("GenerateRequestsPerDayPerProject"), retry_info("3600s"))
    result = classify_error(client_error(429, body), model=PRO)
    assert isinstance(result, TerminalQuotaError)
    assert str(result).endswith("; it resets in 1h.")
    assert result.retry_delay_seconds == 3600


def test_daily_in_error_info_quota_limit_is_terminal() -> None:
    body = body_429(error_info("RATE_LIMIT_EXCEEDED", metadata={"quota_limit": "DailyLimit"}))
    assert isinstance(classify_error(client_error(429, body)), TerminalQuotaError)


@pytest.mark.parametrize("code", [429, 499, 503])
def test_limit_zero_is_terminal(code: int) -> None:
    message = (
        "You exceeded your current quota.\n* Quota exceeded for metric: "
        "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, "
        "model: gemini-2.5-pro\nPlease retry in 20s."
    )
    body = google_error_body(code, None, message, [retry_info("20s")])
    result = classify_error(client_error(code, body), model=PRO)
    assert isinstance(result, TerminalQuotaError)
    assert "limit: 0" in str(result)


def test_limit_ten_is_not_limit_zero() -> None:
    body = body_429(retry_info("20s"), message="Quota exceeded, limit: 10, model: x")
    assert isinstance(classify_error(client_error(429, body)), RetryableQuotaError)


def test_capacity_is_terminal_capacity() -> None:
    result = classify_error(client_error(429, capacity_body(PRO)), model=PRO)
    assert isinstance(result, TerminalQuotaError)
    assert result.is_capacity
    assert result.reason == "MODEL_CAPACITY_EXHAUSTED"
    assert result.code == "MODEL_CAPACITY_EXHAUSTED"


def test_retry_info_above_300s_is_terminal() -> None:
    body = body_429(quota_failure("SomeQuota"), retry_info("301s"))
    result = classify_error(client_error(429, body), model=PRO)
    assert isinstance(result, TerminalQuotaError)
    assert result.retry_delay_seconds == 301
    assert str(result) == "gemini-2.5-pro is out of quota (SomeQuota); it resets in 5m 1s."


def test_cloudcode_quota_exhausted_is_terminal() -> None:
    body = body_429(error_info("QUOTA_EXHAUSTED", domain="cloudcode-pa.googleapis.com"))
    assert isinstance(classify_error(client_error(429, body)), TerminalQuotaError)


# ---------------------------------------------------------------- retryable


def test_retry_info_at_most_300s_is_retryable_with_that_delay() -> None:
    result = classify_error(client_error(429, per_minute_quota_body(PRO, retry="12s")), model=PRO)
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds == 12
    assert result.retry_delay_ms == 12_000
    assert failure_kind(result) == "transient"


def test_retry_info_exactly_300s_is_retryable() -> None:
    body = body_429(retry_info("300s"))
    result = classify_error(client_error(429, body))
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds == 300


def test_per_minute_without_retry_info_waits_60s() -> None:
    body = body_429(quota_failure("GenerateRequestsPerMinutePerProjectPerModel"))
    result = classify_error(client_error(429, body), model=PRO)
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds == 60
    assert result.quota_id == "GenerateRequestsPerMinutePerProjectPerModel"
    assert str(result).endswith("retrying in 60s.")


def test_cloudcode_rate_limit_defaults_to_10s() -> None:
    body = body_429(error_info("RATE_LIMIT_EXCEEDED", domain="cloudcode-pa.googleapis.com"))
    result = classify_error(client_error(429, body))
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds == 10


def test_other_429_with_details_is_retryable_without_delay() -> None:
    body = body_429(quota_failure("SomethingElse"))
    result = classify_error(client_error(429, body))
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds is None


def test_429_without_details_is_retryable() -> None:
    result = classify_error(client_error(429, body_429()))
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds is None


def test_499_without_details_is_retryable() -> None:
    body = google_error_body(499, "CANCELLED", "The operation was cancelled.")
    assert isinstance(classify_error(client_error(499, body)), RetryableQuotaError)


@pytest.mark.parametrize(
    ("text", "kind", "seconds"),
    [
        ("Please retry in 7.5s.", RetryableQuotaError, 7.5),
        ("Please retry in 900ms.", RetryableQuotaError, 0.9),
        ("Please retry in 301s.", TerminalQuotaError, 301),
    ],
)
def test_please_retry_in_message(text: str, kind: type[QuotaError], seconds: float) -> None:
    body = google_error_body(429, "RESOURCE_EXHAUSTED", f"Quota exceeded. {text}")
    result = classify_error(client_error(429, body))
    assert isinstance(result, kind)
    assert result.retry_delay_seconds == pytest.approx(seconds)


def test_please_retry_in_plain_exception_message() -> None:
    result = classify_error(RuntimeError("Please retry in 3s"))
    assert isinstance(result, RetryableQuotaError)
    assert result.retry_delay_seconds == 3


# ----------------------------------------------------------------- shapes, other


def test_inner_error_shape_is_accepted() -> None:
    """Some genai paths keep only the inner `error` object in `.details`."""
    inner = per_day_quota_body(PRO)["error"]
    result = classify_error(errors.ClientError(429, inner))
    assert isinstance(result, TerminalQuotaError)


def test_error_json_nested_in_message_is_read() -> None:
    nested = '{"error": ' + __import__("json").dumps(per_day_quota_body(PRO)["error"]) + "}"
    body = google_error_body(429, "RESOURCE_EXHAUSTED", f"upstream said: {nested}")
    assert isinstance(classify_error(client_error(429, body)), TerminalQuotaError)


@pytest.mark.parametrize(
    ("code", "body"),
    [
        (500, server_error_body()),
        (503, overloaded_body()),
        (400, google_error_body(400, None, "Invalid argument")),
        (403, google_error_body(403, None, "Permission denied")),
    ],
)
def test_other_errors_are_returned_unchanged(code: int, body: dict[str, Any]) -> None:
    error = client_error(code, body)
    assert classify_error(error) is error
    assert failure_kind(error) == "unknown"


def test_non_http_error_is_returned_unchanged() -> None:
    error = ConnectionResetError("reset")
    assert classify_error(error) is error


def test_classification_is_idempotent() -> None:
    result = classify_error(client_error(429, per_day_quota_body(PRO)))
    assert classify_error(result) is result


def test_model_unknown_reads_the_model() -> None:
    result = classify_error(client_error(429, per_day_quota_body(PRO)))
    assert str(result).startswith("The model is out of daily quota")


def test_http_status_of_various_errors() -> None:
    assert get_http_status(client_error(429, body_429())) == 429

    class WithStatusCode(Exception):
        status_code = 503

    assert get_http_status(WithStatusCode()) == 503
    assert get_http_status(ValueError()) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("34s", 34.0),
        ("1.5s", 1.5),
        ("250ms", 0.25),
        ({"seconds": 2, "nanos": 500_000_000}, 2.5),
        ("soon", None),
        (None, None),
    ],
)
def test_parse_duration(value: Any, seconds: float | None) -> None:
    assert parse_duration_seconds(value) == seconds
