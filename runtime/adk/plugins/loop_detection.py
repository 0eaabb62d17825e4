"""LoopDetectionAdkPlugin: LoopDetectionService behind ADK plugin callbacks (design seam).

Streamed text is watched as the model produces it (`StreamControl`: ADK hands
events to plugins only after the model has read further), tool calls come from
the consolidated model event (partial function calls are never executed). A
detection in streamed text ends the stream there. The first strike queues the
nudge, which `before_model_callback` adds to the next request as a user turn,
or, when the run has no next model call, the protocol sends as a follow-up turn;
the second strike stops the turn with LOOP_DETECTED. The stop is requested after
the event has been yielded, never inside `on_event_callback`, so no event is
dropped.
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

from runtime.adk.stream_control import StreamControl
from runtime.services.loop_detection import LoopDetectionService, LoopVerdict

logger = logging.getLogger(__name__)

StopCallback = Callable[[LoopVerdict], None]
NudgeCallback = Callable[[LoopVerdict], None]


class LoopDetectionAdkPlugin(BasePlugin):
    """Feeds the loop detector and acts on its verdicts."""

    def __init__(
        self,
        service: LoopDetectionService,
        on_terminate: StopCallback,
        *,
        control: StreamControl | None = None,
        on_nudge: NudgeCallback | None = None,
    ) -> None:
        super().__init__(name="gcli_loop_detection")
        self._service = service
        self._on_terminate = on_terminate
        self._control = control or StreamControl()
        self._control.add_text_watcher(self._watch_text)
        self._on_nudge = on_nudge
        self._pending_nudge: str | None = None
        self._terminated = False

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        if self._control.take_continuing():
            return None  # a follow-up turn of the same prompt: strikes count on
        self._service.reset()
        self._control.reset()
        self._pending_nudge = None
        self._terminated = False
        return None

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        if (
            self._terminated
            or event.author == "user"
            or event.content is None
            or not event.content.parts
        ):
            return None
        for part in event.content.parts:
            verdict: LoopVerdict | None = None
            if not event.partial and part.function_call is not None:
                verdict = self._service.add_and_check(part.function_call)
            if verdict is not None:
                self._act(verdict)
                if self._terminated:
                    break
        return None

    def _watch_text(self, text: str) -> bool:
        """Streamed text, seen as the model produces it: a loop ends the stream there."""
        if self._terminated:
            return True
        verdict = self._service.add_and_check(text)
        if verdict is None:
            return False
        self._act(verdict)
        return True  # not one more repeat reaches the editor

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        verdict = await self._service.turn_started(llm_request.contents)
        if verdict is not None:
            self._act(verdict)
        if self._pending_nudge is not None:
            llm_request.contents.append(
                types.Content(role="user", parts=[types.Part(text=self._pending_nudge)])
            )
            self._pending_nudge = None
            self._control.set_follow_up(None)  # carried by this call
        return None

    def _act(self, verdict: LoopVerdict) -> None:
        if verdict.kind == "nudge":
            logger.info("possible loop (%s): nudging the model", verdict.detail)
            self._pending_nudge = verdict.nudge_text
            self._control.set_follow_up(verdict.nudge_text)  # if no later call of the run takes it
            if self._on_nudge is not None:
                self._on_nudge(verdict)
            return
        logger.warning("loop detected (%s): stopping the turn", verdict.detail)
        self._terminated = True
        asyncio.get_running_loop().call_soon(self._on_terminate, verdict)
