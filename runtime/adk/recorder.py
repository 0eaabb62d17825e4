"""SessionRecorder: what a session records, and when (design: ChatRecordingService
`recordMessage` on final, non-partial events).

Two sources feed one record. The session service hands over every non-partial ADK
event as it is appended (`on_adk_event`): the user's turn, each consolidated model
response (text, thoughts, function calls with their exact parts, tokens, model),
each batch of function responses. The protocol's events (`observe`) add what only
the engine's side knows: which prompt the user typed (as opposed to a guard's
nudge), each tool call's title, kind, locations, diff and final status, the title,
model choice, mode and plan, notices and errors shown to the user.

The answer being streamed reaches the record too, so a `kill -9` mid-answer loses
at most the last half second of what the user saw: a timer armed by the first
unrecorded chunk writes the text so far every `PARTIAL_FLUSH_S` (one write per
interval, not per chunk) as a `partial` gemini message, shown by a replay and
never sent back to the model; the consolidated answer then takes that message's
id, replacing it (last write wins). A retry notice seals the part streamed before
it (the retried answer will not contain it), so a replay shows what was seen.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from google.adk.events.event import Event
from google.genai import types

from runtime.host import PermissionOutcome, PermissionRequest
from runtime.protocol import (
    TODOS_PLAN_ID,
    AgentEndEvent,
    AgentEvent,
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PlanEvent,
    SessionUpdateEvent,
    TextPart,
    ToolDisplay,
    ToolRequestEvent,
    ToolResponseEvent,
    UsageEvent,
)
from runtime.services.record import (
    GeminiMessage,
    Message,
    NoticeMessage,
    UserMessage,
    new_message_id,
    tool_calls,
)
from runtime.services.recording import ChatRecordingService

logger = logging.getLogger(__name__)

PARTIAL_FLUSH_S = 0.5
"""The streamed answer is in the record at most this long after the user saw it."""


def dump_part(part: types.Part) -> dict[str, Any]:
    return part.model_dump(mode="json", exclude_none=True, by_alias=True)


def _display_fields(display: ToolDisplay) -> dict[str, Any]:
    return {
        "displayName": display.title,
        "kind": display.kind,
        "locations": [loc.model_dump(exclude_none=True) for loc in display.locations],
        "display": [item.model_dump(mode="json") for item in display.content],
    }


class SessionRecorder:
    """Feeds one session's ChatRecordingService (see the module docstring)."""

    def __init__(
        self,
        recording: ChatRecordingService,
        on_metadata: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.recording = recording
        self._on_metadata = on_metadata
        self._prompt_text: str | None = None
        self._call_message: dict[str, str] = {}  # function call id → gemini message id
        self._last_model: GeminiMessage | None = None
        self._unrecorded: list[str] = []  # agent text streamed since the last model record
        self._partial_id: str | None = None  # the record message holding `_unrecorded`
        self._flush: asyncio.TimerHandle | None = None
        self.switch(recording)

    def switch(self, recording: ChatRecordingService) -> None:
        """Record into `recording` from now on (the session's lease taken back after
        another process drove it, `runtime.session.handover`): what was kept of the old
        record goes, calls are found in the new one."""
        self._streamed_done()
        self.recording = recording
        self._prompt_text = None
        self._last_model = None
        self._call_message = {
            str(call.get("id")): message["id"]
            for message in recording.messages
            for call in tool_calls(message)
        }

    # ------------------------------------------------------------ ADK events (history)

    def on_adk_event(self, event: Event) -> None:
        try:
            self._on_adk_event(event)
        except Exception:  # noqa: BLE001 - recording must never break a turn
            logger.exception("recording an event failed")

    def _on_adk_event(self, event: Event) -> None:
        content = event.content
        if content is None or not content.parts or event.partial:
            return
        if event.author == "user":
            self._user(event, content)
            return
        responses = [p.function_response for p in content.parts if p.function_response]
        if responses:
            self._responses(responses)
        elif content.role == "model":
            self._model(event, content)

    def _user(self, event: Event, content: types.Content) -> None:
        prompt, self._prompt_text = self._prompt_text, None
        message: UserMessage = {
            "id": event.id,
            "type": "user",
            "content": [dump_part(p) for p in content.parts or ()],
        }
        if prompt is not None:
            message["displayContent"] = prompt
        else:
            message["synthetic"] = True  # a guard's message (a loop nudge), not typed
        self.recording.record_message(message)

    def _model(self, event: Event, content: types.Content) -> None:
        parts = content.parts or []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        message_id = self._partial_id or event.id
        thoughts = [{"subject": "", "description": p.text} for p in parts if p.text and p.thought]
        calls = []
        for part in parts:
            call = part.function_call
            if call is None:
                continue
            call_id = call.id or f"call-{len(self._call_message)}"
            calls.append(
                {"id": call_id, "name": call.name, "args": call.args or {}, "status": "executing"}
            )
            self._call_message[call_id] = message_id
        message: GeminiMessage = {
            "id": message_id,  # the answer replaces its streamed part
            "type": "gemini",
            "content": text,
            "parts": [dump_part(p) for p in parts],
        }
        if thoughts:
            message["thoughts"] = thoughts
        if calls:
            message["toolCalls"] = calls
        if event.model_version:
            message["model"] = event.model_version
        usage = event.usage_metadata
        if usage is not None:
            message["tokens"] = {
                "input": usage.prompt_token_count or 0,
                "output": usage.candidates_token_count or 0,
                "cached": usage.cached_content_token_count or 0,
                "thoughts": usage.thoughts_token_count or 0,
                "total": usage.total_token_count or 0,
            }
        self._last_model = message
        self._streamed_done()
        self.recording.record_message(message)

    # ------------------------------------------------------------ the answer being streamed

    def _arm_flush(self) -> None:
        if self._flush is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): written at the end only
            return
        self._flush = loop.call_later(PARTIAL_FLUSH_S, self._flush_due)

    def _flush_due(self) -> None:
        self._flush = None
        if self._unrecorded:
            try:
                self._write_partial()
            except Exception:  # noqa: BLE001 - recording must never break a turn
                logger.exception("recording the streamed answer failed")

    def _write_partial(self) -> None:
        if self._partial_id is None:
            self._partial_id = new_message_id()
        text = "".join(self._unrecorded)
        partial: GeminiMessage = {
            "id": self._partial_id,
            "type": "gemini",
            "content": text,
            "partial": True,
        }
        self.recording.record_message(partial)

    def _seal(self) -> None:
        """A retry follows: what was streamed so far stays in the record as seen (the
        retried answer will not contain it), and the next text starts a new part."""
        if self._unrecorded:
            self._write_partial()
        self._streamed_done()

    def _streamed_done(self) -> None:
        """The streamed text is recorded for good (as an answer, or as partial at the end)."""
        self._unrecorded.clear()
        self._partial_id = None
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def _tool_done(self, event: ToolResponseEvent) -> None:
        """A call's result: its status, display and output on the recorded call."""
        found = self._call(event.request_id)
        if found is None:
            return
        message, call = found
        status = (event.data or {}).get("status")
        call["status"] = (
            "cancelled" if status == "cancelled" else "error" if event.is_error else "success"
        )
        if event.display is not None:
            call.update(_display_fields(event.display))
        output = (event.data or {}).get("output")
        if isinstance(output, str):
            call["resultDisplay"] = output[:2000]
        raw = (event.data or {}).get("raw_output")
        if isinstance(raw, dict) and isinstance(raw.get("subagentSessionId"), str):
            call["subagent"] = raw  # its session, title, task, end: replayed as a child
        self.recording.record_message(message)

    def _session_facts(self, event: SessionUpdateEvent) -> None:
        """Title, model, mode and model choice into the record's metadata."""
        fields: dict[str, Any] = {}
        if event.title:
            fields["title"] = event.title
        if event.model:
            fields["model"] = event.model
        for key, value in (event.config or {}).items():
            if key == "mode":
                fields["mode"] = value
            elif key == "model":
                fields["modelChoice"] = value
        if fields:
            self.recording.set_metadata(**fields)
            if self._on_metadata is not None:
                self._on_metadata(self.recording.metadata)

    def _plan(self, event: PlanEvent) -> None:
        """The last plan's entries (`plan`) and the current plans by id (`plans`: the
        todo list and the latest plan file, entries and Markdown; a cleared list leaves)."""
        entries = [e.model_dump() for e in event.entries]
        plans = dict(self.recording.metadata.get("plans") or {})
        if event.plan_id != TODOS_PLAN_ID:  # a plan file replaces the one before
            plans = {k: v for k, v in plans.items() if k == TODOS_PLAN_ID}
        if entries or event.markdown is not None:
            plans[event.plan_id] = {"entries": entries, "markdown": event.markdown}
        else:
            plans.pop(event.plan_id, None)
        self.recording.set_metadata(plan=entries, plans=plans)

    def _usage(self, event: UsageEvent) -> None:
        """Tokens of the last model response, when its consolidated event had none."""
        message = self._last_model
        if message is None or message.get("tokens"):
            return
        message["tokens"] = {
            "input": event.input_tokens or 0,
            "output": event.output_tokens or 0,
            "cached": event.cached_tokens or 0,
        }
        if event.model and not message.get("model"):
            message["model"] = event.model
        self.recording.record_message(message)

    def _responses(self, responses: list[types.FunctionResponse]) -> None:
        touched: dict[str, Message] = {}
        for response in responses:
            found = self._call(response.id or "")
            if found is None:
                continue
            message, call = found
            call["result"] = [dump_part(types.Part(function_response=response))]
            if call.get("status") == "executing":
                error = isinstance(response.response, dict) and "error" in response.response
                call["status"] = "error" if error else "success"
            touched[message["id"]] = message
        for message in touched.values():
            self.recording.record_message(message)

    def _call(self, call_id: str) -> tuple[Message, dict[str, Any]] | None:
        message_id = self._call_message.get(call_id)
        message = self.recording.message(message_id) if message_id else None
        if message is None:
            return None
        for call in tool_calls(message):
            if call.get("id") == call_id:
                return message, call
        return None

    def permission(self, request: PermissionRequest, outcome: PermissionOutcome) -> None:
        """The question asked about a call and the user's answer (None: cancelled), kept
        on the recorded call so a reloaded session shows the answered card."""
        try:
            found = self._call(request.tool_call_id)
            if found is None:
                return
            message, call = found
            call["permission"] = {
                "title": request.title,
                "options": [
                    {"optionId": o.option_id, "name": o.name, "kind": o.kind}
                    for o in request.options
                ],
                "answer": outcome.option_id,
            }
            if outcome.modified is not None:  # allowed with the user's changes (issue 36)
                call["permission"]["modified"] = True
            self.recording.record_message(message)
        except Exception:  # noqa: BLE001 - recording must never break a turn
            logger.exception("recording a permission answer failed")

    def masked(self, responses: list[types.FunctionResponse]) -> None:
        """Masking replaced these responses in the live history: the record follows
        (design: `updateMessagesFromHistory`), so a reloaded session stays masked."""
        self._responses(responses)

    # ------------------------------------------------------------ protocol events

    def observe(self, event: AgentEvent) -> None:
        try:
            self._observe(event)
        except Exception:  # noqa: BLE001 - recording must never break a turn
            logger.exception("recording %s failed", event.type)

    def _observe(self, event: AgentEvent) -> None:  # noqa: C901 - one branch per kind
        if event.thread_id is not None:  # a subagent's: its own session records it
            return
        if isinstance(event, MessageEvent) and event.role == "user":
            self._prompt_text = "".join(p.text for p in event.content if isinstance(p, TextPart))
        elif isinstance(event, MessageEvent) and event.role == "agent":
            texts = [p.text for p in event.content if isinstance(p, TextPart)]
            if texts:
                self._unrecorded += texts
                self._arm_flush()
        elif isinstance(event, AgentEndEvent) and self._unrecorded:
            # A cancelled (or cut) answer: what the user saw is kept for the replay;
            # the model never got it back in its history, so the rebuild skips it.
            text = "".join(self._unrecorded)
            last = self._last_model
            if last is None or last.get("content") != text:  # not a repeat of a recorded one
                self._write_partial()
            self._streamed_done()
        elif isinstance(event, AgentEndEvent):
            self._streamed_done()
        elif isinstance(event, ToolRequestEvent) and event.display is not None:
            found = self._call(event.request_id)
            if found is not None:
                found[1].update(_display_fields(event.display))
        elif isinstance(event, ToolResponseEvent):
            self._tool_done(event)
        elif isinstance(event, UsageEvent):
            self._usage(event)
        elif isinstance(event, SessionUpdateEvent):
            self._session_facts(event)
        elif isinstance(event, PlanEvent):
            self._plan(event)
        elif isinstance(event, NoticeEvent) and event.text:
            if event.retry:
                self._seal()
            self.recording.record_message(NoticeMessage(type="info", content=event.text))
        elif isinstance(event, ErrorEvent):
            level: Literal["error", "warning"] = "error" if event.fatal else "warning"
            self.recording.record_message(NoticeMessage(type=level, content=event.message))
