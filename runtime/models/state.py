"""ModelState: one session's model facts (what the design keeps on Config).

The user's model choice (may be `auto`), the ModelAvailabilityService, the
sequence-sticky model, the router, and the callbacks through which the retry +
fallback loop (`runtime.adk.resilience`) reaches the user: notices, the
fallback question, model announcements.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from runtime.host import FallbackChoice, FallbackIntent
from runtime.models.availability import ModelAvailabilityService
from runtime.models.policy_catalog import is_auto_model, resolve_model
from runtime.models.routing import ModelRouterService, SequenceModel


@dataclass
class ModelState:
    """One session's model facts. `choice` is what the user picked (maybe `auto`)."""

    choice: str
    availability: ModelAvailabilityService = field(default_factory=ModelAvailabilityService)
    sequence: SequenceModel = field(default_factory=SequenceModel)
    router: ModelRouterService | None = None
    mode: Callable[[], str] = lambda: "default"
    max_attempts: int | None = None
    on_choice_changed: Callable[[str], None] | None = None
    on_model_announced: Callable[[str], None] | None = None
    notice: Callable[[str], None] | None = None
    ask: Callable[[FallbackChoice], Awaitable[FallbackIntent]] | None = None
    abort_event: Callable[[], asyncio.Event | None] = lambda: None
    offered: list[tuple[str, str]] = field(default_factory=list)
    """The editor's model choice (id, name) when other providers are reachable (empty:
    Gemini's catalogue), `runtime.models.model_list`; `discovery` asks their servers."""
    discovery: asyncio.Task[None] | None = None
    window: Callable[[str], int | None] = lambda _model: None
    """The session's generator's context window of a model (another provider's declared
    one), else None: `context_window` falls back to the catalogue."""
    fallback_models: tuple[str, ...] = ()
    """The settings' `model.fallbackModels`: the fallback chain after the session's model
    (any provider's models), instead of Gemini CLI's built-in chains."""
    switched_once: set[str] = field(default_factory=set)
    """Models the user switched away from "for this request" (retry_once): healthy again
    at the next prompt, so that prompt goes back to the session's model."""

    def __post_init__(self) -> None:
        if self.router is None:
            self.router = ModelRouterService.standard(availability=self.availability)

    def context_window(self, model: str) -> int:
        """The input token limit of `model`: its provider's declared window, else the
        catalogue's (usage updates and compression's threshold read it)."""
        from runtime.models.catalog import context_window

        return self.window(model) or context_window(model)

    @property
    def auto_routing(self) -> bool:
        return is_auto_model(self.choice)

    @property
    def default_model(self) -> str:
        """The concrete model when nothing has been routed yet."""
        return self.sequence.get() or resolve_model(self.choice)

    def new_prompt(self) -> None:
        self.availability.reset_turn()
        for model in self.switched_once:
            self.availability.mark_healthy(model)
        self.switched_once.clear()
        self.sequence.on_new_prompt()

    def choose(self, model: str) -> None:
        """The user (or a retry_always fallback) changed the session's model."""
        self.choice = model
        self.availability.reset()
        self.sequence.on_model_change()

    def mode_changed(self, old: str, new: str) -> None:
        self.sequence.on_mode_change(old, new)
