"""The event translator: ADK `Event` → `AgentEvent`s (design: adk-event-translator).

Model output reaches us twice: as `partial=True` deltas while it streams, then as
one consolidated `partial=False` event. Text and thoughts are taken from the
deltas only; the consolidated event contributes its text only when no delta
came before it (a non-streaming call), so nothing is counted twice. Function
calls and responses are not translated here: the scheduler emits the tool
events with their display. Usage comes from consolidated events; the finish
reason of the last one decides the stream's end reason, and an answer that
stopped for another reason than STOP says why in a notice (as Gemini CLI does),
never as a fatal error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from google.adk.events.event import Event
from google.genai import types

from runtime.adk.model import NOTICE_KEY
from runtime.models.catalog import context_window as context_window_of
from runtime.protocol import (
    AgentEndReason,
    AgentEvent,
    ContentPart,
    ErrorStatus,
    MessageEvent,
    NoticeEvent,
    TextPart,
    ThoughtPart,
    UsageEvent,
)

REFUSAL_REASONS = {
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
}

INVOCATION_ABORTED = "INVOCATION_ABORTED"

HTTP_TO_STATUS: dict[int, ErrorStatus] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def finish_to_end_reason(finish: str | None) -> AgentEndReason:
    if finish in (None, "", "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "completed"
    if finish == "MAX_TOKENS":
        return "max_budget"
    if finish in REFUSAL_REASONS:
        return "refusal"
    return "failed"


_STOPPED_BECAUSE = {
    "MAX_TOKENS": "it reached the output token limit",
    "SAFETY": "of safety settings",
    "RECITATION": "of the recitation (copyright) policy",
    "LANGUAGE": "the language is not supported",
    "BLOCKLIST": "it contained blocked terms",
    "PROHIBITED_CONTENT": "of prohibited content",
    "SPII": "of sensitive personal information",
    "MALFORMED_FUNCTION_CALL": "of a malformed tool call",
    "UNEXPECTED_TOOL_CALL": "of a call to a tool that was not offered",
    "IMAGE_SAFETY": "of image safety settings",
    "IMAGE_PROHIBITED_CONTENT": "of prohibited image content",
    "IMAGE_RECITATION": "of the image recitation policy",
    "NO_IMAGE": "no image was generated",
}


def _finish_notice(finish: str | None, message: str | None) -> str | None:
    """What the user is told about an answer that stopped for `finish` (None for a
    normal end)."""
    if finish_to_end_reason(finish) == "completed":
        return None
    because = _STOPPED_BECAUSE.get(finish or "", f"of finish reason {finish}")
    detail = f" ({message})" if message else ""
    return f"\n\n_The answer stopped because {because}{detail}._\n\n"


def _finish_name(value: object) -> str | None:
    if value is None:
        return None
    return getattr(value, "name", None) or str(value)


class _Ids(TypedDict):
    id: str
    stream_id: str


class AdkEventTranslator:
    """Stateful per stream. `make` stamps id/stream/timestamps onto each new event."""

    def __init__(
        self,
        stream_id: str,
        next_id: Callable[[], str],
        context_window: Callable[[str], int] = context_window_of,
    ) -> None:
        self._stream_id = stream_id
        self._next_id = next_id
        self._context_window = context_window
        self._saw_delta = False
        self._last_finish: str | None = None
        self.last_model: str | None = None

    def _base(self) -> _Ids:
        return {"id": self._next_id(), "stream_id": self._stream_id}

    def translate(self, event: Event) -> list[AgentEvent]:
        if event.author == "user" or event.error_code == INVOCATION_ABORTED:
            # ADK seals a run we aborted (cancel, limit, loop) with these; the
            # protocol itself reports why the stream stopped.
            return []
        out: list[AgentEvent] = []
        if event.model_version:
            self.last_model = event.model_version
        if event.partial:
            notice = (event.custom_metadata or {}).get(NOTICE_KEY)
            if notice:
                # the model is asked again: what it streamed so far is not part of the answer
                out.append(NoticeEvent(**self._base(), text=str(notice), retry=True))
            parts = self._message_parts(event.content)
            if parts:
                self._saw_delta = True
                out.append(MessageEvent(**self._base(), role="agent", content=tuple(parts)))
            return out
        if event.content and not self._saw_delta:
            parts = self._message_parts(event.content)
            if parts:
                out.append(MessageEvent(**self._base(), role="agent", content=tuple(parts)))
        if event.content and event.content.role == "model":
            self._saw_delta = False
        if event.error_code and event.finish_reason is None and not event.content:
            # ADK's record of an exception raised by the model call: the exception
            # itself reaches AdkAgentProtocol, which reports it once.
            return out
        if event.error_code or event.finish_reason:
            self._last_finish = _finish_name(event.finish_reason) or _finish_name(event.error_code)
        stopped = _finish_notice(self._last_finish, event.error_message)
        if event.error_code and stopped:
            # Gemini CLI shows why an answer stopped and ends the turn with what it got
            out.append(NoticeEvent(**self._base(), text=stopped))
        usage = event.usage_metadata
        if usage is not None:
            model = event.model_version or self.last_model or ""
            out.append(
                UsageEvent(
                    **self._base(),
                    model=model,
                    input_tokens=usage.prompt_token_count,
                    output_tokens=(usage.candidates_token_count or 0)
                    + (usage.thoughts_token_count or 0),
                    cached_tokens=usage.cached_content_token_count,
                    context_window=self._context_window(model),
                )
            )
        return out

    @staticmethod
    def _message_parts(content: types.Content | None) -> list[ContentPart]:
        parts: list[ContentPart] = []
        if content is None or not content.parts:
            return parts
        for part in content.parts:
            if part.text is None or part.function_call or part.function_response:
                continue
            if part.thought:
                parts.append(ThoughtPart(thought=part.text))
            elif part.text:
                parts.append(TextPart(text=part.text))
        return parts

    def end_reason(self) -> AgentEndReason:
        return finish_to_end_reason(self._last_finish)

    @property
    def finish_reason(self) -> str | None:
        return self._last_finish
