"""LoopDetectionService: tool-call and content detectors, strikes, the LLM check schedule."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator

import pytest
from google.genai import types

from runtime.models.content_generator import ContentGenerator
from runtime.services.loop_detection import (
    LlmLoopCheck,
    LoopDetectionService,
    LoopVerdict,
    ToolCallEvent,
    tool_call_key,
)

NUDGE_PREFIX = "System: Potential loop detected. Details: "
NUDGE_SUFFIX = (
    ". Please take a step back and confirm you're making forward progress. If not, take a "
    "step back, analyze your previous actions and rethink how you're approaching the problem. "
    "Avoid repeating the same tool calls or responses without new results."
)

# 50 characters exactly, so one repetition is one chunk
SENTENCE = "The quick brown fox jumps over the lazy dog again. "[:50]


def call(name: str = "read_file", **args: object) -> ToolCallEvent:
    return ToolCallEvent(name, dict(args) or {"path": "a.txt"})


def non_repeating(length: int) -> str:
    """Text in which no 50-character chunk occurs twice."""
    digests = (hashlib.sha256(str(i).encode()).hexdigest() for i in range(length // 64 + 1))
    return "".join(digests)[:length]


def feed_text(service: LoopDetectionService, text: str, step: int = 7) -> LoopVerdict | None:
    """Stream `text` in small deltas; returns the first verdict."""
    for i in range(0, len(text), step):
        verdict = service.add_and_check(text[i : i + step])
        if verdict is not None:
            return verdict
    return None


# ------------------------------------------------------------------- tool calls


def test_five_identical_tool_calls_nudge_with_exact_text() -> None:
    service = LoopDetectionService()
    for _ in range(4):
        assert service.add_and_check(call()) is None
    verdict = service.add_and_check(call())
    assert verdict is not None
    assert verdict.kind == "nudge" and verdict.source == "tool_call"
    assert verdict.detail == 'Repeated tool call: read_file with arguments {"path":"a.txt"}'
    assert verdict.nudge_text == NUDGE_PREFIX + verdict.detail + NUDGE_SUFFIX


def test_second_detection_terminates_and_latches_until_reset() -> None:
    service = LoopDetectionService()
    verdicts = [service.add_and_check(call()) for _ in range(10)]
    assert [v.kind if v else None for v in verdicts] == [None] * 4 + ["nudge"] + [None] * 4 + [
        "terminate"
    ]
    assert service.terminated and service.strikes == 2
    again = service.add_and_check("anything")
    assert again is not None and again.kind == "terminate"
    service.reset()
    assert not service.terminated and service.strikes == 0
    assert service.add_and_check(call()) is None


def test_different_arguments_do_not_count() -> None:
    service = LoopDetectionService()
    for i in range(20):
        assert service.add_and_check(call(path=f"{i}.txt")) is None


def test_an_interruption_restarts_the_count() -> None:
    service = LoopDetectionService()
    for _ in range(4):
        service.add_and_check(call())
    assert service.add_and_check(call("glob", pattern="*")) is None
    for _ in range(4):
        assert service.add_and_check(call()) is None
    assert service.add_and_check(call()) is not None


@pytest.mark.parametrize("length", [2, 3, 4, 5])
def test_cycles_repeated_five_times(length: int) -> None:
    service = LoopDetectionService()
    cycle = [call("tool", step=i) for i in range(length)]
    events = cycle * 5
    verdicts = [service.add_and_check(e) for e in events]
    assert all(v is None for v in verdicts[:-1])
    assert verdicts[-1] is not None and verdicts[-1].kind == "nudge"
    assert (
        verdicts[-1].detail
        == 'Repeated tool call: tool with arguments {"step":' + str(length - 1) + "}"
    )


def test_cycle_of_six_is_not_detected() -> None:
    service = LoopDetectionService()
    cycle = [call("tool", step=i) for i in range(6)]
    assert all(service.add_and_check(e) is None for e in cycle * 5)


def test_genai_function_calls_are_accepted() -> None:
    service = LoopDetectionService()
    fc = types.FunctionCall(name="glob", args={"pattern": "*.py"})
    verdicts = [service.add_and_check(fc) for _ in range(5)]
    assert verdicts[-1] is not None
    assert verdicts[-1].detail == 'Repeated tool call: glob with arguments {"pattern":"*.py"}'


def test_tool_call_key_is_sha256_of_name_and_json() -> None:
    expected = hashlib.sha256(b'read_file:{"path":"a.txt"}').hexdigest()
    assert tool_call_key("read_file", {"path": "a.txt"}) == expected


# ---------------------------------------------------------------------- content


def test_repeated_content_nudges_with_the_chunk() -> None:
    service = LoopDetectionService()
    verdict = feed_text(service, SENTENCE * 12)
    assert verdict is not None and verdict.kind == "nudge" and verdict.source == "content"
    assert verdict.detail == f'Repeating content detected: "{SENTENCE}"'


def test_content_needs_ten_repeats() -> None:
    service = LoopDetectionService()
    # 9 full repeats plus 49 chars: the 10th occurrence of the first chunk is incomplete
    assert feed_text(service, SENTENCE * 9 + SENTENCE[:49]) is None
    assert service.add_and_check(SENTENCE[49]) is not None


def test_repeats_spaced_more_than_250_chars_are_not_a_loop() -> None:
    service = LoopDetectionService()
    assert feed_text(service, (SENTENCE + non_repeating(251)) * 11) is None


def test_repeats_spaced_exactly_250_chars_are_a_loop() -> None:
    service = LoopDetectionService()
    assert feed_text(service, (SENTENCE + non_repeating(200)) * 11) is not None


def test_tool_call_resets_content_tracking() -> None:
    service = LoopDetectionService()
    assert feed_text(service, SENTENCE * 9) is None
    assert service.add_and_check(call("glob", pattern="x")) is None
    assert feed_text(service, SENTENCE * 9) is None


@pytest.mark.parametrize(
    "marker",
    ["- item ", "* item ", "1. item ", "# Heading ", "> quote ", "| a | b | ", "+---+ "],
)
def test_markdown_structure_resets_content_tracking(marker: str) -> None:
    service = LoopDetectionService()
    for _ in range(30):
        assert service.add_and_check("\n" + marker + SENTENCE) is None


def test_rules_are_ignored() -> None:
    service = LoopDetectionService()
    for _ in range(40):
        assert service.add_and_check("-" * 50) is None


def test_code_blocks_are_not_tracked() -> None:
    service = LoopDetectionService()
    assert service.add_and_check("```python\n") is None
    assert feed_text(service, SENTENCE * 20) is None
    assert service.add_and_check("```\n") is None
    assert feed_text(service, SENTENCE * 12) is not None


def test_history_is_bounded_to_5000_chars() -> None:
    service = LoopDetectionService()
    text = "".join(f"{i:05d} distinct words, " for i in range(600))  # 12 600 chars, no loop
    assert feed_text(service, text, step=97) is None


def test_content_then_tool_strikes_share_the_counter() -> None:
    service = LoopDetectionService()
    first = feed_text(service, SENTENCE * 12)
    assert first is not None and first.kind == "nudge"
    verdicts = [service.add_and_check(call()) for _ in range(5)]
    assert verdicts[-1] is not None and verdicts[-1].kind == "terminate"


def test_disabled_service_detects_nothing() -> None:
    service = LoopDetectionService()
    service.disable()
    assert all(service.add_and_check(call()) is None for _ in range(10))


# ---------------------------------------------------------------------- LLM check


class JudgeGenerator(ContentGenerator):
    """Answers each judge call with the next scripted confidence (or raw text)."""

    def __init__(self, *answers: float | str) -> None:
        self.answers = list(answers)
        self.requests: list[list[types.Content]] = []

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        self.requests.append(contents)
        answer = self.answers.pop(0) if self.answers else "not json"
        text = (
            answer
            if isinstance(answer, str)
            else json.dumps(
                {
                    "unproductive_state_analysis": "It keeps reading the same file.",
                    "unproductive_state_confidence": answer,
                }
            )
        )
        part = types.Part(text=text)
        return types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=[part]))]
        )

    def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        raise AssertionError("not used")


HISTORY = [
    types.Content(role="user", parts=[types.Part(text="please fix the tests")]),
    types.Content(role="model", parts=[types.Part(text="looking")]),
]


async def check_turns(service: LoopDetectionService, count: int) -> list[int]:
    """Run `count` turns; returns the (1-based) turns that produced a verdict."""
    hits = []
    for turn in range(1, count + 1):
        if await service.turn_started(HISTORY) is not None:
            hits.append(turn)
    return hits


async def test_llm_check_every_10_turns_from_turn_30() -> None:
    judge = JudgeGenerator()  # unusable answers: the interval stays at 10
    service = LoopDetectionService(llm_check=LlmLoopCheck(judge))
    assert await check_turns(service, 29) == []
    assert judge.requests == []
    await check_turns(service, 21)  # turns 30..50
    assert len(judge.requests) == 3  # 30, 40, 50


@pytest.mark.parametrize(("confidence", "second_check"), [(0.1, 44), (0.5, 40), (0.85, 37)])
async def test_llm_check_interval_adapts(confidence: float, second_check: int) -> None:
    judge = JudgeGenerator(confidence, confidence)
    check = LlmLoopCheck(judge)
    service = LoopDetectionService(llm_check=check)
    await check_turns(service, 30)
    assert len(judge.requests) == 1
    await check_turns(service, second_check - 31)
    assert len(judge.requests) == 1
    await check_turns(service, 1)
    assert len(judge.requests) == 2


async def test_llm_detection_strikes() -> None:
    judge = JudgeGenerator(0.95, 0.9)
    service = LoopDetectionService(llm_check=LlmLoopCheck(judge))
    hits = []
    for turn in range(1, 41):
        verdict = await service.turn_started(HISTORY)
        if verdict is not None:
            hits.append((turn, verdict.kind, verdict.source, verdict.detail))
    assert hits == [
        (30, "nudge", "llm", "It keeps reading the same file"),
        (40, "terminate", "llm", "It keeps reading the same file"),
    ]


async def test_llm_confidence_below_threshold_is_no_loop() -> None:
    service = LoopDetectionService(llm_check=LlmLoopCheck(JudgeGenerator(0.89)))
    assert await check_turns(service, 30) == []


async def test_llm_judge_gets_trimmed_history_and_the_task() -> None:
    judge = JudgeGenerator(0.0)
    history = [
        types.Content(
            role="user",
            parts=[types.Part(function_response=types.FunctionResponse(name="x", response={}))],
        ),
        *HISTORY,
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="read_file", args={}))],
        ),
    ]
    service = LoopDetectionService(llm_check=LlmLoopCheck(judge))
    for _ in range(30):
        await service.turn_started(history)
    (contents,) = judge.requests
    assert [p.text for c in contents[:2] for p in c.parts or ()] == [
        "please fix the tests",
        "looking",
    ]
    assert contents[-1].role == "user" and len(contents) == 3


async def test_reset_restarts_the_llm_schedule() -> None:
    judge = JudgeGenerator()
    service = LoopDetectionService(llm_check=LlmLoopCheck(judge))
    await check_turns(service, 29)
    service.reset()
    await check_turns(service, 29)
    assert judge.requests == []


async def test_turn_started_without_llm_check() -> None:
    assert await check_turns(LoopDetectionService(), 100) == []
