"""Issue #3 end to end: editor-driven approvals through the real agent process.

"Always" answers (for the session, saved for the workspace), two edits of one
model turn asked one at a time in call order, and a cancel while a permission
request is open.
"""

from __future__ import annotations

import asyncio
import re
import tomllib
from pathlib import Path

import pytest

from tests.e2e.tools_harness import (
    CAPS,
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
    uses_editor,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    function_calls_response,
    text_response,
)

pytestmark = pytest.mark.e2e


def write(path: str, content: str) -> tuple[str, dict[str, str]]:
    return ("write_file", {"file_path": path, "content": content})


async def test_allow_for_this_session_remembers_the_file_and_switches_to_auto_edit(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(*write("a.txt", "one\n")),
        text_response("first"),
        function_call_response(*write("a.txt", "two\n")),
        text_response("second"),
        function_call_response(*write("b.txt", "other\n")),
        text_response("third"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")
    assert agent.new_session["modes"]["currentModeId"] == "default"

    pending = agent.client.start_prompt(agent.session_id, "write a.txt")
    request = await agent.client.next_permission_request()
    before = len(agent.updates())
    request.select("proceed_always")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert (agent.workspace / "a.txt").read_text() == "one\n"

    # the engine switched the session to autoEdit, and told the editor
    after = agent.updates()[before:]
    (mode_update,) = [u for u in after if u["sessionUpdate"] == "current_mode_update"]
    assert mode_update["currentModeId"] == "autoEdit"
    option_updates = [u for u in after if u["sessionUpdate"] == "config_option_update"]
    assert option_updates
    options = {o["id"]: o for o in option_updates[-1]["configOptions"]}
    assert set(options) == {"mode", "model"}
    assert options["mode"]["currentValue"] == "autoEdit"

    # back in default mode, the session rule still covers a.txt, but not b.txt
    await agent.client.set_mode(agent.session_id, "default")
    assert await agent.prompt("write a.txt again") == {"stopReason": "end_turn"}
    assert (agent.workspace / "a.txt").read_text() == "two\n"
    assert len(agent.client.permission_requests) == 1

    pending = agent.client.start_prompt(agent.session_id, "write b.txt")
    request = await agent.client.next_permission_request()
    assert request.tool_call["title"] == "Write b.txt"
    request.select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert (agent.workspace / "b.txt").read_text() == "other\n"


async def test_always_allow_saved_is_written_to_the_workspace_and_holds_in_a_new_session(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(*write("notes.md", "v1\n")),
        text_response("saved"),
        function_call_response(*write("notes.md", "v2\n")),
        text_response("again"),
        function_call_response(*write("other.md", "x\n")),
        text_response("not that one"),
    )
    existing = '# kept by hand\n[[rule]]\ntoolName = "glob"\ndecision = "allow"\n'
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        files={".gemini/policies/auto-saved.toml": existing},
        permission_policy="queue",
    )

    pending = agent.client.start_prompt(agent.session_id, "write notes.md")
    (await agent.client.next_permission_request()).select("proceed_always_and_save")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert (agent.workspace / "notes.md").read_text() == "v1\n"

    saved = agent.workspace / ".gemini" / "policies" / "auto-saved.toml"
    text = saved.read_text()
    assert text.startswith(existing)  # appended, the user's rules and comments kept
    rules = tomllib.loads(text)["rule"]
    assert len(rules) == 2
    assert rules[1]["toolName"] in ("write_file", ["write_file"])
    assert rules[1]["decision"] == "allow"
    assert re.search(rules[1]["argsPattern"], '{"content":"v1\\n","file_path":"notes.md"}')
    assert sorted(p.name for p in saved.parent.iterdir()) == ["auto-saved.toml"]  # no temp file

    # a new session on the same workspace is not asked for that file...
    second = (await agent.client.new_session(agent.workspace))["sessionId"]
    assert second != agent.session_id
    assert await agent.client.prompt(second, "write notes.md again") == {"stopReason": "end_turn"}
    assert (agent.workspace / "notes.md").read_text() == "v2\n"
    assert len(agent.client.permission_requests) == 1

    # ...but still for another one
    pending = agent.client.start_prompt(second, "write other.md")
    request = await agent.client.next_permission_request()
    assert request.session_id == second and request.tool_call["title"] == "Write other.md"
    request.select("cancel")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert not (agent.workspace / "other.md").exists()


@pytest.mark.parametrize("caps", CAPS)
async def test_two_edits_of_one_turn_are_asked_one_at_a_time_in_call_order(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    fake_gemini.add(
        function_calls_response([write("first.txt", "1\n"), write("second.txt", "2\n")]),
        text_response("Both done."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps, permission_policy="queue")
    pending = agent.client.start_prompt(agent.session_id, "write two files")

    first = await agent.client.next_permission_request()
    assert first.tool_call["title"] == "Write first.txt"
    await asyncio.sleep(0.5)  # the second call must wait for the answer to the first
    assert len(agent.client.permission_requests) == 1
    assert [c["title"] for c in agent.tool_calls()] == ["Write first.txt", "Write second.txt"]
    first.select("proceed_once")

    second = await agent.client.next_permission_request()
    assert second.tool_call["title"] == "Write second.txt"
    second.select("proceed_once")

    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert agent.client.max_open_permissions == 1
    assert first.closed is not None and first.closed < second.opened
    assert (agent.workspace / "first.txt").read_text() == "1\n"
    assert (agent.workspace / "second.txt").read_text() == "2\n"
    responses = function_responses(fake_gemini.generate_requests[1])
    assert [r["name"] for r in responses] == ["write_file", "write_file"]
    assert [response_text(r) for r in responses] == [
        "Successfully created and wrote to new file: first.txt",
        "Successfully created and wrote to new file: second.txt",
    ]
    if uses_editor(caps):
        assert agent.client.files.writes == [
            str(agent.workspace / "first.txt"),
            str(agent.workspace / "second.txt"),
        ]


async def test_cancel_while_a_permission_request_is_open(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_calls_response([write("a.txt", "a\n"), write("b.txt", "b\n")]),
        text_response("after the cancel"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")
    pending = agent.client.start_prompt(agent.session_id, "write two files")
    request = await agent.client.next_permission_request()
    assert request.tool_call["title"] == "Write a.txt"

    await agent.client.cancel(agent.session_id)  # answers the open request with cancelled
    assert await pending.result(10) == {"stopReason": "cancelled"}

    assert request.outcome == {"outcome": "cancelled"}
    assert len(agent.client.permission_requests) == 1  # b.txt was never asked
    assert not (agent.workspace / "a.txt").exists()
    assert not (agent.workspace / "b.txt").exists()
    assert agent.client.files.writes == []
    for call in agent.tool_calls():
        assert agent.final(call["toolCallId"])["status"] == "failed"
    assert len(fake_gemini.generate_requests) == 1  # the model was not called again

    # the session goes on
    assert await agent.prompt("hello again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("after the cancel")
    assert len(agent.client.permission_requests) == 1
