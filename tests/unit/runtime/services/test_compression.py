"""ChatCompressionService's two calls: the summary, then Gemini CLI's verification pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from google.genai import types

from runtime.models.content_generator import ContentGenerator
from runtime.services.compression import (
    VERIFY_REQUEST,
    ChatCompressionService,
    CompressionError,
)
from runtime.services.recording import Message


@dataclass
class Answers:
    """A generator answering `generate_content` from a list (an exception is raised)."""

    replies: list[str | Exception]
    requests: list[list[types.Content]] = field(default_factory=list)

    async def generate_content(self, *, model: str, contents: Any, config: Any) -> Any:
        self.requests.append(list(contents))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return types.GenerateContentResponse(
            candidates=[
                types.Candidate(content=types.Content(role="model", parts=[types.Part(text=reply)]))
            ]
        )


HISTORY = cast(
    list[Message],
    [
        {"id": "u1", "type": "user", "content": "one"},
        {"id": "g1", "type": "gemini", "content": "answer"},
    ],
)
CONTENTS = [
    [types.Content(role="user", parts=[types.Part(text="one")])],
    [types.Content(role="model", parts=[types.Part(text="answer")])],
]


async def compress(answers: Answers) -> str:
    service = ChatCompressionService(cast(ContentGenerator, answers))
    return (await service.compress(HISTORY, CONTENTS, "m", 100)).summary


async def test_the_verification_answer_is_the_summary_kept() -> None:
    answers = Answers(["<state_snapshot>a</state_snapshot>", "<state_snapshot>b</state_snapshot>"])
    assert await compress(answers) == "<state_snapshot>b</state_snapshot>"
    first, second = answers.requests
    assert second[: len(first)] == first
    assert second[-2].parts[0].text == "<state_snapshot>a</state_snapshot>"  # type: ignore[index]
    assert second[-1].parts[0].text == VERIFY_REQUEST  # type: ignore[index]


async def test_an_empty_verification_keeps_the_first_and_a_failed_one_changes_nothing() -> None:
    assert await compress(Answers(["<state_snapshot>a</state_snapshot>", ""])) == (
        "<state_snapshot>a</state_snapshot>"
    )
    with pytest.raises(CompressionError, match="verification"):
        await compress(Answers(["<state_snapshot>a</state_snapshot>", RuntimeError("down")]))
