"""Plan operations (ACP `plan_update` / `plan_removed`, issue 22) through the real agent:
for a client with `clientCapabilities.plan`, plan mode's plan file is a Markdown plan
with a stable id (a second plan file replaces it: the first is removed), the todo list
is the plan `todos` as items (cleared: removed); the same plans come back on
`session/load`. A client without the capability keeps the plain `plan` updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject
from tests.e2e.test_plan_mode import PLAN, plans_dir
from tests.e2e.test_sessions import another_process
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

PLANS: JsonObject = {**EDITOR, "plan": {}}
"""An editor that takes plan operations."""

OPS = ("plan_update", "plan_removed")


async def plan_two_files_then_todos(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: JsonObject
) -> Agent:
    """In plan mode: plan file a.md, then b.md; todos; todos cleared; then todos again."""
    folder = plans_dir(tmp_path)
    todos = [{"description": "Fix it", "status": "in_progress"}]
    fake_gemini.add(
        function_call_response("write_file", {"file_path": str(folder / "a.md"), "content": PLAN}),
        function_call_response("write_file", {"file_path": str(folder / "b.md"), "content": "B\n"}),
        function_call_response("write_todos", {"todos": todos}),
        function_call_response("write_todos", {"todos": []}),
        function_call_response("write_todos", {"todos": todos}),
        text_response("Planned."),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, caps, args=["--approval-mode", "plan"]
    )
    assert await agent.prompt("plan it") == {"stopReason": "end_turn"}
    return agent


TODO_ITEMS = [{"content": "Fix it", "priority": "medium", "status": "in_progress"}]


async def test_a_client_that_opted_in_gets_plan_operations_live_and_replayed(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await plan_two_files_then_todos(make_agent, fake_gemini, tmp_path, PLANS)
    ops = [u for u in agent.updates() if u["sessionUpdate"] in (*OPS, "plan")]
    todos = {"type": "items", "planId": "todos", "entries": TODO_ITEMS}

    def markdown(plan_id: str, text: str) -> JsonObject:
        plan = {"type": "markdown", "planId": plan_id, "content": text}
        return {"sessionUpdate": "plan_update", "plan": plan}

    assert ops == [
        markdown("plan:a.md", PLAN),
        {"sessionUpdate": "plan_removed", "planId": "plan:a.md"},
        markdown("plan:b.md", "B\n"),
        {"sessionUpdate": "plan_update", "plan": todos},
        {"sessionUpdate": "plan_removed", "planId": "todos"},
        {"sessionUpdate": "plan_update", "plan": todos},
    ]
    other = await another_process(make_agent, agent, caps=PLANS)
    await other.load_session(agent.session_id, agent.workspace)
    replayed = [u for u in other.updates(agent.session_id) if u["sessionUpdate"] in (*OPS, "plan")]
    assert replayed == [ops[2], ops[3]]  # the current plans: b.md and the todos


async def test_a_client_without_the_capability_keeps_plain_plans(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await plan_two_files_then_todos(make_agent, fake_gemini, tmp_path, EDITOR)
    assert [u for u in agent.updates() if u["sessionUpdate"] in OPS] == []
    plans = [p["entries"] for p in agent.updates("plan")]
    assert len(plans) == 5 and plans[-2] == [] and plans[-1] == TODO_ITEMS
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    assert [p["entries"] for p in other.updates(agent.session_id, "plan")] == [TODO_ITEMS]
