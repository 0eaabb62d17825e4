"""`save_memory` (issue 19) through the real process: the model saves a fact, the diff of
`~/.gemini/GEMINI.md` is asked for like an edit, the file is written keeping what it had,
and the fact is in the system instruction of the next request and in `/memory show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.tools_harness import (
    EDITOR,
    MakeAgent,
    diff_of,
    function_responses,
    response_text,
    start_agent,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

BEFORE = "# My notes\nKeep this line.\n"
AFTER = BEFORE + "\n## Gemini Added Memories\n- The user indents with tabs. Always.\n"


async def test_save_memory_asks_with_a_diff_writes_and_the_next_request_carries_it(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    memory = tmp_path / "home" / ".gemini" / "GEMINI.md"
    memory.parent.mkdir(parents=True)
    memory.write_text(BEFORE)
    fact = "The user indents with tabs.\nAlways."  # made one line
    fake_gemini.add(
        function_call_response("save_memory", {"fact": fact}),
        text_response("I'll remember that."),
        text_response("Tabs it is."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")
    pending = agent.client.start_prompt(agent.session_id, "Remember: I indent with tabs.")

    request = await agent.client.next_permission_request(timeout=60)
    assert request.tool_call["kind"] == "edit"
    assert request.tool_call["title"] == "Save memory in ~/.gemini/GEMINI.md"
    assert diff_of(request.tool_call) == {
        "type": "diff",
        "path": str(memory),
        "oldText": BEFORE,
        "newText": AFTER,
    }
    assert memory.read_text() == BEFORE  # nothing written before the answer
    request.select("proceed_once")
    assert await pending.result(90) == {"stopReason": "end_turn"}

    assert memory.read_text() == AFTER
    assert agent.client.files.writes == []  # the user's home, written here, not by the editor
    [response] = function_responses(fake_gemini.generate_requests[1])
    assert json.loads(response_text(response)) == {
        "success": True,
        "message": 'Okay, I\'ve remembered that: "The user indents with tabs. Always."',
    }
    # the memory was reloaded: the very next model request carries the fact
    assert "- The user indents with tabs. Always." not in (
        fake_gemini.generate_requests[0].system_instruction_text
    )
    assert "- The user indents with tabs. Always." in (
        fake_gemini.generate_requests[1].system_instruction_text
    )
    assert await agent.prompt("Which indentation?", timeout=90) == {"stopReason": "end_turn"}
    assert "- The user indents with tabs. Always." in (
        fake_gemini.generate_requests[2].system_instruction_text
    )

    before = len(agent.text())
    assert await agent.prompt("/memory show", timeout=60) == {"stopReason": "end_turn"}
    shown = agent.text()[before:]
    assert str(memory) in shown and "- The user indents with tabs. Always." in shown
    assert len(fake_gemini.generate_requests) == 3  # the command did not reach the model
