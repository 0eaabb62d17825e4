"""One route for notices (issue #9): a BeforeTool hook's `systemMessage` reaches the
editor as a message of the turn, through the real agent process (it was dropped:
the scheduler told a Host method the ACP host never implemented)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject
from tests.e2e.test_sessions import another_process
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


NOTICES: JsonObject = {**EDITOR, "session": {"notices": {}}}
"""An editor that opted in to `notice` updates (ACP 1.21)."""


def read_with_a_hook_notice(tmp_path: Path, fake_gemini: FakeGeminiServer) -> dict[str, str]:
    """A BeforeTool hook on read_file whose `systemMessage` is a notice; the model reads
    a.txt, then answers "read". The workspace's files."""
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import json, sys\n"
        "json.load(sys.stdin)\n"
        "print(json.dumps({'systemMessage': 'Reads are logged by your team policy.'}))\n"
    )
    settings = {
        "hooks": {
            "BeforeTool": [
                {
                    "matcher": "read_file",
                    "hooks": [{"type": "command", "command": f"python3 {hook}"}],
                }
            ]
        }
    }
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}), text_response("read")
    )
    return {"a.txt": "x\n", ".gemini/settings.json": json.dumps(settings)}


async def test_a_hook_system_message_reaches_the_editor(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    files = read_with_a_hook_notice(tmp_path, fake_gemini)
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)

    assert await agent.prompt("read a.txt") == {"stopReason": "end_turn"}

    assert "Reads are logged by your team policy." in agent.text()
    assert agent.text().endswith("read")
    # Issue 21: the notice is marked, so a client can show it apart from the answer.
    marked = [
        u["_meta"]["adkAcp"]["notice"]
        for u in agent.client.updates(agent.session_id)
        if u["sessionUpdate"] == "agent_message_chunk" and "_meta" in u
    ]
    assert marked == [{"level": "info", "text": "Reads are logged by your team policy."}]
    assert agent.updates("notice") == []  # the client did not opt in
    # ACP 1.21: every tool call carries the tool's own name, live and replayed
    assert [u["name"] for u in agent.updates("tool_call")] == ["read_file"]
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    replayed = other.updates(agent.session_id)
    assert [u["name"] for u in replayed if u["sessionUpdate"] == "tool_call"] == ["read_file"]
    assert [u for u in replayed if u["sessionUpdate"] == "notice"] == []


async def test_a_client_that_opted_in_gets_notices_as_notice_updates(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """`clientCapabilities.session.notices`: the hook's message is a `notice`, not agent
    text, live and when the session is loaded again by a client that opted in too."""
    files = read_with_a_hook_notice(tmp_path, fake_gemini)
    agent = await start_agent(make_agent, tmp_path, fake_gemini, NOTICES, files=files)

    assert await agent.prompt("read a.txt") == {"stopReason": "end_turn"}

    notice = {
        "sessionUpdate": "notice",
        "severity": "info",
        "title": "Reads are logged by your team policy.",
    }
    assert agent.updates("notice") == [notice]
    assert agent.text() == "read"
    other = await another_process(make_agent, agent, caps=NOTICES)
    await other.load_session(agent.session_id, agent.workspace)
    replayed = other.updates(agent.session_id)
    assert [u for u in replayed if u["sessionUpdate"] == "notice"] == [notice]
    assert "team policy" not in other.text_of(agent.session_id)


async def test_wrongly_typed_settings_and_a_broken_policy_file_are_told_once(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    from tests.e2e.test_hooks import calls, hook

    hooks = {
        "BeforeAgent": [
            {"hooks": [{"type": "command", "command": hook(tmp_path, "b"), "timeout": "5s"}]}
        ]
    }
    files = {
        ".gemini/settings.json": json.dumps({"hooks": hooks, "model": {"maxSessionTurns": "x"}}),
        ".gemini/policies/team.toml": '[[rule]]\ntoolName = "read_file"\ndecision = allow\n',
    }
    fake_gemini.add(text_response("first"), text_response("second"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)
    # the session works: the hook runs with the default timeout
    assert await agent.prompt("hello", timeout=90) == {"stopReason": "end_turn"}
    assert [c["prompt"] for c in calls(tmp_path, "b")] == ["hello"]
    text = agent.text()
    assert "Some settings were ignored (the defaults are used):" in text
    assert 'hooks.BeforeAgent[0].hooks[0].timeout should be a number, not "5s"' in text
    assert 'model.maxSessionTurns should be a number, not "x"' in text
    assert "Some policy rules could not be loaded and are not in force:" in text
    assert "team.toml: invalid TOML" in text
    assert await agent.prompt("again", timeout=90) == {"stopReason": "end_turn"}
    assert agent.text().count("Some settings were ignored") == 1
    assert agent.text().count("Some policy rules could not be loaded") == 1


async def test_a_workspace_cannot_turn_on_yolo_from_its_settings(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """A cloned repository's `.gemini/settings.json` asks for YOLO: the session starts in
    Default, a command is still asked, and the user is told why."""
    files = {".gemini/settings.json": json.dumps({"general": {"defaultApprovalMode": "yolo"}})}
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": "touch made-by-yolo"}),
        text_response("done"),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, files=files, permission_policy="queue"
    )
    assert agent.new_session["modes"]["currentModeId"] == "default"
    pending = agent.client.start_prompt(agent.session_id, "make a file")
    request = await agent.client.next_permission_request(timeout=90)
    request.select("cancel")
    assert await pending.result(90) == {"stopReason": "end_turn"}
    assert not (agent.workspace / "made-by-yolo").exists()
    assert "general.defaultApprovalMode yolo is not taken from settings" in agent.text()
