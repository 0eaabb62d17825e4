"""StreamCheck: Gemini CLI's judgement of a finished stream (runtime/adk/stream_check.py)."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from runtime.adk.stream_check import StreamCheck, answers_tool


def _chunk(**wire: Any) -> types.GenerateContentResponse:
    return types.GenerateContentResponse.model_validate(wire)


def _text(text: str, *, finish: str | None = None, thought: bool = False) -> Any:
    part: dict[str, Any] = {"text": text, **({"thought": True} if thought else {})}
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}}
    if finish:
        candidate["finishReason"] = finish
    return _chunk(candidates=[candidate])


def _kind(*chunks: types.GenerateContentResponse, tool_answer: bool = False) -> str | None:
    check = StreamCheck(answers_tool=tool_answer)
    for c in chunks:
        check.see(c)
    verdict = check.verdict()
    return None if verdict is None else verdict.kind


def test_a_text_answer_with_a_finish_reason_is_usable() -> None:
    assert (
        _kind(_chunk(usageMetadata={"promptTokenCount": 1}), _text("hi"), _text("", finish="STOP"))
        is None
    )


@pytest.mark.parametrize(
    ("chunks", "kind"),
    [
        ([_text("hi")], "NO_FINISH_REASON"),
        (
            [_chunk(candidates=[{"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL"}])],
            "MALFORMED_FUNCTION_CALL",
        ),
        ([_text("", finish="STOP")], "NO_RESPONSE_TEXT"),
        ([_text("\u200b<!-- x -->  ", finish="STOP")], "NO_RESPONSE_TEXT"),
        ([_text("hmm", thought=True), _text("", finish="STOP")], "THINKING_ONLY_RESPONSE"),
        ([_text("", finish="MAX_TOKENS")], "MAX_TOKENS_EXCEEDED"),
        ([_text("", finish="SAFETY")], "SAFETY_BLOCKED"),
        ([_chunk(promptFeedback={"blockReason": "SAFETY"})], "PROMPT_BLOCKED"),
        ([_chunk(candidates=[])], "NO_FINISH_REASON"),
    ],
)
def test_unusable_answers(chunks: list[types.GenerateContentResponse], kind: str) -> None:
    assert _kind(*chunks) == kind


def test_a_tool_call_is_always_usable_and_an_answer_to_a_tool_may_be_empty() -> None:
    call = _chunk(
        candidates=[{"content": {"role": "model", "parts": [{"functionCall": {"name": "f"}}]}}]
    )
    assert _kind(call) is None
    assert _kind(_text("", finish="STOP"), tool_answer=True) is None
    contents = [
        types.Content(role="user", parts=[types.Part.from_function_response(name="f", response={})])
    ]
    assert answers_tool(contents) and not answers_tool(
        [types.Content(role="user", parts=[types.Part(text="x")])]
    )


def test_a_blocked_prompt_is_told_with_its_reason_and_not_retried() -> None:
    check = StreamCheck()
    check.see(
        _chunk(promptFeedback={"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "no"})
    )
    verdict = check.verdict()
    assert verdict is not None and not verdict.retry and verdict.end_reason == "refusal"
    assert "PROHIBITED_CONTENT: no" in verdict.user_message
