"""runtime/adk/stream_end.py: how a stream ends, and the one ModelFailure value."""

from __future__ import annotations

import itertools

from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.genai import errors as genai_errors

from runtime.adk.stream_check import InvalidStreamError
from runtime.adk.stream_end import MAX_CALLS_STOP, StopRequest, StreamEnd, model_failure
from runtime.errors import ModelError
from runtime.models.quota_errors import TerminalQuotaError
from runtime.protocol import AgentEndEvent, ErrorEvent, ModelFailure


def stream_end() -> StreamEnd:
    counter = itertools.count()
    return StreamEnd("s1", lambda: f"s1-{next(counter)}")


def test_a_model_error_is_a_model_failure_with_its_facts() -> None:
    quota = TerminalQuotaError("no quota", model="m", code="QUOTA_EXHAUSTED", http_status=429)
    assert model_failure(quota) == ModelFailure(
        status="RESOURCE_EXHAUSTED", code="QUOTA_EXHAUSTED", model="m"
    )
    odd = ModelError("x", status="NOT_A_STATUS")
    assert model_failure(odd) == ModelFailure(status="INTERNAL")


def test_an_http_error_is_a_model_failure_by_its_status_only() -> None:
    error = genai_errors.ClientError(400, {"error": {"code": 400, "message": "bad request"}})
    assert model_failure(error) == ModelFailure(status="INVALID_ARGUMENT", http_status=400)
    assert model_failure(RuntimeError("bug")) is None


def test_a_failed_stream_tells_the_failure_and_ends_failed() -> None:
    end = stream_end()
    told, stop = end.failed(ModelError("gone", status="NOT_FOUND", code="MODEL_NOT_FOUND"), None)
    assert stop is None and end.reason == "failed"
    assert isinstance(told, ErrorEvent) and told.fatal
    assert told.failure == ModelFailure(status="NOT_FOUND", code="MODEL_NOT_FOUND")
    assert told.meta == {"code": "MODEL_NOT_FOUND"}
    [closing] = end.closing(None)
    assert isinstance(closing, AgentEndEvent) and closing.reason == "failed"


def test_a_bug_is_an_internal_error_without_a_failure() -> None:
    told, _ = stream_end().failed(KeyError("k"), None)
    assert told is not None and told.failure is None
    assert told.status == "INTERNAL" and told.message == "KeyError: 'k'"


def test_an_http_error_message_names_its_status() -> None:
    error = genai_errors.ServerError(503, {"error": {"code": 503, "message": "overloaded"}})
    told, _ = stream_end().failed(error, None)
    assert told is not None and told.message.startswith("The model request failed (503): ")
    assert told.meta == {"httpStatus": 503}


def test_an_unusable_answer_is_told_and_the_turn_ends_without_failing() -> None:
    end = stream_end()
    told, _ = end.failed(InvalidStreamError("NO_RESPONSE_TEXT", finish="STOP"), None)
    assert told is not None and not told.fatal and told.failure is None
    assert end.data == {
        "code": "INVALID_STREAM",
        "errorType": "NO_RESPONSE_TEXT",
        "finishReason": "STOP",
    }


def test_the_model_call_limit_is_the_max_turns_stop() -> None:
    end = stream_end()
    told, stop = end.failed(LlmCallsLimitExceededError("limit"), None)
    assert told is None and stop is MAX_CALLS_STOP
    message, closing = end.closing(stop)
    assert isinstance(message, ErrorEvent) and message.meta == {"code": "MAX_TURNS_EXCEEDED"}
    assert isinstance(closing, AgentEndEvent) and closing.reason == "max_turns"
    assert closing.data == {"code": "MAX_TURNS_EXCEEDED"}
    # a stop already requested (a hook) wins over the limit
    hook = StopRequest(reason="completed", message="stopped", code="HOOK_STOP")
    _, kept = stream_end().failed(LlmCallsLimitExceededError("limit"), hook)
    assert kept is hook
