"""Model routing: which concrete model serves the next model call.

Port of Gemini CLI's ModelRouterService (`docs/gemini-cli-behaviours.md#routing`):
a composite of strategies, the first decision wins, a strategy that raises is
skipped, and if no strategy decides the configured model is used.

Standard order (`ModelRouterService.standard`): fallback → override →
approval mode → classifier → default.

`SequenceModel` keeps the first routed model of a prompt for every model call
of that prompt (the tool loop), with named reset points. `apply_model_selection`
runs a routed model through the availability service, like the legacy
`applyModelSelection`.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from runtime.models.availability import ModelAvailabilityService
from runtime.models.policy_catalog import (
    family_models,
    is_auto_model,
    resolve_model,
    resolve_policy_chain,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoutingContext:
    """What a routing strategy may look at.

    `contents` is the (masked) request history, newest last, the current request
    included; `requested_model` the session's model setting (may be `auto`).
    """

    contents: Sequence[types.Content]
    requested_model: str
    approval_mode: str = "default"
    abort_event: asyncio.Event | None = None


@dataclass(frozen=True)
class RoutingDecision:
    """The concrete `model` to call, why (`reason`), and which strategy chose (`source`).

    Sources: fallback, override, approval_mode, classifier, default, sequence,
    router_failure.
    """

    model: str
    reason: str
    source: str


class RoutingStrategy(abc.ABC):
    """One routing rule. `route` returns a decision, or None to let the next strategy decide."""

    name: str = "strategy"

    @abc.abstractmethod
    async def route(self, context: RoutingContext) -> RoutingDecision | None: ...


class FallbackStrategy(RoutingStrategy):
    """The requested model is unavailable: route to the best available model of its chain."""

    name = "fallback"

    def __init__(self, availability: ModelAvailabilityService) -> None:
        self._availability = availability

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        resolved = resolve_model(context.requested_model)
        snapshot = self._availability.snapshot(resolved)
        if snapshot.available:
            return None
        chain = resolve_policy_chain(context.requested_model, approval_mode=context.approval_mode)
        selection = self._availability.select_first_available(p.model for p in chain)
        chosen = selection.selected_model
        if chosen is None or chosen == resolved:
            return None
        return RoutingDecision(
            chosen,
            f"Model {resolved} is unavailable ({snapshot.reason}). Using fallback: {chosen}",
            self.name,
        )


class OverrideStrategy(RoutingStrategy):
    """An explicit (non-auto) model setting is used as is."""

    name = "override"

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        if is_auto_model(context.requested_model):
            return None
        model = resolve_model(context.requested_model)
        return RoutingDecision(model, f"Explicit model {model}", self.name)


class ApprovalModeStrategy(RoutingStrategy):
    """Plan mode with an auto model: the family's pro model plans."""

    name = "approval_mode"

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        if context.approval_mode != "plan" or not is_auto_model(context.requested_model):
            return None
        pro, _ = family_models(context.requested_model)
        return RoutingDecision(pro, "Plan mode uses the pro model", self.name)


class DefaultStrategy(RoutingStrategy):
    """The configured model (auto → its family's pro model)."""

    name = "default"

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        model = resolve_model(context.requested_model)
        return RoutingDecision(model, f"Default model {model}", self.name)


class ModelRouterService:
    """Runs the strategies in order; `route` always returns a decision and never raises
    (except for cancellation)."""

    def __init__(self, strategies: Sequence[RoutingStrategy]) -> None:
        self._strategies = tuple(strategies)

    @classmethod
    def standard(
        cls,
        *,
        availability: ModelAvailabilityService,
        classifier: RoutingStrategy | None = None,
    ) -> ModelRouterService:
        """fallback → override → approval mode → classifier (if given) → default."""
        strategies: list[RoutingStrategy] = [
            FallbackStrategy(availability),
            OverrideStrategy(),
            ApprovalModeStrategy(),
        ]
        if classifier is not None:
            strategies.append(classifier)
        strategies.append(DefaultStrategy())
        return cls(strategies)

    @property
    def strategies(self) -> tuple[RoutingStrategy, ...]:
        return self._strategies

    async def route(self, context: RoutingContext) -> RoutingDecision:
        for strategy in self._strategies:
            try:
                decision = await strategy.route(context)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("routing strategy %s failed; skipped", strategy.name, exc_info=True)
                continue
            if decision is not None:
                logger.debug(
                    "routed to %s by %s: %s", decision.model, decision.source, decision.reason
                )
                return decision
        model = resolve_model(context.requested_model)
        return RoutingDecision(model, "No routing strategy decided", "router_failure")


class SequenceModel:
    """The model kept for all model calls of one prompt (the sequence-sticky model).

    Reset points: `on_new_prompt()`, `on_model_change()` (including a fallback
    `retry_always`), `on_mode_change(old, new)` when entering or leaving plan or yolo.
    """

    STICKY_RESET_MODES = frozenset({"plan", "yolo"})

    def __init__(self) -> None:
        self._model: str | None = None

    def get(self) -> str | None:
        """The model of the current sequence, or None when the next call must be routed."""
        return self._model

    def set(self, model: str) -> bool:
        """Keep `model` for the sequence. True when it starts a sequence (announce it)."""
        started = self._model is None
        self._model = model
        return started

    def clear(self) -> None:
        self._model = None

    def on_new_prompt(self) -> None:
        self.clear()

    def on_model_change(self) -> None:
        self.clear()

    def on_mode_change(self, old: str, new: str) -> bool:
        """Reset when entering or leaving plan or yolo mode; True if it reset."""
        if old != new and (old in self.STICKY_RESET_MODES or new in self.STICKY_RESET_MODES):
            self.clear()
            return True
        return False


async def route_with_sequence(
    router: ModelRouterService, sequence: SequenceModel, context: RoutingContext
) -> tuple[RoutingDecision, bool]:
    """The sequence's model if set (source `sequence`), else route and keep the result.

    Returns the decision and whether it started a new sequence (announce the model).
    """
    kept = sequence.get()
    if kept is not None:
        return RoutingDecision(kept, "Sequence model", "sequence"), False
    decision = await router.route(context)
    return decision, sequence.set(decision.model)


@dataclass(frozen=True)
class ModelSelection:
    """The model to call after availability, and the retry budget for it.

    `max_attempts` is None for the retry default; 1 (or the sticky budget) when the
    model is in sticky_retry, whose attempt this selection consumed; otherwise
    the chain policy's budget.
    """

    model: str
    max_attempts: int | None


def apply_model_selection(
    model: str,
    *,
    availability: ModelAvailabilityService,
    approval_mode: str = "default",
    auto_routing: bool = False,
) -> ModelSelection:
    """Pick the first available model of `model`'s chain (itself if available).

    Consumes the sticky attempt of a sticky_retry model. When nothing is
    available, returns `model` itself (the call will fail and fall back).
    """
    chain = resolve_policy_chain(model, approval_mode=approval_mode, auto_routing=auto_routing)
    selection = availability.select_first_available(p.model for p in chain)
    chosen = selection.selected_model or resolve_model(model)
    if selection.attempts is not None:
        availability.consume_sticky_attempt(chosen)
        return ModelSelection(chosen, selection.attempts)
    policy = next((p for p in chain if p.model == chosen), None)
    return ModelSelection(chosen, policy.max_attempts if policy else None)
