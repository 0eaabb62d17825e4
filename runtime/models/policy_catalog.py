"""Model aliases and the fallback policy chains (the ids: `catalog.py`).

Port of Gemini CLI's policy catalog (`docs/gemini-cli-behaviours.md#policy-chains`). A
chain is an ordered list of `ModelPolicy`: what to do when that model fails,
per failure kind (`action`: ask the user or switch silently; `state`: how the
availability service marks the failed model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from runtime.models.catalog import (
    AUTO,
    GEMINI_FLASH,
    GEMINI_FLASH_LITE,
    GEMINI_PRO,
    PREVIEW_FLASH,
    PREVIEW_PRO,
)
from runtime.models.quota_errors import FailureKind

PolicyAction = Literal["silent", "prompt"]
StateTransition = Literal["terminal", "sticky_retry"]

AUTO_STABLE = "auto-gemini-2.5"
AUTO_PREVIEW = "auto-gemini-3"
AUTO_MODELS = frozenset({AUTO, AUTO_STABLE, AUTO_PREVIEW})

LAST_RESORT_MAX_ATTEMPTS = 10
AUTO_ROUTING_MAX_ATTEMPTS = 3

FAILURE_KINDS: tuple[FailureKind, ...] = ("terminal", "transient", "not_found", "unknown")


DEFAULT_ACTIONS: Mapping[FailureKind, PolicyAction] = MappingProxyType(
    {kind: "prompt" for kind in FAILURE_KINDS}
)
SILENT_ACTIONS: Mapping[FailureKind, PolicyAction] = MappingProxyType(
    {kind: "silent" for kind in FAILURE_KINDS}
)
DEFAULT_STATES: Mapping[FailureKind, StateTransition] = MappingProxyType(
    {kind: "terminal" for kind in FAILURE_KINDS}
)


@dataclass(frozen=True)
class ModelPolicy:
    """How to treat failures of one model in a chain.

    `max_attempts` is the retry budget for calls to this model (None: the retry
    default). `is_last_resort` marks the model used when nothing else is available.
    """

    model: str
    actions: Mapping[FailureKind, PolicyAction] = field(default_factory=lambda: DEFAULT_ACTIONS)
    state_transitions: Mapping[FailureKind, StateTransition] = field(
        default_factory=lambda: DEFAULT_STATES
    )
    is_last_resort: bool = False
    max_attempts: int | None = None

    def action_for(self, kind: FailureKind) -> PolicyAction:
        return self.actions.get(kind, "prompt")

    def transition_for(self, kind: FailureKind) -> StateTransition:
        return self.state_transitions.get(kind, "terminal")


def _last_resort(
    model: str, actions: Mapping[FailureKind, PolicyAction] = DEFAULT_ACTIONS
) -> ModelPolicy:
    return ModelPolicy(
        model, actions=actions, is_last_resort=True, max_attempts=LAST_RESORT_MAX_ATTEMPTS
    )


STABLE_CHAIN: tuple[ModelPolicy, ...] = (ModelPolicy(GEMINI_PRO), _last_resort(GEMINI_FLASH))
PREVIEW_CHAIN: tuple[ModelPolicy, ...] = (ModelPolicy(PREVIEW_PRO), _last_resort(PREVIEW_FLASH))
LITE_CHAIN: tuple[ModelPolicy, ...] = (
    ModelPolicy(GEMINI_FLASH_LITE, actions=SILENT_ACTIONS),
    ModelPolicy(GEMINI_FLASH, actions=SILENT_ACTIONS),
    _last_resort(GEMINI_PRO, actions=SILENT_ACTIONS),
)


# ---------------------------------------------------------------- model ids


def is_auto_model(model: str) -> bool:
    return model in AUTO_MODELS


def is_preview_model(model: str) -> bool:
    return model == AUTO_PREVIEW or model.startswith("gemini-3")


def family_models(model: str) -> tuple[str, str]:
    """(pro, flash) of the family `model` belongs to: the preview family for Gemini 3."""
    return (PREVIEW_PRO, PREVIEW_FLASH) if is_preview_model(model) else (GEMINI_PRO, GEMINI_FLASH)


def resolve_model(model: str) -> str:
    """The concrete model id for a setting: auto → its family's pro; aliases pro, flash,
    flash-lite → the stable models."""
    if is_auto_model(model):
        return family_models(model)[0]
    aliases = {"pro": GEMINI_PRO, "flash": GEMINI_FLASH, "flash-lite": GEMINI_FLASH_LITE}
    return aliases.get(model, model)


# --------------------------------------------------------------------- chains


def _base_chain(model: str) -> tuple[ModelPolicy, ...]:
    if model == GEMINI_FLASH_LITE:
        return LITE_CHAIN
    for chain in (PREVIEW_CHAIN, STABLE_CHAIN):
        if any(p.model == model for p in chain):
            return chain
    return (_last_resort(model),)


def _auto_routing_override(policy: ModelPolicy) -> ModelPolicy:
    actions = {**policy.actions, "transient": "silent"}
    states = {**policy.state_transitions, "transient": "sticky_retry"}
    return replace(
        policy,
        actions=MappingProxyType(actions),
        state_transitions=MappingProxyType(states),
        max_attempts=policy.max_attempts if policy.is_last_resort else AUTO_ROUTING_MAX_ATTEMPTS,
    )


def _configured_chain(model: str, fallback_models: Sequence[str]) -> tuple[ModelPolicy, ...]:
    """The active model, then the settings' `model.fallbackModels` in order (any
    provider's: `ollama/NAME`…), the last one the last resort."""
    others = [m for m in dict.fromkeys(fallback_models) if m and m != model]
    if not others:
        return (_last_resort(model),)
    return (ModelPolicy(model), *(ModelPolicy(m) for m in others[:-1]), _last_resort(others[-1]))


def resolve_policy_chain(
    active_model: str,
    *,
    approval_mode: str = "default",
    auto_routing: bool = False,
    wrap_around: bool = True,
    fallback_models: Sequence[str] = (),
) -> list[ModelPolicy]:
    """The fallback chain for `active_model`, with the active model first.

    `active_model` may be an auto id or alias (then auto routing is implied and
    its family's pro model is the active one). A model outside every chain gets a
    chain of itself alone (last resort: nothing to fall back to). `wrap_around`
    rotates the models before the active one to the end; False drops them.
    Auto routing: transient failures become silent + sticky_retry, and non-last
    resort models get `AUTO_ROUTING_MAX_ATTEMPTS`. Plan mode: every action silent.
    `fallback_models` (the settings' `model.fallbackModels`) replaces the built-in chain
    after the active model: the fallback may leave Gemini for another provider.
    """
    auto_routing = auto_routing or is_auto_model(active_model)
    model = resolve_model(active_model)
    if fallback_models:
        chain = list(_configured_chain(model, fallback_models))
    else:
        chain = list(_base_chain(model))
    index = next((i for i, p in enumerate(chain) if p.model == model), 0)
    chain = chain[index:] + (chain[:index] if wrap_around else [])
    if auto_routing:
        chain = [_auto_routing_override(p) for p in chain]
    if approval_mode == "plan":
        chain = [replace(p, actions=SILENT_ACTIONS) for p in chain]
    return chain
