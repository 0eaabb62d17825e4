"""InjectionService and SteeringAdkPlugin (design: user steering, `beforeModelCallback`
consumes the InjectionService queue).

A prompt the user sends while a turn runs is queued, not refused. Before the
running turn's next model call, every queued message is appended to the session
as a user turn (recorded like any prompt) and added to that call's request, so the
model reads it right away. A turn that makes no further model call leaves the
queue as it was; the caller then runs the message as its own turn.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from runtime.adk.content import user_content
from runtime.protocol import ContentPart

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Injection:
    token: int
    parts: tuple[ContentPart, ...]


class InjectionService:
    """The steering queue of one session."""

    def __init__(self) -> None:
        self._queue: list[Injection] = []
        self._tokens = itertools.count(1)

    def add(self, parts: tuple[ContentPart, ...]) -> int:
        token = next(self._tokens)
        self._queue.append(Injection(token, parts))
        return token

    def take(self) -> list[Injection]:
        taken, self._queue = self._queue, []
        return taken

    def withdraw(self, token: int) -> tuple[ContentPart, ...] | None:
        """Remove a message still queued (the turn ended first); None if it was injected."""
        for item in self._queue:
            if item.token == token:
                self._queue.remove(item)
                return item.parts
        return None


class SteeringAdkPlugin(BasePlugin):
    """Injects queued user messages before each model call of the running turn."""

    def __init__(
        self,
        injection: InjectionService,
        on_injected: Callable[[tuple[ContentPart, ...]], None],
    ) -> None:
        super().__init__(name="gcli_steering")
        self._injection = injection
        self._on_injected = on_injected

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        items = self._injection.take()
        if not items:
            return None
        context = callback_context._invocation_context
        for item in items:
            self._on_injected(item.parts)  # the user's message event (recorded as typed)
            content = user_content(item.parts)
            event = Event(invocation_id=context.invocation_id, author="user", content=content)
            await context.session_service.append_event(context.session, event)
            last = llm_request.contents[-1] if llm_request.contents else None
            if last is not None and last.role == "user":  # after function responses
                merged = [*(last.parts or []), *(content.parts or [])]
                llm_request.contents[-1] = types.Content(role="user", parts=merged)
            else:
                llm_request.contents.append(content)
        logger.info("injected %d steering message(s) into the running turn", len(items))
        return None
