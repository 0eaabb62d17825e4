"""Every hook event's input fields and the output fields we honour, one table row per
event (issue 19.1), through the real agent process.

Each row configures one hook for its event; the same session runs for all: SessionStart,
a prompt whose answer writes a file (after an approval), `/compress`, `session/close`.
The row names the event's own input fields (beside the five every hook gets) and checks
the effect of the output it gave."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hooks import calls, group, hook, settings
from tests.e2e.tools_harness import (
    EDITOR,
    Agent,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
    wait_until,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

# Each row starts the agent: a minute or more on a busy machine.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

BASE = {"session_id", "transcript_path", "cwd", "hook_event_name", "timestamp"}
WRITE = {"file_path": "a.txt", "content": "from the model\n"}


def specific(**fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": fields}


def first_user_text(agent: Agent) -> str:
    return agent.fake.generate_requests[0].last_user_text


def tool_answer(agent: Agent) -> str:
    return response_text(function_responses(agent.fake.generate_requests[1])[0])


@dataclass(frozen=True)
class Row:
    event: str
    fields: frozenset[str]
    answer: dict[str, Any]
    check: Callable[[Agent, dict[str, Any]], bool]
    matcher: str = ""


ROWS = [
    Row(
        "SessionStart",
        frozenset({"source"}),
        {"systemMessage": "Hello from start.", **specific(additionalContext="CTX-START")},
        lambda agent, seen: (
            seen["source"] == "startup"
            and "CTX-START" in first_user_text(agent)
            and "Hello from start." in agent.text()
        ),
        matcher="startup",
    ),
    Row(
        "BeforeAgent",
        frozenset({"prompt"}),
        specific(additionalContext="CTX-AGENT"),
        lambda agent, seen: (
            seen["prompt"] == "write a.txt"
            and "<hook_context>CTX-AGENT</hook_context>" in first_user_text(agent)
        ),
    ),
    Row(
        "BeforeModel",
        frozenset({"llm_request"}),
        specific(llm_request={"model": "gemini-2.5-flash"}),
        lambda agent, seen: (
            set(seen["llm_request"]) >= {"model", "messages", "config"}
            # the turn's two calls; /compress's summary call is not the agent's model step
            and set(agent.fake.models_called[:2]) == {"gemini-2.5-flash"}
        ),
    ),
    Row(
        "BeforeToolSelection",
        frozenset({"llm_request"}),
        specific(toolConfig={"mode": "AUTO", "allowedFunctionNames": ["write_file", "glob"]}),
        lambda agent, seen: (
            "write_file" in seen["llm_request"]["toolConfig"]["allowedFunctionNames"]
            and sorted(agent.fake.generate_requests[0].function_declaration_names)
            == ["glob", "write_file"]
        ),
    ),
    Row(
        "AfterModel",
        frozenset({"llm_request", "llm_response"}),
        specific(llm_response={"candidates": [{"content": {"parts": ["[reviewed]"]}}]}),
        lambda agent, seen: (
            "candidates" in seen["llm_response"]
            and "[reviewed]" in agent.text()
            and "done" not in agent.text()
        ),
    ),
    Row(
        "BeforeTool",
        frozenset({"tool_name", "tool_input"}),
        specific(tool_input={"content": "from the hook\n"}),
        lambda agent, seen: (
            seen["tool_input"] == WRITE
            and (agent.workspace / "a.txt").read_text() == "from the hook\n"
            and "A hook changed these arguments of the call before it ran: content"
            in tool_answer(agent)
        ),
        matcher="write_.*",
    ),
    Row(
        "AfterTool",
        frozenset({"tool_name", "tool_input", "tool_response"}),
        specific(additionalContext="CTX-TOOL"),
        lambda agent, seen: (
            set(seen["tool_response"]) >= {"llmContent", "returnDisplay"}
            and tool_answer(agent).endswith("<hook_context>CTX-TOOL</hook_context>")
        ),
        matcher="write_file",
    ),
    Row(
        "Notification",
        frozenset({"notification_type", "message", "details"}),
        {"systemMessage": "Pinged."},
        lambda agent, seen: (
            seen["notification_type"] == "ToolPermission"
            and seen["details"]["type"] == "edit"
            and "Pinged." in agent.text()
        ),
        matcher="ToolPermission",
    ),
    Row(
        "AfterAgent",
        frozenset({"prompt", "prompt_response", "stop_hook_active"}),
        {"systemMessage": "Reviewed by the hook."},
        lambda agent, seen: (
            seen["prompt_response"] == "done"
            and seen["stop_hook_active"] is False
            and "Reviewed by the hook." in agent.text()
        ),
    ),
    Row(
        "PreCompress",
        frozenset({"trigger"}),
        {"systemMessage": "Saving state."},
        lambda agent, seen: seen["trigger"] == "manual" and "Saving state." in agent.text(),
        matcher="manual",
    ),
    Row(
        "SessionEnd",
        frozenset({"reason"}),
        {"systemMessage": "Bye.", "continue": False},  # advisory: nothing to honour
        lambda agent, seen: seen["reason"] == "exit",
    ),
]


@pytest.mark.parametrize("row", [pytest.param(r, id=r.event) for r in ROWS])
async def test_each_events_input_fields_and_honoured_output(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, row: Row
) -> None:
    settings(tmp_path, {row.event: [group(hook(tmp_path, "h", row.answer), matcher=row.matcher)]})
    fake_gemini.add(function_call_response("write_file", WRITE), text_response("done"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    if row.event == "SessionStart":  # session/new may answer before the engine is up
        await wait_until(lambda: bool(calls(tmp_path, "h")), 60, "SessionStart")

    assert await agent.prompt("write a.txt", timeout=90) == {"stopReason": "end_turn"}
    assert await agent.prompt("/compress", timeout=90) == {"stopReason": "end_turn"}
    assert await agent.client.request("session/close", {"sessionId": agent.session_id}) == {}

    seen = calls(tmp_path, "h")
    assert seen, f"the {row.event} hook did not run"
    first = seen[0]
    assert first["hook_event_name"] == row.event
    assert set(first) - {"hook"} == BASE | row.fields
    assert row.check(agent, first)
