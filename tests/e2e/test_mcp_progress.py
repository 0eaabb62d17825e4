"""MCP progress (issue 19.6), through the real agent: a server's `notifications/progress`
during a tool call reach the editor as `tool_call_update`s of that call, before it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mcp import commands_offered, start, stdio_entry
from tests.e2e.tools_harness import MakeAgent, function_responses, response_text
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


async def test_progress_notifications_of_a_call_are_updates_of_that_tool_call(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("mcp_work_steps", {"count": 3}), text_response("all done")
    )
    client, sid = await start(make_agent, tmp_path, fake_gemini, [stdio_entry("work")])
    await commands_offered(client, sid, "work:review")
    pending = client.start_prompt(sid, "do the work")
    request = await client.next_permission_request()
    call_id = request.tool_call["toolCallId"]
    request.select("proceed_once")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    [response] = function_responses(fake_gemini.generate_requests[1])
    assert response_text(response) == "3 steps done"

    of_call = [u for u in client.updates(sid, "tool_call_update") if u["toolCallId"] == call_id]
    shown = [
        block["content"]["text"]
        for u in of_call
        if u.get("status") == "in_progress"
        for block in u.get("content") or []
        if block.get("type") == "content"
    ]
    assert shown == [f"step {n} of 3 ({n}/3)" for n in (1, 2, 3)]
    # every progress update comes before the call's end
    statuses = [u.get("status") for u in of_call]
    assert statuses[-1] == "completed"
    assert "completed" not in statuses[:-1]
