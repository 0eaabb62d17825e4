"""ModelAvailabilityService: which models may be called right now.

Port of Gemini CLI's availability state machine (`docs/gemini-cli-behaviours.md#availability`).
A map model → health state and nothing else; no configuration inside.

- `terminal{reason}`: unavailable. A `capacity` terminal state clears itself
  `CAPACITY_RECOVERY_MS` after it was set (measured with the injected clock).
- `sticky_retry{consumed, attempts}`: may be tried once per turn; unavailable
  once `consumed`, until `reset_turn()`.

Not thread-safe; one instance belongs to one session (subagents share it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

logger = logging.getLogger(__name__)

CAPACITY_RECOVERY_MS = 30_000

TerminalReason = Literal["quota", "capacity"]
UnavailabilityReason = Literal["quota", "capacity", "retry_once_per_turn", "unknown"]


@dataclass(frozen=True)
class TerminalState:
    """The model failed for good. `since` is the clock reading (seconds) when it was marked."""

    reason: TerminalReason
    since: float
    status: Literal["terminal"] = "terminal"


@dataclass(frozen=True)
class StickyRetryState:
    """The model may be tried `attempts` times per turn; `consumed` once this turn's try is used."""

    consumed: bool = False
    attempts: int = 1
    status: Literal["sticky_retry"] = "sticky_retry"


HealthState = TerminalState | StickyRetryState


@dataclass(frozen=True)
class AvailabilitySnapshot:
    """`available` False comes with the `reason`."""

    available: bool
    reason: UnavailabilityReason | None = None


@dataclass(frozen=True)
class SelectionResult:
    """Result of `select_first_available`.

    `selected_model` is the first available model, or None if none is.
    `attempts` is set when the selected model is in sticky_retry: the number of
    attempts the caller may make on it this turn (otherwise None: normal retry).
    `skipped` lists the models passed over before it, with why.
    """

    selected_model: str | None
    attempts: int | None = None
    skipped: tuple[tuple[str, UnavailabilityReason], ...] = ()


class ModelAvailabilityService:
    """Health of each model id. Unknown models are healthy.

    `clock()` returns seconds from any monotonic origin (default `time.monotonic`).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._health: dict[str, HealthState] = {}

    def state(self, model: str) -> HealthState | None:
        """The current health state of `model` (None: healthy), after expiring capacity."""
        current = self._health.get(model)
        if (
            isinstance(current, TerminalState)
            and current.reason == "capacity"
            and (self._clock() - current.since) * 1000.0 >= CAPACITY_RECOVERY_MS
        ):
            logger.debug("capacity block on %s expired", model)
            del self._health[model]
            return None
        return current

    def mark_terminal(self, model: str, reason: TerminalReason) -> None:
        self._health[model] = TerminalState(reason=reason, since=self._clock())

    def mark_healthy(self, model: str) -> None:
        self._health.pop(model, None)

    def mark_retry_once_per_turn(self, model: str, attempts: int = 1) -> None:
        """Put `model` in sticky_retry. Never overrides a terminal state; keeps `consumed`."""
        current = self.state(model)
        if isinstance(current, TerminalState):
            return
        consumed = current.consumed if isinstance(current, StickyRetryState) else False
        self._health[model] = StickyRetryState(consumed=consumed, attempts=attempts)

    def consume_sticky_attempt(self, model: str) -> None:
        current = self.state(model)
        if isinstance(current, StickyRetryState):
            self._health[model] = replace(current, consumed=True)

    def snapshot(self, model: str) -> AvailabilitySnapshot:
        current = self.state(model)
        if isinstance(current, TerminalState):
            return AvailabilitySnapshot(available=False, reason=current.reason)
        if isinstance(current, StickyRetryState) and current.consumed:
            return AvailabilitySnapshot(available=False, reason="retry_once_per_turn")
        return AvailabilitySnapshot(available=True)

    def is_available(self, model: str) -> bool:
        return self.snapshot(model).available

    def select_first_available(self, models: Iterable[str]) -> SelectionResult:
        skipped: list[tuple[str, UnavailabilityReason]] = []
        for model in models:
            snap = self.snapshot(model)
            if snap.available:
                current = self.state(model)
                attempts = current.attempts if isinstance(current, StickyRetryState) else None
                return SelectionResult(model, attempts, tuple(skipped))
            skipped.append((model, snap.reason or "unknown"))
        return SelectionResult(None, None, tuple(skipped))

    def reset_turn(self) -> None:
        """A new user turn: every sticky_retry model may be tried again."""
        for model, current in list(self._health.items()):
            if isinstance(current, StickyRetryState):
                self._health[model] = replace(current, consumed=False)

    def reset(self) -> None:
        """Forget everything (model change, re-auth, quota reset)."""
        self._health.clear()
