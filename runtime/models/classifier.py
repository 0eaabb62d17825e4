"""ClassifierStrategy: for auto models, ask a cheap model whether the request needs pro.

One `generate_content` call through the ContentGenerator given to it, on the
last few conversation turns (tool calls and responses left out), asking for
JSON `{"reasoning": ..., "model_choice": "flash" | "pro"}`. Any failure
(error, bad JSON, unknown choice) makes the strategy skip (returns None).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from google.genai import types

from runtime.models.catalog import GEMINI_FLASH_LITE
from runtime.models.content_generator import ContentGenerator
from runtime.models.json_query import ask_json
from runtime.models.policy_catalog import family_models, is_auto_model
from runtime.models.routing import RoutingContext, RoutingDecision, RoutingStrategy

logger = logging.getLogger(__name__)

CLASSIFIER_HISTORY_TURNS = 4

CLASSIFIER_SYSTEM_PROMPT = """\
You choose which model should answer the latest request of a coding assistant session.

Choose "flash" (fast, cheap) when the request is simple and well specified: a direct \
question, a small or mechanical edit, running a known command, reading or listing files, \
a follow-up that continues an obvious plan.

Choose "pro" (slower, stronger) when the request needs real reasoning: designing or \
planning a change across several files, debugging an unclear failure, an ambiguous or \
open-ended task, architecture questions, subtle algorithms, or after simpler attempts \
have failed.

When unsure, choose "pro".

Answer with JSON only: {"reasoning": "<one short sentence>", "model_choice": "flash" or "pro"}.
"""

CLASSIFIER_SCHEMA = types.Schema(
    type=types.Type.OBJECT,
    properties={
        "reasoning": types.Schema(type=types.Type.STRING),
        "model_choice": types.Schema(type=types.Type.STRING, enum=["flash", "pro"]),
    },
    required=["reasoning", "model_choice"],
)


def _conversation_only(content: types.Content) -> types.Content | None:
    parts = [
        p
        for p in content.parts or ()
        if p.function_call is None and p.function_response is None and not p.thought
    ]
    if not parts:
        return None
    return types.Content(role=content.role, parts=parts)


def recent_turns(contents: Sequence[types.Content], turns: int) -> list[types.Content]:
    """The last `turns` contents that carry conversation (no tool calls/responses, no thoughts)."""
    kept = [c for c in (_conversation_only(c) for c in contents) if c is not None]
    return kept[-turns:]


class ClassifierStrategy(RoutingStrategy):
    """Routes auto models to their family's flash or pro model by an LLM's judgement."""

    name = "classifier"

    def __init__(
        self,
        generator: ContentGenerator,
        *,
        model: str = GEMINI_FLASH_LITE,
        history_turns: int = CLASSIFIER_HISTORY_TURNS,
    ) -> None:
        self._generator = generator
        self._model = model
        self._history_turns = history_turns

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        if not is_auto_model(context.requested_model):
            return None
        if context.abort_event is not None and context.abort_event.is_set():
            return None
        contents = recent_turns(context.contents, self._history_turns)
        if not contents:
            return None
        answer = await ask_json(
            self._generator,
            model=self._model,
            contents=contents,
            system_instruction=CLASSIFIER_SYSTEM_PROMPT,
            schema=CLASSIFIER_SCHEMA,
            what="routing classifier",
        )
        if answer is None:
            return None
        choice = answer.get("model_choice") if isinstance(answer, dict) else None
        if choice not in ("flash", "pro"):
            logger.warning("routing classifier gave no usable choice: %r", answer)
            return None
        pro, flash = family_models(context.requested_model)
        reasoning = answer.get("reasoning")
        return RoutingDecision(
            pro if choice == "pro" else flash,
            str(reasoning) if reasoning else f"Classifier chose {choice}",
            self.name,
        )
