"""Subagent sessions (ACP `subagent_update`, issue 22) through the real agent: for a
client with `clientCapabilities.subagents`, a subagent's run is a child session it can
follow: announced on the parent (title, task, running) before any of its updates, its
tool calls and its permission request under its own session id, and its end (idle,
end_turn); the same on `session/load`. A client without the capability sees only the
subagent's tool call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject
from tests.e2e.test_sessions import another_process
from tests.e2e.test_subagents import REVIEWER, agents
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    Reply,
    function_call_part,
    function_call_response,
    parts_response,
    text_part,
    text_response,
)

pytestmark = pytest.mark.e2e

SUBAGENTS: JsonObject = {**EDITOR, "subagents": {}}
"""An editor that follows subagent sessions."""


REVIEW_FILES = {"a.py": "x = 1\n", **agents({"reviewer.md": REVIEWER})}
"""The workspace of `review_replies`: a file and the reviewer subagent."""


def review_replies() -> list[Reply]:
    """The model's side of a review: the main agent calls the reviewer, which says a
    line, reads a.py, writes review.md, completes; the main agent answers."""
    return [
        function_call_response("reviewer", {"task": "review a.py"}),
        parts_response(
            [
                [text_part("Reading a.py first.")],
                [function_call_part("read_file", {"file_path": "a.py"})],
            ]
        ),
        function_call_response("write_file", {"file_path": "review.md", "content": "ok\n"}),
        function_call_response("complete_task", {"result": "a.py looks fine"}),
        text_response("The reviewer says a.py looks fine."),
    ]


async def review(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: JsonObject
) -> Agent:
    """The main agent asks the reviewer; it reads, writes (asked), completes."""
    fake_gemini.add(*review_replies())
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps, files=REVIEW_FILES)
    assert await agent.prompt("get a.py reviewed") == {"stopReason": "end_turn"}
    return agent


async def test_a_client_that_follows_subagents_sees_the_child_session(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await review(make_agent, fake_gemini, tmp_path, SUBAGENTS)
    announced = agent.updates("subagent_update")
    assert len(announced) == 2
    child = announced[0]["sessionId"]
    assert child != agent.session_id
    assert announced[0]["title"] == "Reviewer"
    assert announced[0]["description"] == "review a.py"
    assert announced[0]["state"] == {"state": "running"}
    assert announced[1]["state"] == {"state": "idle", "stopReason": "end_turn"}
    # every update of the child comes after its announcement and before its end
    order = [(sid, u["sessionUpdate"]) for sid, u in agent.client._updates]  # noqa: SLF001
    first_child = next(i for i, (sid, _) in enumerate(order) if sid == child)
    last_child = max(i for i, (sid, _) in enumerate(order) if sid == child)
    start = order.index((agent.session_id, "subagent_update"))
    end = len(order) - 1 - order[::-1].index((agent.session_id, "subagent_update"))
    assert start < first_child and last_child < end
    # the child's own tool calls, under its id; the parent has only the subagent's call
    names = [u["name"] for u in agent.client.updates(child, "tool_call")]
    assert names == ["read_file", "write_file", "complete_task"]
    assert [u["name"] for u in agent.tool_calls()] == ["reviewer"]
    # its own words, under its id only
    assert agent.client.text_of(child) == "Reading a.py first."
    assert "Reading a.py" not in agent.text()
    # its approval was asked in its own session
    [asked] = agent.client.permission_requests
    assert asked.session_id == child
    assert asked.tool_call["title"].startswith("Reviewer: ")
    assert (agent.workspace / "review.md").read_text() == "ok\n"

    # loaded again by a client that follows subagents: the child is announced, its own
    # record shown under its id, and its end
    other = await another_process(make_agent, agent, caps=SUBAGENTS)
    await other.load_session(agent.session_id, agent.workspace)
    replayed = other.updates(agent.session_id, "subagent_update")
    assert [u["sessionId"] for u in replayed] == [child, child]
    assert [u["state"] for u in replayed] == [a["state"] for a in announced]
    assert replayed[0]["title"] == "Reviewer" and replayed[0]["description"] == "review a.py"
    assert [u["name"] for u in other.updates(child, "tool_call")] == names
    assert [u["status"] for u in other.updates(child, "tool_call")] == ["completed"] * 3
    assert other.text_of(child) == "Reading a.py first."


async def test_a_client_without_the_capability_sees_only_the_subagent_tool_call(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await review(make_agent, fake_gemini, tmp_path, EDITOR)
    assert agent.updates("subagent_update") == []
    sessions = {sid for sid, _ in agent.client._updates}  # noqa: SLF001
    assert sessions == {agent.session_id}
    assert "Reading a.py" not in agent.text()
    [asked] = agent.client.permission_requests
    assert asked.session_id == agent.session_id
    [call] = agent.tool_calls()
    assert call["name"] == "reviewer"
    assert agent.final(call["toolCallId"])["status"] == "completed"
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    assert {sid for sid, _ in other._updates} == {agent.session_id}  # noqa: SLF001
    assert other.updates(agent.session_id, "subagent_update") == []


async def test_cancelling_the_parent_ends_the_child_session_cancelled(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """The child's end (`idle`, `cancelled`) is sent before the parent's prompt answers."""
    hang = HangPoint()
    fake_gemini.add(
        function_call_response("codebase_investigator", {"task": "look around"}),
        text_response(["thinking"]).hang_after(0, hang),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, SUBAGENTS)
    pending = agent.client.start_prompt(agent.session_id, "go")
    await hang.wait_reached_async()
    await agent.client.cancel(agent.session_id)
    assert await pending.result(20) == {"stopReason": "cancelled"}
    hang.release()
    states = [u["state"] for u in agent.updates("subagent_update")]
    assert states == [{"state": "running"}, {"state": "idle", "stopReason": "cancelled"}]
