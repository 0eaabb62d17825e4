"""Model answers Gemini CLI survives (issues 19.4 and 18.6), on recorded-shape
responses from the fake Gemini API, through the real process: an unusable answer
(MALFORMED_FUNCTION_CALL, empty, thoughts only) is retried as Gemini CLI retries it
and then told, never a JSON-RPC error; a blocked prompt says why; metadata-only,
thought-only and empty-candidate chunks pass; other finish reasons are told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.resilience_harness import PRO, MakeAgent, start, user_texts
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    Reply,
    blocked_prompt_response,
    chunk,
    empty_answer_response,
    malformed_function_call_response,
    metadata_chunk,
    text_part,
    text_response,
    thought_part,
    usage,
)

pytestmark = pytest.mark.e2e


async def test_a_malformed_function_call_is_retried_and_the_answer_arrives(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(malformed_function_call_response(), text_response("Here it is."))
    agent = await start(make_agent, tmp_path, fake_gemini)

    assert await agent.prompt("read a.txt") == {"stopReason": "end_turn"}
    text = agent.text()
    assert "malformed tool call" in text and "Retrying" in text
    assert text.endswith("Here it is.")
    first, second = fake_gemini.generate_requests
    assert second.contents == first.contents  # the failed attempt left nothing behind


async def test_an_answer_malformed_every_time_is_told_and_the_session_goes_on(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(*[malformed_function_call_response()] * 4, text_response("fine now"))
    agent = await start(make_agent, tmp_path, fake_gemini)

    assert await agent.prompt("read a.txt") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == [PRO] * 4  # Gemini CLI: 4 attempts in all
    assert "malformed tool call, every time it was asked" in agent.text()
    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("fine now")
    assert user_texts(fake_gemini.generate_requests[-1]) == ["read a.txt", "again"]


async def test_an_empty_answer_is_retried_with_a_nudge_then_told(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(empty_answer_response(), text_response("An answer."))
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    assert "answer was empty. Retrying" in agent.text()
    assert agent.text().endswith("An answer.")
    first, second = fake_gemini.generate_requests
    assert "empty response" not in first.system_instruction_text
    assert "empty response" in second.system_instruction_text

    fake_gemini.add(*[empty_answer_response()] * 4)
    assert await agent.prompt("hello again") == {"stopReason": "end_turn"}
    assert "The model returned an empty answer" in agent.text()
    assert len(fake_gemini.generate_requests) == 6


async def test_thoughts_without_an_answer_are_retried(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        empty_answer_response(thoughts=["pondering"]), text_response("Decided.", thoughts=["ok"])
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("decide") == {"stopReason": "end_turn"}
    assert "held thoughts but no answer" in agent.text()
    assert agent.text().endswith("Decided.")
    thoughts = agent.client.text_of(agent.session_id, "agent_thought_chunk")
    assert "pondering" in thoughts and "ok" in thoughts
    assert "final answer" in fake_gemini.generate_requests[1].system_instruction_text


async def test_a_blocked_prompt_says_why_and_is_not_retried(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(blocked_prompt_response("PROHIBITED_CONTENT"), text_response("ok"))
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("something bad") == {"stopReason": "refusal"}
    assert "The prompt was blocked by the Gemini API (PROHIBITED_CONTENT)" in agent.text()
    assert len(fake_gemini.generate_requests) == 1
    assert await agent.prompt("something fine") == {"stopReason": "end_turn"}
    assert agent.text().endswith("ok")


async def test_metadata_only_thought_only_and_empty_candidate_chunks_pass(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    steps = (
        metadata_chunk(),
        chunk([thought_part("let me see")]),
        {"candidates": [], "usageMetadata": usage()},
        chunk([text_part("The ")]),
        chunk([text_part("answer.")]),
        chunk([text_part("")], finish="STOP"),
        metadata_chunk(usage(12, 7)),
    )
    fake_gemini.add(Reply(steps=steps))
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("what?") == {"stopReason": "end_turn"}
    assert agent.text() == "The answer."
    assert agent.client.text_of(agent.session_id, "agent_thought_chunk") == "let me see"
    assert len(fake_gemini.generate_requests) == 1
    [last_usage] = agent.updates("usage_update")[-1:]
    assert last_usage["used"] == 19


@pytest.mark.parametrize(
    ("finish", "stop", "told"),
    [
        ("MAX_TOKENS", "max_tokens", "output token limit"),
        ("SAFETY", "refusal", "safety settings"),
        ("OTHER", "end_turn", "finish reason OTHER"),
        ("LANGUAGE", "refusal", "language is not supported"),
    ],
)
async def test_an_answer_that_stopped_for_another_reason_says_why(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake_gemini: FakeGeminiServer,
    finish: str,
    stop: str,
    told: str,
) -> None:
    fake_gemini.add(text_response(["Part of ", "it"], finish=finish))
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("go") == {"stopReason": stop}
    assert agent.text().startswith("Part of it")
    assert told in agent.text()
    assert len(fake_gemini.generate_requests) == 1


async def test_an_empty_answer_blocked_by_safety_is_retried_then_a_refusal(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(*[empty_answer_response("SAFETY")] * 4)
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("go") == {"stopReason": "refusal"}
    assert "blocked by safety settings" in agent.text()
    assert len(fake_gemini.generate_requests) == 4


async def test_the_retry_notice_of_a_broken_stream_names_its_reason(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        text_response(["The stream ", "broke"]).drop_after(1), text_response("Whole answer.")
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    assert await agent.prompt("go") == {"stopReason": "end_turn"}
    [notice] = [
        u["content"]["text"]
        for u in agent.updates("agent_message_chunk")
        if "Retrying" in u["content"]["text"]
    ]
    assert "interrupted (" in notice and "()" not in notice and ": ." not in notice
    assert agent.text().endswith("Whole answer.")
