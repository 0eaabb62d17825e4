"""One route for notices (issue #9): a BeforeTool hook's `systemMessage` reaches the
editor as a message of the turn, through the real agent process (it was dropped:
the scheduler told a Host method the ACP host never implemented)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


async def test_a_hook_system_message_reaches_the_editor(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
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
    settings_file = tmp_path / "ws" / ".gemini" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text(json.dumps(settings))
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}), text_response("read")
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files={"a.txt": "x\n"})

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
