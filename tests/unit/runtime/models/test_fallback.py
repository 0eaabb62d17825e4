"""handle_fallback: each branch of the decision, with the availability transitions."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import errors

from runtime.host import FallbackChoice, FallbackIntent
from runtime.models.availability import ModelAvailabilityService, StickyRetryState
from runtime.models.catalog import GEMINI_FLASH, GEMINI_FLASH_LITE, GEMINI_PRO
from runtime.models.fallback import FallbackDecision, handle_fallback, persistent_quota_handler
from runtime.models.policy_catalog import resolve_policy_chain
from runtime.models.retry import retry_with_backoff
from tests.fakes.gemini_errors import (
    capacity_body,
    google_error_body,
    not_found_body,
    per_day_quota_body,
    per_minute_quota_body,
)


def daily(model: str = GEMINI_PRO) -> errors.APIError:
    return errors.ClientError(429, per_day_quota_body(model))


def rate_limit(model: str = GEMINI_PRO) -> errors.APIError:
    return errors.ClientError(429, per_minute_quota_body(model, retry="12s"))


class Asker:
    def __init__(self, answer: FallbackIntent | BaseException) -> None:
        self.answer = answer
        self.choices: list[FallbackChoice] = []

    async def __call__(self, choice: FallbackChoice) -> FallbackIntent:
        self.choices.append(choice)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


async def decide(
    availability: ModelAvailabilityService,
    *,
    failed: str = GEMINI_PRO,
    active: str = GEMINI_PRO,
    error: BaseException | None = None,
    ask: Any = None,
    **chain_kwargs: Any,
) -> FallbackDecision | None:
    return await handle_fallback(
        failed_model=failed,
        error=error if error is not None else daily(failed),
        active_model=active,
        availability=availability,
        chain=resolve_policy_chain(active, **chain_kwargs),
        ask=ask,
    )


@pytest.fixture
def availability() -> ModelAvailabilityService:
    return ModelAvailabilityService(clock=lambda: 0.0)


# -------------------------------------------------------------------- ask paths


@pytest.mark.parametrize(
    ("intent", "retry", "switch"),
    [
        ("retry_always", True, True),
        ("retry_once", True, False),
        ("retry_with_credits", True, False),
        ("stop", False, False),
        ("retry_later", False, False),
        ("upgrade", False, False),
    ],
)
async def test_ask_each_intent(
    availability: ModelAvailabilityService, intent: FallbackIntent, retry: bool, switch: bool
) -> None:
    ask = Asker(intent)
    decision = await decide(availability, ask=ask)
    assert decision is not None
    assert decision.intent == intent
    assert decision.model == GEMINI_FLASH
    assert decision.failed_model == GEMINI_PRO
    assert decision.retry is retry
    assert decision.switch_session_model is switch
    assert not decision.silent
    # the failed model is marked only when the user chose to switch
    marked = intent in ("retry_always", "retry_once")
    assert availability.is_available(GEMINI_PRO) is not marked


async def test_ask_gets_a_full_choice(availability: ModelAvailabilityService) -> None:
    ask = Asker("stop")
    await decide(availability, ask=ask)
    (choice,) = ask.choices
    assert choice.failed_model == GEMINI_PRO
    assert choice.fallback_model == GEMINI_FLASH
    assert choice.failure_kind == "terminal"
    assert choice.quota == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    assert choice.message.startswith("gemini-2.5-pro is out of daily quota")


async def test_ask_for_a_rate_limit_carries_the_reset_time(
    availability: ModelAvailabilityService,
) -> None:
    ask = Asker("retry_once")
    decision = await decide(availability, ask=ask, error=rate_limit())
    assert ask.choices[0].failure_kind == "transient"
    assert ask.choices[0].reset_after_seconds == 12
    assert decision is not None
    assert decision.message.startswith("Retrying this request with gemini-2.5-flash: ")


async def test_retry_always_via_ask_marks_quota_terminal(
    availability: ModelAvailabilityService,
) -> None:
    decision = await decide(availability, ask=Asker("retry_always"))
    assert decision is not None
    assert decision.message == (
        "Switched to gemini-2.5-flash: gemini-2.5-pro is out of daily quota "
        "(GenerateRequestsPerDayPerProjectPerModel-FreeTier)."
    )
    assert availability.snapshot(GEMINI_PRO).reason == "quota"


async def test_no_ask_handler_returns_none(availability: ModelAvailabilityService) -> None:
    assert await decide(availability, ask=None) is None
    assert availability.is_available(GEMINI_PRO)


async def test_ask_raising_returns_none(availability: ModelAvailabilityService) -> None:
    assert await decide(availability, ask=Asker(RuntimeError("editor gone"))) is None


async def test_unknown_intent_returns_none(availability: ModelAvailabilityService) -> None:
    assert await decide(availability, ask=Asker("maybe")) is None  # type: ignore[arg-type]


# ------------------------------------------------------------------ silent paths


async def test_silent_lite_chain_switches_without_asking(
    availability: ModelAvailabilityService,
) -> None:
    ask = Asker("stop")
    decision = await decide(
        availability, failed=GEMINI_FLASH_LITE, active=GEMINI_FLASH_LITE, ask=ask
    )
    assert decision is not None
    assert (decision.intent, decision.model, decision.silent) == (
        "retry_always",
        GEMINI_FLASH,
        True,
    )
    assert decision.message.startswith("Switched to gemini-2.5-flash: gemini-2.5-flash-lite is")
    assert ask.choices == []
    assert availability.snapshot(GEMINI_FLASH_LITE).reason == "quota"


async def test_plan_mode_is_silent(availability: ModelAvailabilityService) -> None:
    decision = await decide(availability, approval_mode="plan", ask=Asker("stop"))
    assert decision is not None and decision.silent and decision.intent == "retry_always"


async def test_fallback_already_active_is_silent(availability: ModelAvailabilityService) -> None:
    """A routed call on pro failed while the session's active model is already flash."""
    chain = resolve_policy_chain(GEMINI_PRO)
    decision = await handle_fallback(
        failed_model=GEMINI_PRO,
        error=daily(),
        active_model=GEMINI_FLASH,
        availability=availability,
        chain=chain,
        ask=Asker("stop"),
    )
    assert decision is not None and decision.silent
    assert decision.intent == "retry_always" and decision.model == GEMINI_FLASH


async def test_capacity_is_marked_as_capacity(availability: ModelAvailabilityService) -> None:
    error = errors.ClientError(429, capacity_body(GEMINI_PRO))
    await decide(availability, error=error, approval_mode="plan")
    assert availability.snapshot(GEMINI_PRO).reason == "capacity"


async def test_auto_routing_transient_is_silent_and_sticky(
    availability: ModelAvailabilityService,
) -> None:
    decision = await decide(availability, active="auto", error=rate_limit(), ask=Asker("stop"))
    assert decision is not None and decision.silent and decision.model == GEMINI_FLASH
    assert availability.state(GEMINI_PRO) == StickyRetryState(consumed=False, attempts=1)


async def test_unknown_failure_in_plan_marks_capacity(
    availability: ModelAvailabilityService,
) -> None:
    error = errors.ServerError(500, google_error_body(500, None, "boom"))
    decision = await decide(availability, error=error, approval_mode="plan")
    assert decision is not None and decision.failure_kind == "unknown"
    assert availability.snapshot(GEMINI_PRO).reason == "capacity"


# --------------------------------------------------------------------- no target


async def test_candidate_unavailable_uses_the_last_resort(
    availability: ModelAvailabilityService,
) -> None:
    availability.mark_terminal(GEMINI_FLASH, "quota")
    decision = await decide(availability, ask=Asker("retry_once"))
    assert decision is not None and decision.model == GEMINI_FLASH


async def test_last_in_chain_with_nothing_else_stops(
    availability: ModelAvailabilityService,
) -> None:
    decision = await decide(
        availability,
        failed=GEMINI_FLASH,
        active=GEMINI_FLASH,
        ask=Asker("retry_always"),
        wrap_around=False,
    )
    assert decision is None


async def test_single_model_chain_stops(availability: ModelAvailabilityService) -> None:
    error = errors.ClientError(404, not_found_body("my-model"))
    decision = await decide(
        availability, failed="my-model", active="my-model", error=error, ask=Asker("retry_always")
    )
    assert decision is None


async def test_no_candidates_retries_on_a_different_available_active_model(
    availability: ModelAvailabilityService,
) -> None:
    """The router sent this call to flash (last of the chain) while the session is on pro."""
    decision = await handle_fallback(
        failed_model=GEMINI_FLASH,
        error=daily(GEMINI_FLASH),
        active_model=GEMINI_PRO,
        availability=availability,
        chain=resolve_policy_chain(GEMINI_PRO, wrap_around=False),
        ask=Asker("stop"),
    )
    assert decision is not None
    assert (decision.intent, decision.model, decision.silent) == ("retry_once", GEMINI_PRO, True)
    assert not availability.is_available(GEMINI_FLASH)


async def test_no_candidates_and_active_unavailable_stops(
    availability: ModelAvailabilityService,
) -> None:
    availability.mark_terminal(GEMINI_PRO, "quota")
    decision = await handle_fallback(
        failed_model=GEMINI_FLASH,
        error=daily(GEMINI_FLASH),
        active_model=GEMINI_PRO,
        availability=availability,
        chain=resolve_policy_chain(GEMINI_PRO, wrap_around=False),
        ask=Asker("retry_always"),
    )
    assert decision is None


async def test_failed_model_outside_the_chain_considers_the_whole_chain(
    availability: ModelAvailabilityService,
) -> None:
    decision = await handle_fallback(
        failed_model="other-model",
        error=daily("other-model"),
        active_model=GEMINI_PRO,
        availability=availability,
        chain=resolve_policy_chain(GEMINI_PRO),
        ask=Asker("retry_once"),
    )
    assert decision is not None and decision.model == GEMINI_PRO


# ------------------------------------------------------ the retry-loop adapter


async def test_persistent_quota_handler_drives_the_retry_loop(
    availability: ModelAvailabilityService,
) -> None:
    """The retry loop, the fallback and the caller's session state working together."""
    session = {"model": GEMINI_PRO}
    applied: list[FallbackDecision] = []
    tried: list[str] = []

    async def apply(decision: FallbackDecision) -> None:
        applied.append(decision)
        if decision.switch_session_model:
            session["model"] = decision.model
            availability.reset()

    async def call() -> str:
        tried.append(session["model"])
        if session["model"] == GEMINI_PRO:
            raise daily()
        return "answer"

    async def no_sleep(_seconds: float) -> None:
        return None

    handler = persistent_quota_handler(
        failed_model=lambda: session["model"],
        active_model=lambda: session["model"],
        availability=availability,
        ask=Asker("retry_always"),
        apply=apply,
    )
    result = await retry_with_backoff(call, on_persistent_429=handler, sleep=no_sleep)
    assert result == "answer"
    assert tried == [GEMINI_PRO, GEMINI_FLASH]
    assert [d.intent for d in applied] == ["retry_always"]


async def test_persistent_quota_handler_declines_without_decision(
    availability: ModelAvailabilityService,
) -> None:
    async def apply(_decision: FallbackDecision) -> None:
        raise AssertionError("no decision to apply")

    handler = persistent_quota_handler(
        failed_model=lambda: GEMINI_PRO,
        active_model=lambda: GEMINI_PRO,
        availability=availability,
        ask=None,
        apply=apply,
    )
    assert await handler(daily()) is False


async def test_persistent_quota_handler_stop_is_applied_and_declined(
    availability: ModelAvailabilityService,
) -> None:
    applied: list[FallbackDecision] = []

    async def apply(decision: FallbackDecision) -> None:
        applied.append(decision)

    handler = persistent_quota_handler(
        failed_model=lambda: GEMINI_PRO,
        active_model=lambda: GEMINI_PRO,
        availability=availability,
        ask=Asker("upgrade"),
        apply=apply,
    )
    assert await handler(daily()) is False
    assert [d.intent for d in applied] == ["upgrade"]
