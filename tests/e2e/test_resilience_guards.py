"""Loop detection and per-prompt limits over ACP (issue #4): a looping model is nudged
once and then stopped with a message and stopReason end_turn; --max-turns (or
model.maxSessionTurns), --max-tokens and --max-time stop a prompt with their stop
reasons and a message naming the limit. The session stays usable after each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.resilience_harness import MakeAgent, start, user_texts
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
    usage,
)

pytestmark = pytest.mark.e2e

NUDGE = "System: Potential loop detected. Details: Repeated tool call: read_file"


async def test_a_looping_model_is_nudged_then_stopped_with_end_turn(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        *[function_call_response("read_file", {"file_path": "same.txt"})] * 10,
        text_response("a fresh answer"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    (agent.workspace / "same.txt").write_text("nothing new\n")

    assert await agent.prompt("read same.txt until it changes") == {"stopReason": "end_turn"}
    requests = fake_gemini.generate_requests
    assert len(requests) == 10
    assert not any(NUDGE in t for r in requests[:5] for t in user_texts(r))
    assert user_texts(requests[5])[-1].startswith(NUDGE)  # first strike: the nudge
    text = agent.text()
    assert "loop" in text and "read_file" in text  # second strike: stopped, and told why

    assert await agent.prompt("something else") == {"stopReason": "end_turn"}
    assert agent.text().endswith("a fresh answer")


@pytest.mark.parametrize(
    ("args", "settings"),
    [
        pytest.param(["--max-turns", "2"], None, id="flag"),
        pytest.param([], json.dumps({"model": {"maxSessionTurns": 2}}), id="settings"),
    ],
)
async def test_max_turns_stops_with_max_turn_requests(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake_gemini: FakeGeminiServer,
    args: list[str],
    settings: str | None,
) -> None:
    fake_gemini.add(
        function_call_response("list_directory", {"dir_path": "."}),
        function_call_response("glob", {"pattern": "*.txt"}),
        text_response("short answer"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, args=args, settings=settings)

    assert await agent.prompt("explore") == {"stopReason": "max_turn_requests"}
    assert len(fake_gemini.generate_requests) == 2
    assert "limit of 2 model turns" in agent.text()

    assert await agent.prompt("just answer") == {"stopReason": "end_turn"}
    assert agent.text().endswith("short answer")


async def test_max_tokens_and_max_time_stop_the_prompt(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        function_call_response("list_directory", {"dir_path": "."}, usage=usage(4000, 500)),
        text_response(["slow ", "answer"]).hang_after(1, hang),
        text_response("quick answer", usage=usage(10, 5)),
    )
    agent = await start(
        make_agent, tmp_path, fake_gemini, args=["--max-tokens", "1000", "--max-time", "1"]
    )

    assert await agent.prompt("spend a lot") == {"stopReason": "max_tokens"}
    assert "4,500 tokens" in agent.text() and "1,000" in agent.text()
    assert len(fake_gemini.generate_requests) == 1

    # no ACP reason means "out of time": the turn ends, saying which limit stopped it
    assert await agent.prompt("take forever") == {"stopReason": "end_turn"}
    hang.release()
    assert "more than 1 s" in agent.text()

    assert await agent.prompt("be quick") == {"stopReason": "end_turn"}
    assert agent.text().endswith("quick answer")
