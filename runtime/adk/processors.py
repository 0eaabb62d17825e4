"""The design's request processors, run after ADK's `contents` (see `GcliLlmAgent`).

`ToolOutputMaskingProcessor` runs first: it masks old, bulky tool outputs in the
request and writes the same masks back to the live session events, matched by
function-call id, or by name and response in history order when ADK stripped its
own ids (never by index: ADK filters and copies contents while building the
request), so they persist and masking stays idempotent.

`GcliRoutingProcessor` runs next: it routes the request (sequence-sticky model,
router strategies, availability) and rewrites `llm_request.model` before ADK adds
the tool declarations and before `GcliAgentModel` is called.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.flows.llm_flows._base_llm_processor import BaseLlmRequestProcessor
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from runtime.adk.history_cache import HISTORY_CACHE
from runtime.models.routing import RoutingContext, apply_model_selection, route_with_sequence
from runtime.models.state import ModelState
from runtime.services.masking import MaskResult, ToolOutputMaskingService
from runtime.tools.base import MEDIA_KEY

logger = logging.getLogger(__name__)


def _same_response(live: types.FunctionResponse, sent: types.FunctionResponse) -> bool:
    if sent.id:
        return live.id == sent.id
    return live.name == sent.name and live.response == sent.response


def write_back_masks(
    events: list[Event],
    result: MaskResult,
    request_contents: Sequence[types.Content],
    changed: list[types.FunctionResponse] | None = None,
) -> int:
    """Apply the masks of `result` to the live events. Returns how many were applied.

    `request_contents` is the history `result` was computed from. ADK built it from
    the live events in order, but filtered some out and stripped its own (`adk-`)
    call ids, so each function response of the request is paired with the next
    live one that has the same id, or (no id) the same name and response. The live
    responses it changed are added to `changed` when given.
    """
    masked = {(m.content_index, m.part_index): m for m in result.masked}
    live = [
        part.function_response
        for event in events
        if event.content is not None
        for part in event.content.parts or ()
        if part.function_response is not None
    ]
    applied = 0
    start = 0
    for ci, content in enumerate(request_contents):
        for pi, part in enumerate(content.parts or ()):
            sent = part.function_response
            if sent is None:
                continue
            k = next((i for i in range(start, len(live)) if _same_response(live[i], sent)), None)
            if k is None:
                continue
            start = k + 1
            mask = masked.get((ci, pi))
            if mask is not None and live[k].response != mask.new_response:
                live[k].response = dict(mask.new_response)
                applied += 1
                if changed is not None:
                    changed.append(live[k])
    return applied


class ToolOutputMaskingProcessor(BaseLlmRequestProcessor):
    """Masks old tool outputs in the request and in the live session (design seam)."""

    name = "gcli_tool_output_masking"

    def __init__(
        self,
        service: ToolOutputMaskingService,
        on_masked: Callable[[list[types.FunctionResponse]], None] | None = None,
    ) -> None:
        self._service = service
        self._on_masked = on_masked

    async def run_async(
        self, invocation_context: InvocationContext, llm_request: LlmRequest
    ) -> AsyncGenerator[Event, None]:
        original = llm_request.contents
        cache = HISTORY_CACHE.get()
        seen = cache.seen_before(original) if cache is not None else 0
        result = self._service.mask(original, seen)
        if result.masked:
            llm_request.contents = result.contents
            changed: list[types.FunctionResponse] = []
            events = invocation_context.session.events
            applied = write_back_masks(events, result, original, changed)
            touch = getattr(invocation_context.session_service, "touch", None)
            if applied and touch is not None:
                touch(invocation_context.session.id)  # the kept history is stale now
            if changed and self._on_masked is not None:
                self._on_masked(changed)  # the record follows (updateMessagesFromHistory)
            logger.info(
                "masked %d tool outputs (%d in the session), ~%d tokens saved",
                len(result.masked),
                applied,
                result.tokens_saved,
            )
        return
        yield  # an async generator that yields nothing


def _media_key(response: types.FunctionResponse) -> tuple[str, str]:
    body = {k: v for k, v in (response.response or {}).items() if k != MEDIA_KEY}
    return str(response.name), json.dumps(body, sort_keys=True, default=str)


def _move_media(contents: Sequence[types.Content]) -> dict[tuple[str, str], list[types.Part]]:
    """Function responses carrying media (`MEDIA_KEY`): the media leave the response
    (a new dict: the old one may be shared) and follow it as inline data parts of the
    same content. Returns the parts added, by response."""
    moved: dict[tuple[str, str], list[types.Part]] = {}
    for content in contents:
        parts = content.parts or []
        extra: list[types.Part] = []
        for part in parts:
            response = part.function_response
            if response is None or not isinstance(response.response, dict):
                continue
            if MEDIA_KEY not in response.response:
                continue
            media = response.response[MEDIA_KEY]
            key = _media_key(response)
            response.response = {k: v for k, v in response.response.items() if k != MEDIA_KEY}
            blobs = []
            for item in media if isinstance(media, list) else ():
                try:
                    data = base64.b64decode(str(item.get("data", "")), validate=True)
                except (ValueError, binascii.Error):
                    continue
                blob = types.Blob(data=data, mime_type=item.get("mimeType"))
                blobs.append(types.Part(inline_data=blob))
            moved[key] = blobs
            extra += blobs
        if extra:
            content.parts = [*parts, *extra]
    return moved


class ToolMediaProcessor(BaseLlmRequestProcessor):
    """Images and audio from tools reach the model as media, not text (Gemini CLI sends
    them as inline data beside the function response). Runs first; the move is made in
    the live session events too, so it happens once and is kept."""

    name = "gcli_tool_media"

    def __init__(self) -> None:
        # Events already looked at, per session: (count, id of the last one). Events
        # are only appended (a rebuild changes the last id), so each is scanned once.
        self._seen: dict[str, tuple[int, str]] = {}

    async def run_async(
        self, invocation_context: InvocationContext, llm_request: LlmRequest
    ) -> AsyncGenerator[Event, None]:
        events = invocation_context.session.events
        count, last = self._seen.get(invocation_context.session.id, (0, ""))
        if count > len(events) or (count and events[count - 1].id != last):
            count = 0
        live = [e.content for e in events[count:] if e.content is not None]
        if events:
            self._seen[invocation_context.session.id] = (len(events), events[-1].id)
        moved = _move_media(live)
        cache = HISTORY_CACHE.get()
        # Kept history seen by an earlier call was moved then (in place): skip it.
        seen = cache.seen_before(llm_request.contents) if cache is not None else 0
        _move_media(llm_request.contents[seen:])
        if moved:  # the request was built before the move: give it the same parts
            for content in llm_request.contents:
                parts = content.parts or []
                if any(p.inline_data is not None for p in parts):
                    continue
                extra = [
                    blob
                    for p in parts
                    if p.function_response is not None
                    for blob in moved.get(_media_key(p.function_response), [])
                ]
                if extra:
                    content.parts = [*parts, *extra]
            logger.info("tool media moved into inline data parts")
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


def gcli_processors(
    state: ModelState,
    masking: ToolOutputMaskingService | None,
    on_masked: Callable[[list[types.FunctionResponse]], None] | None = None,
) -> list[Any]:
    """The ordered list: tool media, masking (if enabled), then routing."""
    processors: list[Any] = [ToolMediaProcessor()]
    if masking is not None:
        processors.append(ToolOutputMaskingProcessor(masking, on_masked))
    processors.append(GcliRoutingProcessor(state))
    return processors
