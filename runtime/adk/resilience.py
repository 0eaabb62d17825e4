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
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from runtime.adk.model import Attempt, ModelResilience, notice_response
from runtime.adk.stream_check import NUDGES, InvalidStreamError
from runtime.errors import ModelError
from runtime.models.fallback import FallbackDecision, persistent_quota_handler
from runtime.models.policy_catalog import resolve_model
from runtime.models.retry import (
    MID_STREAM_RETRY,
    RetryNotice,
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
        self, state: ModelState, *, sleep: Callable[[float], Awaitable[None]] | None = None
    ) -> None:
        self.state = state
        scale = _delay_scale()
        self._sleep = sleep or (lambda seconds: asyncio.sleep(seconds * scale))

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
                text = f"The model's answer was interrupted ({describe_error(exc)}). Retrying…"
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
        )
        kwargs: dict[str, Any] = {"max_attempts": state.max_attempts} if state.max_attempts else {}
        return await retry_with_backoff(
            call,
            on_persistent_429=handler,
            on_retry=self._on_retry,
            current_model=lambda: request.model,
            sleep=self._sleep,
            abort_event=state.abort_event(),
            **kwargs,
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

    def _on_retry(self, notice: RetryNotice) -> None:
        logger.info("retrying the model call in %.0f ms (%s)", notice.delay_ms, notice.kind)

    def _notice(self, text: str) -> None:
        if self.state.notice is not None:
            self.state.notice(text)
