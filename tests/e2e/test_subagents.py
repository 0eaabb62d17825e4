"""Subagents (issue 11, design Phase B), through the real agent: a definition from the
workspace offered as a tool, its own session (tools, approval titled with its name,
complete_task), the grace turn, a subagent that never completes, the built-in
investigator, a bad definition skipped, progress in the editor, cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.tools_harness import EDITOR, MakeAgent, function_responses, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
)

pytestmark = pytest.mark.e2e

REVIEWER = """---
name: reviewer
description: Reviews a file and writes its notes to review.md.
display_name: Reviewer
tools: [read_file, write_file]
max_turns: 8
---
You review code. Read the file you are given, write your notes to review.md, then call
complete_task with a one-line verdict.
"""


def agents(files: dict[str, str]) -> dict[str, str]:
    return {f".gemini/agents/{name}": text for name, text in files.items()}


async def test_a_subagent_reads_asks_once_and_completes(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("reviewer", {"task": "review a.py"}),  # the main agent
        function_call_response("read_file", {"file_path": "a.py"}),  # the subagent...
        function_call_response("write_file", {"file_path": "review.md", "content": "ok\n"}),
        function_call_response("complete_task", {"result": "a.py looks fine"}),
        text_response("The reviewer says a.py looks fine."),  # the main agent again
    )
    files = {"a.py": "x = 1\n", **agents({"reviewer.md": REVIEWER, "broken.md": "no front"})}
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)
    assert await agent.prompt("get a.py reviewed") == {"stopReason": "end_turn"}

    main_first, sub_first, _, sub_last, main_last = fake_gemini.generate_requests
    offered = main_first.function_declaration_names
    assert "reviewer" in offered and "codebase_investigator" in offered
    assert "broken" not in offered  # the bad definition was skipped
    assert sorted(sub_first.function_declaration_names) == [
        "complete_task",
        "read_file",
        "write_file",
    ]
    assert "You review code." in sub_first.system_instruction_text
    assert sub_first.last_user_text == "review a.py"
    # the one approval (the write) went to the editor, titled with the subagent
    [asked] = agent.client.permission_requests
    assert asked.tool_call["title"].startswith("Reviewer: ")
    assert (agent.workspace / "review.md").read_text() == "ok\n"
    # the result reached the main agent as the subagent tool's response
    [response] = function_responses(main_last)
    assert response["name"] == "reviewer"
    assert response["response"]["output"] == "a.py looks fine"
    # the editor saw one tool call for the subagent, with its progress
    calls = [u for u in agent.tool_calls() if u["title"] == "Subagent: Reviewer"]
    [call] = calls
    progress = " ".join(str(u.get("content")) for u in agent.tool_updates(call["toolCallId"]))
    assert "✓" in progress and "a.py" in progress
    assert agent.final(call["toolCallId"])["status"] == "completed"
    # the subagent's record is not listed to the user
    listed = await agent.client.request("session/list", {"cwd": str(agent.workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [agent.session_id]


async def test_the_grace_turn_and_a_subagent_that_never_completes(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("codebase_investigator", {"task": "where is main?"}),
        text_response("main is in app.py"),  # forgets complete_task
        function_call_response("complete_task", {"result": "main() is in app.py"}),  # grace
        function_call_response("codebase_investigator", {"task": "and tests?"}),
        text_response("no idea"),
        text_response("still no idea"),  # the grace turn wasted
        text_response("Done."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("investigate") == {"stopReason": "end_turn"}
    requests = fake_gemini.generate_requests
    assert "one final chance" in requests[2].last_user_text
    assert "ERROR_NO_COMPLETE_TASK_CALL" in requests[2].last_user_text
    [first] = function_responses(requests[3])
    assert first["response"]["output"] == "main() is in app.py"
    [second] = function_responses(requests[6])
    assert "did not complete its task" in second["response"]["error"]


async def test_cancel_during_a_subagent(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        function_call_response("codebase_investigator", {"task": "look around"}),
        text_response(["thinking"]).hang_after(0, hang),
        text_response("after the cancel"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    pending = agent.client.start_prompt(agent.session_id, "go")
    await hang.wait_reached_async()
    await agent.client.cancel(agent.session_id)
    assert await pending.result(20) == {"stopReason": "cancelled"}
    hang.release()
    await asyncio.sleep(0.2)
    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("after the cancel")


async def test_a_subagent_is_offered_only_the_mcp_tools_it_names(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """A settings MCP server is not every subagent's: one naming no MCP tool is offered
    none (its session starts no server), one naming a tool gets that tool only."""
    import json

    from tests.e2e.test_mcp_settings import server_settings

    reader = REVIEWER.replace("name: reviewer", "name: reader").replace(
        "tools: [read_file, write_file]", "tools: [read_file]"
    )
    echoer = REVIEWER.replace("name: reviewer", "name: echoer").replace(
        "tools: [read_file, write_file]", "tools: [mcp_demo_echo]"
    )
    settings = {"mcpServers": {"demo": server_settings(trust=True)}}
    files = {
        ".gemini/settings.json": json.dumps(settings),
        **agents({"reader.md": reader, "echoer.md": echoer}),
    }
    fake_gemini.add(
        function_call_response("reader", {"task": "look around"}),
        function_call_response("complete_task", {"result": "nothing"}),
        function_call_response("echoer", {"task": "say hi"}),
        function_call_response("mcp_demo_echo", {"text": "hi"}),
        function_call_response("complete_task", {"result": "echoed"}),
        text_response("Both done."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)
    assert await agent.prompt("use both helpers", timeout=120) == {"stopReason": "end_turn"}
    main_first, reader_first, _, echoer_first, echoer_second, _ = fake_gemini.generate_requests
    assert "mcp_demo_echo" in main_first.function_declaration_names
    assert sorted(reader_first.function_declaration_names) == ["complete_task", "read_file"]
    assert sorted(echoer_first.function_declaration_names) == ["complete_task", "mcp_demo_echo"]
    [echoed] = function_responses(echoer_second)
    assert echoed["response"]["output"] == "hi"
