"""How a stream ends (part of AdkAgentProtocol): a guard's stop request, an
exception turned into the one `ModelFailure` value and its error event, and the
closing events of the stream.

An exception from the model call is a model failure when it is a `ModelError`
(classified by the resilience loop: quota, not found, a stream that kept
breaking, a model that could not be reached) or carries an HTTP status we know
(`HTTP_TO_STATUS`); anything else is an internal error, logged in one line (with its
traceback at DEBUG).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.adk.agents.invocation_context import LlmCallsLimitExceededError

from runtime.adk.stream_check import InvalidStreamError
from runtime.adk.translator import HTTP_TO_STATUS
from runtime.errors import ModelError
from runtime.protocol import (
    AgentEndEvent,
    AgentEndReason,
    AgentEvent,
    ErrorEvent,
    ErrorStatus,
    ModelFailure,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StopRequest:
    """A guard (a limit, a hook, a loop) ends the stream: how, and what the user is told."""

    reason: AgentEndReason
    message: str | None = None
    status: ErrorStatus = "INTERNAL"
    code: str | None = None
    data: dict[str, Any] | None = None


MAX_CALLS_STOP = StopRequest(
    reason="max_turns",
    message="Stopped: this prompt reached the limit of model calls per prompt.",
    code="MAX_TURNS_EXCEEDED",
)


def model_failure(exc: BaseException) -> ModelFailure | None:
    """The model failure `exc` stands for, or None when it is not one."""
    if isinstance(exc, ModelError):
        status: ErrorStatus = next(
            (known for known in HTTP_TO_STATUS.values() if known == exc.status), "INTERNAL"
        )
        return ModelFailure(status=status, code=exc.code, model=exc.model)
    code = getattr(exc, "code", None)
    if isinstance(code, int) and code in HTTP_TO_STATUS:
        return ModelFailure(status=HTTP_TO_STATUS[code], http_status=code)
    return None


def failure_meta(failure: ModelFailure) -> dict[str, Any] | None:
    """The failure's facts in an error event's `meta` (code, model, httpStatus)."""
    meta: dict[str, Any] = {"code": failure.code} if failure.code else {}
    if failure.model:
        meta["model"] = failure.model
    if failure.http_status is not None:
        meta["httpStatus"] = failure.http_status
    return meta or None


def error_event(event_id: str, stream_id: str, exc: BaseException) -> ErrorEvent:
    """The fatal error event of a stream that failed with `exc`."""
    failure = model_failure(exc)
    if failure is None:
        # the traceback is for a developer (`--log-level DEBUG`); the user gets one line
        debug = logger.isEnabledFor(logging.DEBUG)
        logger.error(
            "stream failed: %s: %s", type(exc).__name__, exc, exc_info=exc if debug else None
        )
        message = f"{type(exc).__name__}: {exc}"
    elif failure.http_status is not None:
        detail = getattr(exc, "message", None) or str(exc)
        message = f"The model request failed ({failure.http_status}): {detail}"
    else:
        message = str(exc)
    return ErrorEvent(
        id=event_id,
        stream_id=stream_id,
        status=failure.status if failure else "INTERNAL",
        message=message,
        fatal=True,
        meta=failure_meta(failure) if failure else None,
        failure=failure,
    )


@dataclass
class StreamEnd:
    """What the stream ends with, gathered as it runs; `events` closes it."""

    stream_id: str
    ids: Callable[[], str]
    reason: AgentEndReason = "completed"
    data: dict[str, Any] | None = None

    def failed(
        self, exc: Exception, stop: StopRequest | None
    ) -> tuple[ErrorEvent | None, StopRequest | None]:
        """An exception ended the stream: its error event, or the stop it stands for
        (ADK's model-call limit is the max-turns stop)."""
        if isinstance(exc, InvalidStreamError):  # told, the turn ends without a JSON-RPC error
            self.reason = exc.end_reason
            self.data = {"code": "INVALID_STREAM", "errorType": exc.kind}
            if exc.finish:
                self.data["finishReason"] = exc.finish
            event = ErrorEvent(
                id=self.ids(),
                stream_id=self.stream_id,
                status="INTERNAL",
                message=exc.user_message,
                fatal=False,
                meta=dict(self.data),
            )
            return event, stop
        if isinstance(exc, LlmCallsLimitExceededError) and stop is None:
            return None, MAX_CALLS_STOP
        self.reason = "failed"
        return error_event(self.ids(), self.stream_id, exc), stop

    def closing(self, stop: StopRequest | None) -> list[AgentEvent]:
        """The stop's message (if any) and `agent_end`."""
        out: list[AgentEvent] = []
        if stop is not None:
            self.reason = stop.reason
            self.data = {**(self.data or {}), **(stop.data or {})}
            if stop.code:
                self.data["code"] = stop.code
            if stop.message:
                out.append(
                    ErrorEvent(
                        id=self.ids(),
                        stream_id=self.stream_id,
                        status=stop.status,
                        message=stop.message,
                        fatal=False,
                        meta={"code": stop.code} if stop.code else None,
                    )
                )
        out.append(
            AgentEndEvent(
                id=self.ids(), stream_id=self.stream_id, reason=self.reason, data=self.data or None
            )
        )
        return out
