"""The model side of one session: routing state, availability, and the retry + fallback loop.

`ModelState` (runtime.models.state) holds what the design keeps on Config; `GcliResilience` is
the retry loop that `GcliAgentModel` runs every model call through
(design: "429 fallback"): the call is retried with backoff; on a persistent
quota error `handle_fallback` decides (silently, or by asking the editor through
`Host.choose_fallback`), and the next attempt re-reads the request's model, so
a fallback never dispatches with the old model's settings. Nothing is thrown to
the ADK Runner for retry.

A stream that fails after it started is retried too (up to 4 attempts, 1 s ×
2^n apart); the user is told, since its first part was already shown. The
notice travels in the response stream (`notice_response`), so it reaches the
editor after that part, not before it.

Every retry before a stream starts is told too (issue 34.5): which model and
endpoint, what failed, attempt n of m and the next try (`runtime.models.failures`);
a call that could not reach the model at all ends in one `ModelError` saying so.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from runtime.adk.model import Attempt, ModelResilience, notice_response
from runtime.adk.stream_check import NUDGES, InvalidStreamError
from runtime.errors import ModelError
from runtime.models.failures import gave_up_line, retry_line, seconds_phrase, what_failed
from runtime.models.fallback import FallbackDecision, persistent_quota_handler
from runtime.models.google_errors import get_http_status
from runtime.models.policy_catalog import resolve_model
from runtime.models.retry import (
    DEFAULT_MAX_ATTEMPTS,
    MID_STREAM_RETRY,
    RetryNotice,
    is_network_error,
    is_retryable_error,
    retry_with_backoff,
)
from runtime.models.state import ModelState

logger = logging.getLogger(__name__)

DELAY_SCALE_ENV = "ADK_ACP_RETRY_DELAY_SCALE"


def _delay_scale() -> float:
    try:
        return max(0.0, float(os.environ.get(DELAY_SCALE_ENV, "1")))
    except ValueError:
        return 1.0


def describe_error(exc: BaseException) -> str:
    """An error as a short phrase that never comes out empty (a dropped connection's
    exception often has no message)."""
    text = str(exc).strip()
    name = type(exc).__name__
    if not text:
        cause = exc.__cause__ or exc.__context__
        return f"{name}: {describe_error(cause)}" if cause is not None else name
    return text if name in text else f"{name}: {text}"


def nudge(request: LlmRequest, kind: str) -> None:
    """The retry after an empty or thought-only answer asks the model for an answer
    in its system instruction (Gemini CLI's on-retry nudge); the request is this
    call's own."""
    extra = NUDGES.get(kind)
    if extra is None:
        return
    current = request.config.system_instruction
    if current is None or isinstance(current, str):
        instruction: Any = (current or "") + extra
    elif isinstance(current, types.Content):
        instruction = current.model_copy(
            update={"parts": [*(current.parts or []), types.Part(text=extra)]}
        )
    else:
        logger.debug("system instruction of type %s left as is", type(current).__name__)
        return
    request.config = request.config.model_copy(update={"system_instruction": instruction})


class GcliResilience(ModelResilience):
    """retryWithBackoff + handleFallback around each model call."""

    def __init__(
        self,
        state: ModelState,
        *,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        endpoint: Callable[[str], str] = lambda _model: "",
    ) -> None:
        self.state = state
        self._scale = 1.0 if sleep is not None else _delay_scale()
        scale = self._scale
        self._sleep = sleep or (lambda seconds: asyncio.sleep(seconds * scale))
        self._endpoint = endpoint
        self._model = ""

    async def run(self, request: LlmRequest, attempt: Attempt) -> AsyncGenerator[LlmResponse, None]:
        retries_mid_stream = 0
        while True:
            agen: AsyncGenerator[LlmResponse, None] | None = None
            yielded = False
            unusable: str | None = None
            try:
                agen, first = await self._start(request, attempt)
                yielded = first is not None
                if first is not None:
                    yield first
                async for response in agen:
                    yielded = True
                    yield response
                self.state.availability.mark_healthy(request.model or "")
                return
            except InvalidStreamError as exc:
                # Gemini CLI retries an unusable answer within the mid-stream budget
                if not exc.retry or retries_mid_stream + 1 >= MID_STREAM_RETRY.max_attempts:
                    raise
                logger.warning("the model's answer %s; retrying", exc.problem)
                text = f"The model's answer {exc.problem}. Retrying…"
                unusable = exc.kind
            except Exception as exc:  # noqa: BLE001 - decide below whether to retry
                if not (yielded and is_retryable_error(exc)):
                    raise
                if retries_mid_stream + 1 >= MID_STREAM_RETRY.max_attempts:
                    model = request.model or self.state.default_model
                    raise ModelError(
                        f"The answer of {model} broke off {MID_STREAM_RETRY.max_attempts} times "
                        f"in a row ({describe_error(exc)}); gave up. Please try again.",
                        status="UNAVAILABLE",
                        code="STREAM_INTERRUPTED",
                        model=model,
                    ) from exc
                logger.warning("the model stream broke (%s); retrying", describe_error(exc))
                delay_s = MID_STREAM_RETRY.delay_ms(retries_mid_stream) / 1000 * self._scale
                text = (
                    f"The model's answer was interrupted ({what_failed(exc)}). Retrying… "
                    f"(attempt {retries_mid_stream + 2} of {MID_STREAM_RETRY.max_attempts}, "
                    f"in {seconds_phrase(delay_s)})"
                )
            finally:
                if agen is not None:
                    await agen.aclose()
            delay = MID_STREAM_RETRY.delay_ms(retries_mid_stream)
            retries_mid_stream += 1
            # in the stream, so the user sees it after the part that was shown
            yield notice_response(f"\n\n_({text})_\n\n")
            await self._sleep(delay / 1000)
            if unusable is not None:
                nudge(request, unusable)

    async def _start(
        self, request: LlmRequest, attempt: Attempt
    ) -> tuple[AsyncGenerator[LlmResponse, None], LlmResponse | None]:
        """Open the stream and read its first response, with retry and fallback."""

        async def call() -> tuple[AsyncGenerator[LlmResponse, None], LlmResponse | None]:
            agen = attempt(request.model or self.state.default_model)
            try:
                first = await agen.__anext__()
            except StopAsyncIteration:
                return agen, None
            except BaseException:
                await agen.aclose()
                raise
            return agen, first

        state = self.state
        handler = persistent_quota_handler(
            failed_model=lambda: request.model or state.default_model,
            active_model=lambda: (
                resolve_model(state.choice) if not state.auto_routing else state.choice
            ),
            availability=state.availability,
            ask=state.ask,
            apply=lambda decision: self._apply(request, decision),
            approval_mode=state.mode,
            auto_routing=lambda: state.auto_routing,
            fallback_models=lambda: state.fallback_models,
        )
        attempts = state.max_attempts or DEFAULT_MAX_ATTEMPTS
        calls = 0

        async def counted() -> tuple[AsyncGenerator[LlmResponse, None], LlmResponse | None]:
            nonlocal calls
            calls += 1
            self._model = request.model or state.default_model
            return await call()

        started = time.monotonic()
        try:
            return await retry_with_backoff(
                counted,
                on_persistent_429=handler,
                on_retry=lambda notice: self._on_retry(notice, attempts),
                current_model=lambda: request.model,
                sleep=self._sleep,
                abort_event=state.abort_event(),
                max_attempts=attempts,
            )
        except ModelError:
            raise
        except Exception as exc:
            if calls > 1 or (get_http_status(exc) is None and is_network_error(exc)):
                raise self._gave_up(exc, calls, time.monotonic() - started) from exc
            raise

    def _gave_up(self, exc: Exception, calls: int, waited_s: float) -> ModelError:
        """The one error of a call whose attempts ran out (or that reached nothing)."""
        from runtime.adk.translator import HTTP_TO_STATUS

        model = self._model or self.state.default_model
        status = get_http_status(exc)
        message = gave_up_line(model, self._endpoint(model), exc, calls, waited_s)
        logger.info("%s", message)
        logger.debug("the last attempt's error", exc_info=exc)  # the traceback, at DEBUG
        if status is None:
            return ModelError(message, status="UNAVAILABLE", code="MODEL_UNREACHABLE", model=model)
        return ModelError(
            message, status=HTTP_TO_STATUS.get(status, "INTERNAL"), model=model, http_status=status
        )

    async def _apply(self, request: LlmRequest, decision: FallbackDecision) -> None:
        state = self.state
        if decision.intent == "retry_always":
            state.choose(decision.model)
            state.sequence.set(decision.model)
            if state.on_choice_changed is not None:
                state.on_choice_changed(decision.model)
        if decision.intent == "retry_once" and not decision.silent:
            state.switched_once.add(decision.failed_model)
        if decision.retry:
            request.model = decision.model
            if state.on_model_announced is not None:
                state.on_model_announced(decision.model)
        if decision.silent and decision.message:
            self._notice(f"\n\n_{decision.message}_\n\n")

    def _on_retry(self, notice: RetryNotice, attempts: int) -> None:
        """Every retry is told: in the editor a notice, with `-p` a line on stderr."""
        logger.info("retrying the model call in %.0f ms (%s)", notice.delay_ms, notice.kind)
        delay_s = notice.delay_ms / 1000 * self._scale
        model = self._model or self.state.default_model
        endpoint = self._endpoint(model)
        if notice.kind == "capacity":
            where = f"{model} at {endpoint}" if endpoint else model
            text = f"{where} is at capacity; next try in {seconds_phrase(delay_s)}."
        else:
            text = retry_line(model, endpoint, notice.error, notice.attempt, attempts, delay_s)
        self._notice(text)

    def _notice(self, text: str) -> None:
        if self.state.notice is not None:
            self.state.notice(text)
