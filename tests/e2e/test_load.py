"""Load (issue #8): 20 concurrent sessions × 10 prompts in ONE agent process, each
prompt with a tool call (read_file of the session's own file). No errors, no
cross-talk (each session sees only its own file and updates), p50/p99 printed."""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from pathlib import Path

import pytest

from tests.e2e.spine import MakeAgent, dirs, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    RecordedRequest,
    Reply,
    function_call_response,
    text_response,
)

pytestmark = pytest.mark.e2e

SESSIONS = 20
PROMPTS = 10


def _model(request: RecordedRequest) -> Reply:
    """read_file of the file the prompt names, then an answer quoting what it read."""
    last = request.contents[-1]
    for part in last.get("parts", []):
        if "functionResponse" in part:
            output = str(part["functionResponse"]["response"].get("output", ""))
            return text_response(f"the file says {output}")
    match = re.search(r"read (s\d+\.txt)", request.last_user_text)
    assert match, request.last_user_text
    return function_call_response("read_file", {"file_path": match.group(1)})


async def test_twenty_sessions_ten_prompts_each_without_cross_talk(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.default = _model
    d = dirs(tmp_path)
    for index in range(SESSIONS):
        (d.workspace / f"s{index}.txt").write_text(f"secret-of-session-{index}\n")
    client = await start_agent(make_agent, d, fake_gemini, args=["--approval-mode", "yolo"])
    sessions = [(await client.new_session(d.workspace))["sessionId"] for _ in range(SESSIONS)]
    latencies: list[float] = []

    async def run(index: int, session_id: str) -> None:
        for prompt in range(PROMPTS):
            started = time.monotonic()
            answer = await client.prompt(
                session_id, f"prompt {prompt}: read s{index}.txt", timeout=120
            )
            latencies.append(time.monotonic() - started)
            assert answer == {"stopReason": "end_turn"}

    await asyncio.wait_for(asyncio.gather(*(run(i, sid) for i, sid in enumerate(sessions))), 300)

    for index, session_id in enumerate(sessions):
        text = client.text_of(session_id)
        assert text.count(f"secret-of-session-{index}") == PROMPTS
        others = re.findall(r"secret-of-session-(\d+)", text)
        assert set(others) == {str(index)}, f"session {index} saw {set(others)}"
        calls = client.updates(session_id, "tool_call")
        assert len(calls) == PROMPTS
        assert all(c["rawInput"] == {"file_path": f"s{index}.txt"} for c in calls)
    assert client.orphan_errors == [] and client.violations == []
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(  # noqa: T201 - the figures of the run
        f"\nload: {SESSIONS} sessions x {PROMPTS} prompts with a tool call each: "
        f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
        f"max {ordered[-1] * 1000:.0f} ms"
    )
