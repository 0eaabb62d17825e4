"""LoopDetectionAdkPlugin: LoopDetectionService behind ADK plugin callbacks (design seam).

Streamed text is fed from partial events only (the consolidated event repeats
it), tool calls from the consolidated model event (partial function calls are
never executed). The first strike queues the nudge, which `before_model_callback`
adds to the next request as a user turn; the second strike stops the turn with
LOOP_DETECTED. The stop is requested after the event has been yielded, never
inside `on_event_callback`, so no event is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from runtime.services.loop_detection import LoopDetectionService, LoopVerdict

logger = logging.getLogger(__name__)

StopCallback = Callable[[LoopVerdict], None]


class LoopDetectionAdkPlugin(BasePlugin):
    """Feeds the loop detector and acts on its verdicts."""

    def __init__(self, service: LoopDetectionService, on_terminate: StopCallback) -> None:
        super().__init__(name="gcli_loop_detection")
        self._service = service
        self._on_terminate = on_terminate
        self._pending_nudge: str | None = None
        self._terminated = False

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> types.Content | None:
        self._service.reset()
        self._pending_nudge = None
        self._terminated = False
        return None

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Event | None:
        if self._terminated or event.author == "user" or event.content is None or not event.content.parts:
            return None
        for part in event.content.parts:
            verdict: LoopVerdict | None = None
            if event.partial and part.text and not part.thought:
                verdict = self._service.add_and_check(part.text)
            elif not event.partial and part.function_call is not None:
                verdict = self._service.add_and_check(part.function_call)
            if verdict is not None:
                self._act(verdict)
                if self._terminated:
                    break
        return None

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        verdict = await self._service.turn_started(llm_request.contents)
        if verdict is not None:
            self._act(verdict)
        if self._pending_nudge is not None:
            llm_request.contents.append(types.Content(role="user", parts=[types.Part(text=self._pending_nudge)]))
            self._pending_nudge = None
        return None

    def _act(self, verdict: LoopVerdict) -> None:
        if verdict.kind == "nudge":
            logger.info("possible loop (%s): nudging the model", verdict.detail)
            self._pending_nudge = verdict.nudge_text
            return
        logger.warning("loop detected (%s): stopping the turn", verdict.detail)
        self._terminated = True
        asyncio.get_running_loop().call_soon(self._on_terminate, verdict)
