"""MaxTurns, TokenLimit and MaxTime plugins: per-prompt limits (design: MaxTurnsAdkPlugin & co).

Each counts from `before_run_callback` (a new prompt). When a limit is reached
the plugin asks the protocol to stop the turn with the matching end reason and
a message naming the limit; a model call that would exceed the turn limit is
skipped with an empty response.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LimitReached:
    """`reason` is the agent_end reason: max_turns, max_budget or max_time."""

    reason: str
    message: str
    code: str


StopCallback = Callable[[LimitReached], None]


def _skip() -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text="")]), turn_complete=True
    )


class MaxTurnsAdkPlugin(BasePlugin):
    def __init__(self, max_turns: int, on_limit: StopCallback) -> None:
        super().__init__(name="gcli_max_turns")
        self._max = max_turns
        self._on_limit = on_limit
        self._turns = 0

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        self._turns = 0
        return None

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        self._turns += 1
        if self._turns <= self._max:
            return None
        self._on_limit(
            LimitReached(
                "max_turns",
                f"Stopped: this prompt reached the limit of {self._max} model turns "
                "(--max-turns / model.maxSessionTurns).",
                "MAX_TURNS_EXCEEDED",
            )
        )
        return _skip()


class TokenLimitAdkPlugin(BasePlugin):
    def __init__(self, max_tokens: int, on_limit: StopCallback) -> None:
        super().__init__(name="gcli_token_limit")
        self._max = max_tokens
        self._on_limit = on_limit
        self._used = 0
        self._stopped = False

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        self._used = 0
        self._stopped = False
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        usage = llm_response.usage_metadata
        if llm_response.partial or usage is None or self._stopped:
            return None
        self._used += (
            (usage.prompt_token_count or 0)
            + (usage.candidates_token_count or 0)
            + (usage.thoughts_token_count or 0)
        )
        if self._used > self._max:
            self._stopped = True
            self._on_limit(
                LimitReached(
                    "max_budget",
                    f"Stopped: this prompt used {self._used:,} tokens, "
                    f"over the limit of {self._max:,} "
                    "(--max-tokens / model.maxTokensPerPrompt).",
                    "MAX_TOKENS_EXCEEDED",
                )
            )
        return None


class MaxTimeAdkPlugin(BasePlugin):
    def __init__(self, max_seconds: float, on_limit: StopCallback) -> None:
        super().__init__(name="gcli_max_time")
        self._max = max_seconds
        self._on_limit = on_limit
        self._timer: asyncio.TimerHandle | None = None
        self._started = 0.0

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        self._started = time.monotonic()
        self._timer = asyncio.get_running_loop().call_later(self._max, self._fire)
        return None

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        self._on_limit(
            LimitReached(
                "max_time",
                f"Stopped: this prompt ran for more than {self._max:g} s "
                "(--max-time / model.maxTimeSeconds).",
                "MAX_TIME_EXCEEDED",
            )
        )
