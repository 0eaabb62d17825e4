"""ModelAvailabilityService transitions and the policy chains."""

from __future__ import annotations

import pytest

from runtime.models.availability import (
    CAPACITY_RECOVERY_MS,
    ModelAvailabilityService,
    StickyRetryState,
    TerminalState,
)
from runtime.models.catalog import (
    GEMINI_FLASH,
    GEMINI_FLASH_LITE,
    GEMINI_PRO,
    PREVIEW_FLASH,
    PREVIEW_PRO,
)
from runtime.models.policy_catalog import (
    AUTO_ROUTING_MAX_ATTEMPTS,
    resolve_model,
    resolve_policy_chain,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service(clock: FakeClock) -> ModelAvailabilityService:
    return ModelAvailabilityService(clock=clock)


# ------------------------------------------------------------------ availability


def test_unknown_models_are_available(service: ModelAvailabilityService) -> None:
    assert service.is_available("anything")
    assert service.state("anything") is None


def test_quota_terminal_stays(service: ModelAvailabilityService, clock: FakeClock) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    clock.advance_ms(10 * CAPACITY_RECOVERY_MS)
    snap = service.snapshot(GEMINI_PRO)
    assert not snap.available and snap.reason == "quota"


def test_capacity_terminal_clears_after_30s(
    service: ModelAvailabilityService, clock: FakeClock
) -> None:
    service.mark_terminal(GEMINI_PRO, "capacity")
    clock.advance_ms(29_999)
    assert service.snapshot(GEMINI_PRO).reason == "capacity"
    clock.advance_ms(1)
    assert service.is_available(GEMINI_PRO)
    assert service.state(GEMINI_PRO) is None


def test_mark_healthy_clears(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    service.mark_healthy(GEMINI_PRO)
    assert service.is_available(GEMINI_PRO)


def test_sticky_retry_available_until_consumed(service: ModelAvailabilityService) -> None:
    service.mark_retry_once_per_turn(GEMINI_PRO)
    assert service.state(GEMINI_PRO) == StickyRetryState(consumed=False, attempts=1)
    assert service.is_available(GEMINI_PRO)
    service.consume_sticky_attempt(GEMINI_PRO)
    snap = service.snapshot(GEMINI_PRO)
    assert not snap.available and snap.reason == "retry_once_per_turn"
    service.reset_turn()
    assert service.is_available(GEMINI_PRO)


def test_sticky_never_overrides_terminal(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    service.mark_retry_once_per_turn(GEMINI_PRO)
    assert isinstance(service.state(GEMINI_PRO), TerminalState)


def test_sticky_remark_keeps_consumed(service: ModelAvailabilityService) -> None:
    service.mark_retry_once_per_turn(GEMINI_PRO)
    service.consume_sticky_attempt(GEMINI_PRO)
    service.mark_retry_once_per_turn(GEMINI_PRO, attempts=2)
    assert service.state(GEMINI_PRO) == StickyRetryState(consumed=True, attempts=2)


def test_sticky_after_expired_capacity(service: ModelAvailabilityService, clock: FakeClock) -> None:
    service.mark_terminal(GEMINI_PRO, "capacity")
    clock.advance_ms(CAPACITY_RECOVERY_MS)
    service.mark_retry_once_per_turn(GEMINI_PRO)
    assert isinstance(service.state(GEMINI_PRO), StickyRetryState)


def test_consume_on_healthy_or_terminal_is_a_no_op(service: ModelAvailabilityService) -> None:
    service.consume_sticky_attempt(GEMINI_PRO)
    assert service.state(GEMINI_PRO) is None
    service.mark_terminal(GEMINI_FLASH, "quota")
    service.consume_sticky_attempt(GEMINI_FLASH)
    assert isinstance(service.state(GEMINI_FLASH), TerminalState)


def test_select_first_available(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    service.mark_retry_once_per_turn(GEMINI_FLASH)
    service.consume_sticky_attempt(GEMINI_FLASH)
    result = service.select_first_available([GEMINI_PRO, GEMINI_FLASH, GEMINI_FLASH_LITE])
    assert result.selected_model == GEMINI_FLASH_LITE
    assert result.attempts is None
    assert result.skipped == ((GEMINI_PRO, "quota"), (GEMINI_FLASH, "retry_once_per_turn"))


def test_select_sticky_reports_attempts(service: ModelAvailabilityService) -> None:
    service.mark_retry_once_per_turn(GEMINI_PRO)
    result = service.select_first_available([GEMINI_PRO, GEMINI_FLASH])
    assert result.selected_model == GEMINI_PRO and result.attempts == 1
    assert result.skipped == ()


def test_select_none_available(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    result = service.select_first_available([GEMINI_PRO])
    assert result.selected_model is None
    assert result.skipped == ((GEMINI_PRO, "quota"),)


def test_reset_turn_keeps_terminal(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    service.reset_turn()
    assert not service.is_available(GEMINI_PRO)


def test_reset_clears_everything(service: ModelAvailabilityService) -> None:
    service.mark_terminal(GEMINI_PRO, "quota")
    service.mark_retry_once_per_turn(GEMINI_FLASH)
    service.consume_sticky_attempt(GEMINI_FLASH)
    service.reset()
    assert service.is_available(GEMINI_PRO) and service.is_available(GEMINI_FLASH)
    assert service.state(GEMINI_FLASH) is None


# ------------------------------------------------------------------------ chains


def models(chain: list) -> list[str]:  # type: ignore[type-arg]
    return [p.model for p in chain]


def test_stable_chain() -> None:
    chain = resolve_policy_chain(GEMINI_PRO)
    assert models(chain) == [GEMINI_PRO, GEMINI_FLASH]
    assert [p.is_last_resort for p in chain] == [False, True]
    assert chain[1].max_attempts == 10
    for policy in chain:
        for kind in ("terminal", "transient", "not_found", "unknown"):
            assert policy.action_for(kind) == "prompt"
            assert policy.transition_for(kind) == "terminal"


def test_preview_chain() -> None:
    chain = resolve_policy_chain(PREVIEW_PRO)
    assert models(chain) == [PREVIEW_PRO, PREVIEW_FLASH]
    assert chain[1].is_last_resort and chain[1].max_attempts == 10


def test_lite_chain_is_all_silent() -> None:
    chain = resolve_policy_chain(GEMINI_FLASH_LITE)
    assert models(chain) == [GEMINI_FLASH_LITE, GEMINI_FLASH, GEMINI_PRO]
    assert [p.is_last_resort for p in chain] == [False, False, True]
    assert all(p.action_for("terminal") == "silent" for p in chain)


def test_rotation_puts_active_model_first() -> None:
    assert models(resolve_policy_chain(GEMINI_FLASH)) == [GEMINI_FLASH, GEMINI_PRO]
    assert models(resolve_policy_chain(PREVIEW_FLASH)) == [PREVIEW_FLASH, PREVIEW_PRO]
    assert models(resolve_policy_chain(GEMINI_FLASH, wrap_around=False)) == [GEMINI_FLASH]
    # the last-resort mark stays with its model
    assert resolve_policy_chain(GEMINI_FLASH)[0].is_last_resort


def test_unknown_model_is_a_chain_of_itself() -> None:
    chain = resolve_policy_chain("my-tuned-model")
    assert models(chain) == ["my-tuned-model"]
    assert chain[0].is_last_resort


def test_plan_mode_makes_every_action_silent() -> None:
    chain = resolve_policy_chain(GEMINI_PRO, approval_mode="plan")
    assert all(
        p.action_for(k) == "silent"
        for p in chain
        for k in ("terminal", "transient", "not_found", "unknown")
    )


@pytest.mark.parametrize(
    ("model", "family"),
    [("auto", GEMINI_PRO), ("auto-gemini-2.5", GEMINI_PRO), ("auto-gemini-3", PREVIEW_PRO)],
)
def test_auto_models_route_to_their_family(model: str, family: str) -> None:
    assert resolve_model(model) == family
    chain = resolve_policy_chain(model)
    assert chain[0].model == family


def test_auto_routing_override() -> None:
    chain = resolve_policy_chain("auto")
    pro, flash = chain
    assert pro.max_attempts == AUTO_ROUTING_MAX_ATTEMPTS
    assert flash.max_attempts == 10  # the last resort keeps its budget
    for policy in chain:
        assert policy.action_for("transient") == "silent"
        assert policy.transition_for("transient") == "sticky_retry"
        assert policy.action_for("terminal") == "prompt"
        assert policy.transition_for("terminal") == "terminal"
    explicit = resolve_policy_chain(GEMINI_PRO, auto_routing=True)
    assert explicit[0].action_for("transient") == "silent"


def test_aliases() -> None:
    assert resolve_model("pro") == GEMINI_PRO
    assert resolve_model("flash") == GEMINI_FLASH
    assert resolve_model("flash-lite") == GEMINI_FLASH_LITE
    assert resolve_model("gemini-2.5-pro") == GEMINI_PRO
