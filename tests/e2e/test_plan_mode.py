"""Plan mode, complete (issue 11): its own instructions, only the tools it may use,
the plan written to the plans folder and shown as the editor's plan, and
`exit_plan_mode` asking the editor which mode to go on in."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.acp_client import reject_once, selected
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

PLAN = "# Plan\n\n- [ ] Add a failing test\n- [ ] Fix the off-by-one\n- [x] Read the code\n"


def plans_dir(tmp_path: Path) -> Path:
    workspace = (tmp_path / "ws").resolve()
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return tmp_path / "home" / ".gemini" / "tmp" / digest / "plans"


async def test_from_planning_to_approval(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    plan_file = plans_dir(tmp_path) / "fix-off-by-one.md"
    fake_gemini.add(
        function_call_response("write_file", {"file_path": str(plan_file), "content": PLAN}),
        function_call_response("exit_plan_mode", {"plan_path": str(plan_file)}),
        text_response("Starting on step 1."),
    )
    asked: list[dict[str, object]] = []

    def answer(params: dict[str, object]) -> dict[str, object]:
        asked.append(params)
        return selected("autoEdit")

    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "plan"],
        permission_policy=answer,
    )
    assert await agent.prompt("plan the fix") == {"stopReason": "end_turn"}

    planning, exiting, after = fake_gemini.generate_requests
    assert "# Plan mode" in planning.system_instruction_text
    assert str(plans_dir(tmp_path)) in planning.system_instruction_text
    offered = set(planning.function_declaration_names)
    assert "exit_plan_mode" in offered and "write_file" in offered
    assert not offered & {"run_shell_command", "replace", "web_fetch"}

    # the plan file is written (in the plans folder, not through the editor) and shown
    assert plan_file.read_text() == PLAN
    assert str(plan_file) not in agent.client.files.writes
    plans = agent.updates("plan")
    assert [e["content"] for e in plans[0]["entries"]] == [
        "Add a failing test",
        "Fix the off-by-one",
        "Read the code",
    ]
    assert [e["status"] for e in plans[0]["entries"]] == ["pending", "pending", "completed"]

    # exit_plan_mode asks the editor, showing the plan, which mode to go on in
    [question] = asked
    call = question["toolCall"]
    assert call["kind"] == "switch_mode"  # type: ignore[index]
    assert "Fix the off-by-one" in call["content"][0]["content"]["text"]  # type: ignore[index]
    assert [o["optionId"] for o in question["options"]] == ["autoEdit", "default", "plan"]  # type: ignore[union-attr]

    # approved with "auto-accept edits": the editor hears of the mode, and the model
    # is offered everything again, without exit_plan_mode
    assert agent.updates("current_mode_update")[-1]["currentModeId"] == "autoEdit"
    options = agent.updates("config_option_update")[-1]["configOptions"]
    assert {o["id"]: o["currentValue"] for o in options}["mode"] == "autoEdit"
    offered_after = set(after.function_declaration_names)
    assert "run_shell_command" in offered_after and "exit_plan_mode" not in offered_after
    assert "# Plan mode" not in after.system_instruction_text
    assert agent.text().endswith("Starting on step 1.")


async def test_keep_planning_and_edits_outside_the_plans_folder_are_refused(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    plan_file = plans_dir(tmp_path) / "p.md"
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "src.py", "content": "x = 1\n"}),
        function_call_response("write_file", {"file_path": str(plan_file), "content": PLAN}),
        function_call_response("exit_plan_mode", {"plan_path": str(plan_file)}),
        text_response("What should change?"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "plan"],
        permission_policy=reject_once,
    )
    assert await agent.prompt("plan it") == {"stopReason": "end_turn"}
    assert not (agent.workspace / "src.py").exists()  # denied in plan mode, never asked
    assert plan_file.exists()
    assert not agent.updates("current_mode_update") or (
        agent.updates("current_mode_update")[-1]["currentModeId"] == "plan"
    )
    last = fake_gemini.generate_requests[-1]
    assert "exit_plan_mode" in last.function_declaration_names  # still planning
