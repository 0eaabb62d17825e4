"""The design's request processors, run after ADK's `contents` (see `GcliLlmAgent`).

`ToolOutputMaskingProcessor` runs first: it masks old, bulky tool outputs in the
request and writes the same masks back to the live session events, matched by
function-call id (never by position: ADK filters and copies contents while
building the request), so they persist and masking stays idempotent.

`GcliRoutingProcessor` runs next: it routes the request (sequence-sticky model,
router strategies, availability) and rewrites `llm_request.model` before ADK adds
the tool declarations and before `GcliAgentModel` is called.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.flows.llm_flows._base_llm_processor import BaseLlmRequestProcessor
from google.adk.models.llm_request import LlmRequest

from runtime.adk.resilience import ModelState
from runtime.models.routing import RoutingContext, apply_model_selection, route_with_sequence
from runtime.services.masking import MaskResult, ToolOutputMaskingService

logger = logging.getLogger(__name__)


def write_back_masks(events: list[Event], result: MaskResult) -> int:
    """Apply masked responses to the live events by function-call id. Returns how many."""
    wanted = {m.function_call_id: m for m in result.masked if m.function_call_id}
    by_name = {m.name: m for m in result.masked if not m.function_call_id}
    applied = 0
    for event in events:
        if event.content is None or not event.content.parts:
            continue
        for part in event.content.parts:
            response = part.function_response
            if response is None:
                continue
            masked = wanted.get(response.id or "") or (by_name.get(response.name or "") if not response.id else None)
            if masked is not None and response.response != masked.new_response:
                response.response = dict(masked.new_response)
                applied += 1
    return applied


class ToolOutputMaskingProcessor(BaseLlmRequestProcessor):
    """Masks old tool outputs in the request and in the live session (design seam)."""

    name = "gcli_tool_output_masking"

    def __init__(self, service: ToolOutputMaskingService) -> None:
        self._service = service

    async def run_async(
        self, invocation_context: InvocationContext, llm_request: LlmRequest
    ) -> AsyncGenerator[Event, None]:
        result = self._service.mask(llm_request.contents)
        if result.masked:
            llm_request.contents = result.contents
            applied = write_back_masks(invocation_context.session.events, result)
            logger.info("masked %d tool outputs (%d in the session), ~%d tokens saved",
                        len(result.masked), applied, result.tokens_saved)
        return
        yield  # an async generator that yields nothing


class GcliRoutingProcessor(BaseLlmRequestProcessor):
    """Routes each model call and rewrites `llm_request.model` (design seam)."""

    name = "gcli_routing"

    def __init__(self, state: ModelState) -> None:
        self._state = state

    async def run_async(
        self, invocation_context: InvocationContext, llm_request: LlmRequest
    ) -> AsyncGenerator[Event, None]:
        state = self._state
        assert state.router is not None
        context = RoutingContext(
            contents=llm_request.contents,
            requested_model=state.choice,
            approval_mode=state.mode(),
            abort_event=state.abort_event(),
        )
        decision, _ = await route_with_sequence(state.router, state.sequence, context)
        selection = apply_model_selection(
            decision.model,
            availability=state.availability,
            approval_mode=state.mode(),
            auto_routing=state.auto_routing,
        )
        llm_request.model = selection.model
        state.max_attempts = selection.max_attempts
        if state.on_model_announced is not None:
            state.on_model_announced(selection.model)
        logger.debug("routed to %s (%s)", selection.model, decision.reason)
        return
        yield  # an async generator that yields nothing


def gcli_processors(state: ModelState, masking: ToolOutputMaskingService | None) -> list[Any]:
    """The ordered list: masking (if enabled), then routing."""
    processors: list[Any] = []
    if masking is not None:
        processors.append(ToolOutputMaskingProcessor(masking))
    processors.append(GcliRoutingProcessor(state))
    return processors
