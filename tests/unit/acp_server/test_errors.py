"""acp_server/errors.py: engine errors and failed turns → JSON-RPC errors."""

from __future__ import annotations

from acp_server.errors import (
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MODEL_ERROR,
    from_runtime,
    turn_failed,
)
from runtime.errors import ConfigError, ModelError, StreamActiveError
from runtime.protocol import ErrorEvent, ErrorStatus, ModelFailure


def fatal(failure: ModelFailure | None, status: ErrorStatus = "INTERNAL") -> ErrorEvent:
    return ErrorEvent(
        id="e", stream_id="s", status=status, message="it failed", fatal=True, failure=failure
    )


def test_a_model_failure_is_a_model_error_with_what_is_known() -> None:
    quota = ModelFailure(status="RESOURCE_EXHAUSTED", code="QUOTA_EXHAUSTED", model="m")
    error = turn_failed(fatal(quota, "RESOURCE_EXHAUSTED"))
    assert error.to_dict() == {
        "code": MODEL_ERROR,
        "message": "it failed",
        "data": {"status": "RESOURCE_EXHAUSTED", "code": "QUOTA_EXHAUSTED", "model": "m"},
    }
    http = turn_failed(fatal(ModelFailure(status="INVALID_ARGUMENT", http_status=400)))
    assert http.code == MODEL_ERROR
    assert http.data == {"status": "INVALID_ARGUMENT", "httpStatus": 400}
    # the value decides, not the status name
    internal_model = turn_failed(fatal(ModelFailure(status="INTERNAL")))
    assert internal_model.code == MODEL_ERROR


def test_a_failure_that_is_no_model_failure_is_an_internal_error() -> None:
    error = turn_failed(fatal(None, "RESOURCE_EXHAUSTED"))
    assert error.code == INTERNAL_ERROR
    assert error.data == {"status": "RESOURCE_EXHAUSTED"}


def test_engine_errors_map_onto_the_table() -> None:
    assert from_runtime(StreamActiveError("busy")).code == BUSY
    assert from_runtime(ConfigError("bad")).code == INVALID_PARAMS
    model = from_runtime(ModelError("gone", status="NOT_FOUND", code="MODEL_NOT_FOUND"))
    assert model.code == MODEL_ERROR
    assert model.data == {"code": "MODEL_NOT_FOUND", "status": "NOT_FOUND"}
