"""The waiting-for-confirmation signal (design: onWaitingForConfirmation; issue 19.6),
through the real agent: a call that waits on the user's approval is a `pending`
`tool_call_update` with `_meta.adkAcp.awaitingConfirmation: true`, then `false` once
answered; a subagent's parent shows that its child waits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject
from tests.e2e.test_subagents import REVIEWER, agents
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]  # several processes on a busy machine


def awaiting(update: JsonObject) -> bool | None:
    """The update's waiting signal (None: the update is not one)."""
    if update["sessionUpdate"] != "tool_call_update":
        return None
    value = ((update.get("_meta") or {}).get("adkAcp") or {}).get("awaitingConfirmation")
    return value if isinstance(value, bool) else None


async def test_a_call_waiting_on_approval_is_signalled_then_cleared(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "a.txt", "content": "one\n"}),
        text_response("written"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")
    pending = agent.client.start_prompt(agent.session_id, "write a.txt")
    request = await agent.client.next_permission_request(timeout=120)
    call_id = request.tool_call["toolCallId"]
    waiting = await agent.client.wait_for_update(
        lambda u: awaiting(u) is True, session_id=agent.session_id, timeout=60
    )
    assert waiting["toolCallId"] == call_id and waiting["status"] == "pending"
    request.select("proceed_once")
    assert await pending.result(120) == {"stopReason": "end_turn"}
    signals = [(u["toolCallId"], awaiting(u)) for u in agent.tool_updates(call_id)]
    assert [s for s in signals if s[1] is not None] == [(call_id, True), (call_id, False)]
    assert agent.final(call_id)["status"] == "completed"
    assert (agent.workspace / "a.txt").read_text() == "one\n"


async def test_a_subagents_parent_shows_that_its_child_waits(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("reviewer", {"task": "review a.py"}),
        function_call_response("write_file", {"file_path": "review.md", "content": "ok\n"}),
        function_call_response("complete_task", {"result": "fine"}),
        text_response("reviewed"),
    )
    files = {"a.py": "x = 1\n", **agents({"reviewer.md": REVIEWER})}
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, files=files, permission_policy="queue"
    )
    pending = agent.client.start_prompt(agent.session_id, "review a.py")
    request = await agent.client.next_permission_request(timeout=120)
    [parent] = [u for u in agent.tool_calls() if u["title"] == "Subagent: Reviewer"]

    def parent_says_waiting(update: JsonObject) -> bool:
        return update.get("toolCallId") == parent["toolCallId"] and "waiting for your approval" in (
            str(update.get("content"))
        )

    await agent.client.wait_for_update(
        parent_says_waiting, session_id=agent.session_id, timeout=120
    )
    request.select("proceed_once")
    assert await pending.result(120) == {"stopReason": "end_turn"}
    last = [u for u in agent.tool_updates(parent["toolCallId"]) if u.get("content")][-1]
    assert "waiting for your approval" not in str(last["content"])
    assert (agent.workspace / "review.md").read_text() == "ok\n"
