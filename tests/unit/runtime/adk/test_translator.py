"""The event translator: deltas vs the consolidated event, usage, errors, end reasons."""

from __future__ import annotations

import itertools

from google.adk.events.event import Event
from google.genai import types

from runtime.adk.translator import AdkEventTranslator, finish_to_end_reason
from runtime.protocol import (
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    TextPart,
    ThoughtPart,
    UsageEvent,
)


def _translator() -> AdkEventTranslator:
    counter = itertools.count(1)
    return AdkEventTranslator(
        "s1", lambda: f"s1-{next(counter)}", context_window=lambda model: 1000
    )


def _event(*parts: types.Part, partial: bool, **kw: object) -> Event:
    return Event(
        author="agent",
        invocation_id="inv",
        content=types.Content(role="model", parts=list(parts)),
        partial=partial,
        **kw,  # type: ignore[arg-type]
    )


def test_deltas_are_emitted_and_the_consolidated_text_is_not_counted_twice() -> None:
    tr = _translator()
    out = tr.translate(_event(types.Part(text="Hel"), partial=True))
    out += tr.translate(_event(types.Part(text="lo"), partial=True))
    out += tr.translate(
        _event(types.Part(text="Hello"), partial=False, finish_reason=types.FinishReason.STOP)
    )
    texts = [
        p.text
        for e in out
        if isinstance(e, MessageEvent)
        for p in e.content
        if isinstance(p, TextPart)
    ]
    assert texts == ["Hel", "lo"]
    assert tr.end_reason() == "completed"
    assert [e.id for e in out] == ["s1-1", "s1-2"]


def test_a_non_streamed_response_contributes_its_text_once() -> None:
    tr = _translator()
    out = tr.translate(_event(types.Part(text="whole answer"), partial=False))
    assert isinstance(out[0], MessageEvent)
    assert out[0].content == (TextPart(text="whole answer"),)


def test_thoughts_become_thought_parts() -> None:
    tr = _translator()
    out = tr.translate(_event(types.Part(text="pondering", thought=True), partial=True))
    assert isinstance(out[0], MessageEvent)
    assert out[0].content == (ThoughtPart(thought="pondering"),)


def test_function_calls_are_left_to_the_scheduler() -> None:
    tr = _translator()
    call = types.Part(function_call=types.FunctionCall(name="read_file", args={"file_path": "a"}))
    assert tr.translate(_event(call, partial=False)) == []


def test_usage_from_the_consolidated_event() -> None:
    tr = _translator()
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=100,
        candidates_token_count=7,
        thoughts_token_count=3,
        cached_content_token_count=50,
    )
    out = tr.translate(
        _event(types.Part(text="x"), partial=False, usage_metadata=usage, model_version="m1")
    )
    (u,) = [e for e in out if isinstance(e, UsageEvent)]
    assert (u.model, u.input_tokens, u.output_tokens, u.cached_tokens, u.context_window) == (
        "m1",
        100,
        10,
        50,
        1000,
    )


def test_user_events_are_ignored() -> None:
    tr = _translator()
    event = Event(
        author="user",
        invocation_id="i",
        content=types.Content(role="user", parts=[types.Part(text="hi")]),
    )
    assert tr.translate(event) == []


def test_a_finish_reason_is_told_never_a_fatal_error_and_refusals_map_to_refusal() -> None:
    tr = _translator()
    out = tr.translate(
        Event(
            author="agent",
            invocation_id="i",
            error_code="MALFORMED_FUNCTION_CALL",
            error_message="bad",
            finish_reason=types.FinishReason.MALFORMED_FUNCTION_CALL,
        )
    )
    assert not any(isinstance(e, ErrorEvent) for e in out)
    [notice] = [e for e in out if isinstance(e, NoticeEvent)]
    assert "malformed tool call (bad)" in notice.text
    assert tr.end_reason() == "failed"
    raised = Event(
        author="agent", invocation_id="i", error_code="INVALID_ARGUMENT", error_message="400"
    )
    assert _translator().translate(raised) == []  # the exception itself is reported by the protocol
    assert finish_to_end_reason("SAFETY") == "refusal"
    assert finish_to_end_reason("MAX_TOKENS") == "max_budget"
    assert finish_to_end_reason(None) == "completed"
    assert finish_to_end_reason("OTHER") == "failed"


def test_the_context_window_comes_from_the_model_table() -> None:
    from runtime.models.catalog import context_window

    assert context_window("gemini-2.5-pro") == 1_048_576
    assert context_window("models/gemini-1.5-pro-002") == 2_097_152
    assert context_window("gemini-2.0-flash-preview-image-generation") == 32_000
    assert context_window("some-future-model") == 1_048_576
