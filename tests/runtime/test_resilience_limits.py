"""Per-prompt limits (issue #4), in-process: max turns, max tokens and max time stop the
prompt with their own end reason and a message naming the limit; the next prompt
counts afresh."""

from __future__ import annotations

from pathlib import Path

from runtime.config import Limits
from runtime.protocol import AgentEvent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
    usage,
)
from tests.runtime.resilience_harness import PRO, agent_text, end_of, errors, harness


def limit_message(events: list[AgentEvent]) -> str:
    (error,) = errors(events)
    assert not error.fatal
    return error.message


async def test_max_turns_stops_before_the_model_call_over_the_limit(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        function_call_response("list_directory", {"dir_path": "."}),
        function_call_response("read_file", {"file_path": "a.txt"}),
        text_response("never requested"),
        text_response("next prompt is fine"),
    )
    async with harness(tmp_path, fake_gemini, limits=Limits(max_turns=2)) as h:
        (h.workspace / "a.txt").write_text("a\n")
        events = await h.prompt("explore")
        end = end_of(events)
        assert end.reason == "max_turns"
        assert (end.data or {}).get("code") == "MAX_TURNS_EXCEEDED"
        message = limit_message(events)
        assert "limit of 2 model turns" in message and "--max-turns" in message
        assert fake_gemini.models_called == [PRO, PRO]  # the third call was never made

        after = await h.prompt("short one")
        assert end_of(after).reason == "completed"
        assert agent_text(after) == "never requested"  # the next reply in the script


async def test_max_tokens_stops_the_prompt_once_its_usage_is_over_the_limit(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        function_call_response("list_directory", {"dir_path": "."}, usage=usage(900, 200)),
        text_response("small", usage=usage(10, 5)),
    )
    async with harness(tmp_path, fake_gemini, limits=Limits(max_tokens=1000)) as h:
        events = await h.prompt("explore")
        end = end_of(events)
        assert end.reason == "max_budget"
        assert (end.data or {}).get("code") == "MAX_TOKENS_EXCEEDED"
        message = limit_message(events)
        assert "1,100 tokens" in message and "1,000" in message and "--max-tokens" in message
        assert len(fake_gemini.generate_requests) == 1

        after = await h.prompt("again")
        assert end_of(after).reason == "completed" and agent_text(after) == "small"


async def test_max_time_stops_a_prompt_that_runs_too_long(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response(["thinking ", "forever"]).hang_after(1, hang), text_response("ok")
    )
    async with harness(tmp_path, fake_gemini, limits=Limits(max_time_s=0.5)) as h:
        events = await h.prompt("take your time")
        hang.release()
        end = end_of(events)
        assert end.reason == "max_time"
        assert (end.data or {}).get("code") == "MAX_TIME_EXCEEDED"
        message = limit_message(events)
        assert "more than 0.5 s" in message and "--max-time" in message
        assert agent_text(events) == "thinking "

        after = await h.prompt("quick")
        assert end_of(after).reason == "completed" and agent_text(after) == "ok"
