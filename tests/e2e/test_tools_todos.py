"""Issue #3 end to end: `write_todos` shows the model's task list as ACP `plan` updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.tools_harness import EDITOR, MakeAgent, function_responses, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


async def test_write_todos_becomes_plan_updates(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    first = [
        {"description": "Read the code", "status": "in_progress"},
        {"description": "Fix the bug", "status": "pending"},
        {"description": "Write a test", "status": "pending"},
    ]
    second = [
        {"description": "Read the code", "status": "completed"},
        {"description": "Fix the bug", "status": "in_progress"},
        {"description": "Write a test", "status": "cancelled"},
    ]
    fake_gemini.add(
        function_call_response("write_todos", {"todos": first}),
        function_call_response("write_todos", {"todos": second}),
        text_response("Working on it."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")

    assert await agent.prompt("fix the bug") == {"stopReason": "end_turn"}

    assert agent.client.permission_requests == []
    plans = agent.updates("plan")
    assert [p["entries"] for p in plans] == [
        [
            {"content": "Read the code", "priority": "medium", "status": "in_progress"},
            {"content": "Fix the bug", "priority": "medium", "status": "pending"},
            {"content": "Write a test", "priority": "medium", "status": "pending"},
        ],
        [  # a cancelled todo is not shown as a plan entry
            {"content": "Read the code", "priority": "medium", "status": "completed"},
            {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
        ],
    ]
    calls = agent.tool_calls()
    assert [c["kind"] for c in calls] == ["think", "think"]
    assert all(agent.final(c["toolCallId"])["status"] == "completed" for c in calls)
    (response,) = function_responses(fake_gemini.generate_requests[2])
    assert "Fix the bug (in_progress)" in response["response"]["output"]
    assert "Write a test (cancelled)" in response["response"]["output"]
