"""Gemini CLI's hook contract, point by point (issue 19.1), through the real agent process:
tail tool calls, the Notification details of each confirmation kind, AfterAgent's retry
(`stop_hook_active`, `clearContext`, the reason shown) and `continue: false` from any
event ending the turn cleanly. The hook scripts and their log are `test_hooks.py`'s."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import reject_once
from tests.e2e.test_hooks import calls, group, hook
from tests.e2e.test_sessions import another_process, contents_text
from tests.e2e.tools_harness import (
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response
from tests.fakes.mcp_server import SCRIPT as MCP_SERVER

# Each test starts the agent (some an MCP server too): minutes on a busy machine.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def write_settings(tmp_path: Path, hooks: dict[str, list[dict[str, Any]]], **extra: Any) -> None:
    path = tmp_path / "ws" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **extra}))


def api_line(*parts: dict[str, Any]) -> str:
    """One `--fake-responses` line: a streamed answer shaped as the real API's."""
    candidate = {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
    return json.dumps(
        {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}
    )


async def test_an_after_tool_tail_call_runs_through_policy_and_approval_and_answers_the_model(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    tail = {"name": "write_file", "args": {"file_path": "tail.txt", "content": "from the tail\n"}}
    write_settings(
        tmp_path,
        {
            "AfterTool": [
                group(
                    hook(tmp_path, "router", {"hookSpecificOutput": {"tailToolCallRequest": tail}}),
                    matcher="read_file",
                ),
                group(hook(tmp_path, "after_all")),
            ],
            "BeforeTool": [group(hook(tmp_path, "before_all"))],
        },
    )
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "original.txt"}),
        text_response("Tail call completed."),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, files={"original.txt": "original text\n"}
    )
    assert await agent.prompt("read original.txt", timeout=90) == {"stopReason": "end_turn"}

    # the tail call asked for approval like any write, then wrote
    [asked] = agent.client.permission_requests
    assert asked.tool_call["toolCallId"].endswith("-tail1")
    assert (agent.workspace / "tail.txt").read_text() == "from the tail\n"
    # the model got the tail call's result in place of the read's
    [response] = function_responses(fake_gemini.generate_requests[1])
    assert response["name"] == "read_file"
    assert "original text" not in response_text(response)
    assert "tail.txt" in response_text(response)
    # the tail's own hooks ran, told which call it replaces
    before = calls(tmp_path, "before_all")
    assert [c["tool_name"] for c in before] == ["read_file", "write_file"]
    assert "original_request_name" not in before[0]
    assert before[1]["original_request_name"] == "read_file"
    after = calls(tmp_path, "after_all")
    assert after[0]["tool_response"]["llmContent"].startswith("original text")
    assert set(after[0]["tool_response"]) >= {"llmContent", "returnDisplay"}
    assert after[1]["original_request_name"] == "read_file"
    assert len(agent.tool_calls()) == 2  # shown as two calls
    assert agent.text().endswith("Tail call completed.")


def mcp_settings() -> dict[str, Any]:
    return {"mcpServers": {"demo": {"command": sys.executable, "args": [MCP_SERVER]}}}


NOTIFICATION_CASES = [
    pytest.param(
        ("run_shell_command", {"command": "rm -rf build && make all"}),
        {},
        {
            "type": "exec",
            "command": "rm -rf build && make all",
            "rootCommand": "rm, make",
        },
        "requires execution",
        id="exec",
    ),
    pytest.param(
        ("write_file", {"file_path": "notes.txt", "content": "new\n"}),
        {"notes.txt": "old\n"},
        {
            "type": "edit",
            "fileName": "notes.txt",
            "originalContent": "old\n",
            "newContent": "new\n",
            "isModifying": False,
        },
        "requires editing",
        id="edit",
    ),
    pytest.param(
        ("mcp_demo_echo", {"text": "hi"}),
        {},
        {"type": "mcp", "serverName": "demo", "toolName": "echo"},
        "requires MCP",
        id="mcp",
    ),
    pytest.param(
        ("web_fetch", {"prompt": "Summarize http://127.0.0.1:9/page please"}),
        {},
        {
            "type": "info",
            "prompt": "Summarize http://127.0.0.1:9/page please",
            "urls": ["http://127.0.0.1:9/page"],
        },
        "requires information",
        id="info",
    ),
]


@pytest.mark.parametrize(("call", "files", "details", "message"), NOTIFICATION_CASES)
async def test_the_notification_hook_gets_each_confirmation_kinds_details(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    tmp_path: Path,
    call: tuple[str, dict[str, Any]],
    files: dict[str, str],
    details: dict[str, Any],
    message: str,
) -> None:
    notify = hook(tmp_path, "notify", {"systemMessage": "Pinged the on-call phone."})
    write_settings(
        tmp_path,
        {"Notification": [group(notify, matcher="ToolPermission")]},
        **(mcp_settings() if details["type"] == "mcp" else {}),
    )
    fake_gemini.add(function_call_response(*call), text_response("done"))
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, files=files, permission_policy=reject_once
    )
    assert await agent.prompt("go", timeout=90) == {"stopReason": "end_turn"}
    [asked] = agent.client.permission_requests
    [note] = calls(tmp_path, "notify")
    assert note["notification_type"] == "ToolPermission"
    assert note["details"]["title"] == asked.tool_call["title"]
    assert {k: note["details"].get(k) for k in details} == details
    assert note["message"] == f"Tool {asked.tool_call['title']} {message}"
    if details["type"] == "edit":
        assert note["details"]["filePath"].endswith("notes.txt")
        assert "-old" in note["details"]["fileDiff"] and "+new" in note["details"]["fileDiff"]
    assert "Pinged the on-call phone." in agent.text()


@pytest.mark.parametrize("clear", [False, True], ids=["keeps-context", "clear-context"])
async def test_an_after_agent_deny_retries_with_stop_hook_active_and_may_clear_the_context(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, clear: bool
) -> None:
    deny = {
        "decision": "deny",
        "reason": "Add a summary.",
        "hookSpecificOutput": {"clearContext": clear},
    }
    after_agent = hook(tmp_path, "after_agent", deny, on_retry="")  # stops on the retry
    write_settings(tmp_path, {"AfterAgent": [group(after_agent)]})
    fake_gemini.add(
        text_response("first answer"),
        text_response("Summary: done."),
        text_response("later"),
        text_response("Summary: later."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("do the thing", timeout=90) == {"stopReason": "end_turn"}

    first, retry = calls(tmp_path, "after_agent")
    assert (first["stop_hook_active"], retry["stop_hook_active"]) == (False, True)
    assert first["prompt"] == "do the thing" and first["prompt_response"] == "first answer"
    assert retry["prompt"] == "Add a summary." and retry["prompt_response"] == "Summary: done."
    assert "Agent execution blocked: Add a summary." in agent.text()
    retried = fake_gemini.generate_requests[1]
    assert retried.last_user_text == "Add a summary."
    sent_before = json.dumps(retried.contents)
    assert ("first answer" in sent_before) is not clear
    assert ("Conversation context has been cleared." in agent.text()) is clear

    assert await agent.prompt("next", timeout=90) == {"stopReason": "end_turn"}
    assert ("do the thing" in json.dumps(fake_gemini.generate_requests[2].contents)) is not clear


STOP = {"continue": False, "stopReason": "Freeze in effect."}


@pytest.mark.parametrize(
    ("event", "matcher"),
    [
        pytest.param("BeforeTool", "run_shell_command", id="BeforeTool"),
        pytest.param("AfterTool", "run_shell_command", id="AfterTool"),
        pytest.param("BeforeAgent", "", id="BeforeAgent"),
        pytest.param("BeforeModel", "", id="BeforeModel"),
        pytest.param("AfterModel", "", id="AfterModel"),
        pytest.param("AfterAgent", "", id="AfterAgent"),
    ],
)
async def test_continue_false_from_any_event_ends_the_turn_cleanly_with_its_reason(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    tmp_path: Path,
    event: str,
    matcher: str,
) -> None:
    write_settings(tmp_path, {event: [group(hook(tmp_path, "stopper", STOP), matcher=matcher)]})
    script = tmp_path / "script.jsonl"
    call = {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hi"}}}
    answers = [api_line(call), api_line({"text": "after the call"})]
    script.write_text("\n".join(answers * 3))
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--fake-responses", str(script)],
    )
    assert await agent.prompt("run echo hi", timeout=90) == {"stopReason": "end_turn"}  # not -32603
    text = agent.text()
    assert "Agent execution stopped: Freeze in effect." in text
    assert len(calls(tmp_path, "stopper")) == 1
    # the model is not called after the stop (AfterAgent fires once the answer is done)
    assert ("after the call" in text) is (event == "AfterAgent")
    if event == "BeforeTool":
        assert agent.client.permission_requests == []  # stopped before any approval
    # the session still serves the next prompt
    assert await agent.prompt("again", timeout=90) == {"stopReason": "end_turn"}


async def test_a_before_agent_stop_keeps_the_prompt_in_the_history_and_the_record(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """Gemini CLI adds a prompt a BeforeAgent hook stopped to the chat: the next request
    carries it, and a load in a new process shows it."""
    stopper = tmp_path / "freeze.py"
    stopper.write_text(  # stops the prompts that mention the freeze, lets the others pass
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"answer = {json.dumps(STOP)!r} if 'freeze' in data['prompt'] else ''\n"
        "sys.stdout.write(answer)\n"
    )
    write_settings(tmp_path, {"BeforeAgent": [group(f"python3 {stopper}")]})
    fake_gemini.add(text_response("Noted the freeze."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("deploy despite the freeze", timeout=90) == {"stopReason": "end_turn"}
    assert "Agent execution stopped: Freeze in effect." in agent.text()
    assert fake_gemini.generate_requests == []  # the model was not called

    assert await agent.prompt("what did I ask?", timeout=90) == {"stopReason": "end_turn"}
    [request] = fake_gemini.generate_requests
    assert contents_text(request) == [
        ("user", "deploy despite the freeze"),
        ("user", "what did I ask?"),
    ]

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    replayed = [
        u["content"]["text"] for u in client.updates(agent.session_id, "user_message_chunk")
    ]
    assert replayed == ["deploy despite the freeze", "what did I ask?"]
