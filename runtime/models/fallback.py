"""What to do when a model has failed for good: switch models, ask the user, or stop.

Port of Gemini CLI's `handleFallback` (`docs/gemini-cli-behaviours.md#fallback`).
`handle_fallback` decides and applies the availability transition of the
failed model; the caller applies the rest of the decision (session model,
availability reset, sequence model) because it owns the session:

- `retry_always`: set the session's model to `decision.model`, call
  `availability.reset()` and `SequenceModel.on_model_change()`, retry.
- `retry_once` / `retry_with_credits`: retry this request with `decision.model`
  (the availability marks steer later selection), session model unchanged.
- `stop` / `retry_later` / `upgrade`: do not retry; raise the error
  (`upgrade`: also show the upgrade hint).

`persistent_quota_handler(...)` builds the retry loop's `on_persistent_429`
from these pieces: it decides, hands the decision to the caller to apply, and
answers `decision.retry` (False when there is no decision).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import get_args

from runtime.errors import ModelError
from runtime.host import FallbackChoice, FallbackIntent
from runtime.models.availability import ModelAvailabilityService
from runtime.models.policy_catalog import ModelPolicy, resolve_model, resolve_policy_chain
from runtime.models.quota_errors import (
    FailureKind,
    QuotaError,
    TerminalQuotaError,
    classify_error,
    failure_kind,
)

logger = logging.getLogger(__name__)

AskFallback = Callable[[FallbackChoice], Awaitable[FallbackIntent]]

RETRY_INTENTS: frozenset[FallbackIntent] = frozenset(
    {"retry_always", "retry_once", "retry_with_credits"}
)
_KNOWN_INTENTS = frozenset(get_args(FallbackIntent))


@dataclass(frozen=True)
class FallbackDecision:
    """The outcome of a fallback: the user's (or the policy's) `intent` and the model to use.

    `model` is the fallback model (for retries, the model of the next attempt);
    `silent` is True when nobody was asked; `message` is a sentence for the user
    (for silent switches it says what happened: "Switched to gemini-2.5-flash:
    gemini-2.5-pro is out of daily quota (…)").
    """

    intent: FallbackIntent
    model: str
    failed_model: str
    failure_kind: FailureKind
    silent: bool
    message: str

    @property
    def retry(self) -> bool:
        """True when the request should be retried (with `model`)."""
        return self.intent in RETRY_INTENTS

    @property
    def switch_session_model(self) -> bool:
        """True for `retry_always`: the session's model becomes `model`; reset availability."""
        return self.intent == "retry_always"


def _reason(error: BaseException, failed_model: str) -> str:
    if isinstance(error, ModelError):
        return str(error)
    return f"{failed_model} failed: {error}"


def apply_availability_transition(
    availability: ModelAvailabilityService,
    policy: ModelPolicy,
    kind: FailureKind,
    error: BaseException,
) -> None:
    """Mark the failed model per its policy: terminal (quota or capacity) or sticky_retry."""
    if policy.transition_for(kind) == "sticky_retry":
        availability.mark_retry_once_per_turn(policy.model)
        return
    is_quota = kind == "terminal" and not (
        isinstance(error, TerminalQuotaError) and error.is_capacity
    )
    availability.mark_terminal(policy.model, "quota" if is_quota else "capacity")


def _choice(failed: str, fallback: str, kind: FailureKind, error: BaseException) -> FallbackChoice:
    quota = error.quota_id if isinstance(error, QuotaError) else None
    reset = error.retry_delay_seconds if isinstance(error, QuotaError) else None
    return FallbackChoice(
        failed_model=failed,
        fallback_model=fallback,
        failure_kind=kind,
        message=_reason(error, failed),
        quota=quota,
        reset_after_seconds=reset,
    )


def _message(intent: FallbackIntent, fallback: str, reason: str) -> str:
    if intent == "retry_always":
        return f"Switched to {fallback}: {reason}"
    if intent in RETRY_INTENTS:
        return f"Retrying this request with {fallback}: {reason}"
    return reason


async def handle_fallback(
    *,
    failed_model: str,
    error: BaseException,
    active_model: str,
    availability: ModelAvailabilityService,
    chain: Sequence[ModelPolicy],
    ask: AskFallback | None,
) -> FallbackDecision | None:
    """Decide the fallback after `failed_model` failed with `error`.

    `chain` comes from `resolve_policy_chain(active_model, ...)`; `ask` is the
    editor's choice (e.g. `host.choose_fallback`). Returns None to stop: no
    fallback model, no `ask` for a non-silent case, or `ask` raised. Otherwise a
    decision; `decision.retry` says whether to retry. Applies the availability
    transition of the failed model for silent switches and for asked retries.
    """
    classified = classify_error(error, model=failed_model)
    kind = failure_kind(classified)
    reason = _reason(classified, failed_model)
    active = resolve_model(active_model)

    index = next((i for i, p in enumerate(chain) if p.model == failed_model), None)
    failed_policy = chain[index] if index is not None else ModelPolicy(failed_model)
    candidates = list(chain[index + 1 :]) if index is not None else list(chain)

    def decided(intent: FallbackIntent, model: str, silent: bool) -> FallbackDecision:
        if intent in ("retry_always", "retry_once"):
            apply_availability_transition(availability, failed_policy, kind, classified)
        return FallbackDecision(
            intent, model, failed_model, kind, silent, _message(intent, model, reason)
        )

    if not candidates:
        if active != failed_model and availability.is_available(active):
            logger.info("retrying with the active model %s after %s failed", active, failed_model)
            return decided("retry_once", active, True)
        fallback: str | None = failed_model
    else:
        selection = availability.select_first_available(p.model for p in candidates)
        last_resort = next((p.model for p in candidates if p.is_last_resort), None)
        fallback = selection.selected_model or last_resort

    if fallback is None or fallback == failed_model:
        logger.info("no fallback for %s (%s)", failed_model, kind)
        return None
    if failed_policy.action_for(kind) == "silent" or active == fallback:
        logger.info("silently switching from %s to %s (%s)", failed_model, fallback, kind)
        return decided("retry_always", fallback, True)
    intent = await _asked(ask, _choice(failed_model, fallback, kind, classified))
    return None if intent is None else decided(intent, fallback, False)


async def _asked(ask: AskFallback | None, choice: FallbackChoice) -> FallbackIntent | None:
    """The user's choice; None when nobody can be asked or the answer is unusable."""
    if ask is None:
        return None
    try:
        intent = await ask(choice)
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.error("the fallback handler failed", exc_info=True)
        return None
    if intent not in _KNOWN_INTENTS:
        logger.error("unexpected fallback intent %r", intent)
        return None
    return intent


def persistent_quota_handler(
    *,
    failed_model: Callable[[], str],
    active_model: Callable[[], str],
    availability: ModelAvailabilityService,
    ask: AskFallback | None,
    apply: Callable[[FallbackDecision], Awaitable[None]],
    approval_mode: Callable[[], str] = lambda: "default",
    auto_routing: Callable[[], bool] = lambda: False,
    fallback_models: Callable[[], Sequence[str]] = lambda: (),
) -> Callable[[BaseException], Awaitable[bool]]:
    """An `on_persistent_429` for `retry_with_backoff`.

    `failed_model()` is the model of the attempt that failed, `active_model()`
    the session's model setting (both read when the error happens). The chain
    is resolved from the active model. `apply(decision)` is awaited with every
    decision (switch the session model for `retry_always`, tell the user the
    `message`, point the next attempt at `decision.model`). Returns True when
    the call should be retried.
    """

    async def on_persistent_429(error: BaseException) -> bool:
        active = active_model()
        chain = resolve_policy_chain(
            active,
            approval_mode=approval_mode(),
            auto_routing=auto_routing(),
            fallback_models=fallback_models(),
        )
        decision = await handle_fallback(
            failed_model=failed_model(),
            error=error,
            active_model=active,
            availability=availability,
            chain=chain,
            ask=ask,
        )
        if decision is None:
            return False
        await apply(decision)
        return decision.retry

    return on_persistent_429
