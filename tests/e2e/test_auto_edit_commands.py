"""Issue 18 end to end: what auto edit runs without asking, through the real process.

In auto edit a read-only command runs unasked; a command that writes, runs a
program or reads secrets reaches the editor as a permission request; an edit
under `.git/` is asked (yolo too), and once one ran, git commands are asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import PendingRequest
from tests.e2e.tools_harness import (
    BARE,
    Agent,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

SHELL = "run_shell_command"


async def prompt_in_mode(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    mode: str,
    files: dict[str, str] | None = None,
) -> tuple[Agent, PendingRequest]:
    """An agent in `mode` (no fs or terminal: local files and commands) whose permission
    requests the test answers, and the pending answer to its first prompt."""
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake,
        BARE,
        args=["--approval-mode", mode],
        files=files,
        permission_policy="queue",
    )
    return agent, agent.client.start_prompt(agent.session_id, "go on")


async def test_auto_edit_asks_for_must_ask_commands_and_runs_read_only_ones(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(SHELL, {"command": "git diff --output=out.patch"}),
        function_call_response(SHELL, {"command": "cat .env"}),
        function_call_response(SHELL, {"command": "ls -1"}),
        text_response("done"),
    )
    agent, pending = await prompt_in_mode(
        make_agent,
        tmp_path,
        fake_gemini,
        "autoEdit",
        {"README.md": "hello\n", ".env": "TOKEN=secret\n"},
    )
    asked = await agent.client.next_permission_request(timeout=90)
    assert "git diff --output=out.patch" in asked.tool_call["title"]
    asked.select("cancel")
    asked = await agent.client.next_permission_request(timeout=60)
    assert "cat .env" in asked.tool_call["title"]
    asked.select("cancel")
    assert await pending.result(60) == {"stopReason": "end_turn"}

    assert len(agent.client.permission_requests) == 2  # `ls -1` was not asked
    assert not (agent.workspace / "out.patch").exists()
    (ls,) = function_responses(fake_gemini.generate_requests[-1])
    assert "README.md" in response_text(ls)
    assert "TOKEN=secret" not in str([r.contents for r in fake_gemini.generate_requests])


async def test_a_write_under_git_dir_is_asked_and_makes_git_asked(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(SHELL, {"command": "git status --short"}),
        function_call_response(
            "write_file", {"file_path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"}
        ),
        function_call_response(SHELL, {"command": "git status --short"}),
        text_response("done"),
    )
    agent, pending = await prompt_in_mode(
        make_agent, tmp_path, fake_gemini, "autoEdit", {"a.txt": "a\n", ".git/hooks/.keep": ""}
    )
    # the first git status ran unasked; the write under .git/ is asked, even in auto edit
    asked = await agent.client.next_permission_request(timeout=90)
    assert asked.tool_call["kind"] == "edit"
    assert ".git/hooks/post-checkout" in str(asked.tool_call)
    asked.select("proceed_once")
    # after it, git status is asked
    asked = await agent.client.next_permission_request(timeout=60)
    assert "git status --short" in asked.tool_call["title"]
    asked.select("cancel")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert len(agent.client.permission_requests) == 2
    assert (agent.workspace / ".git" / "hooks" / "post-checkout").exists()


async def test_yolo_asks_for_an_edit_under_git_dir_only(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "b.txt", "content": "b\n"}),
        function_call_response("write_file", {"file_path": ".git/config", "content": "x\n"}),
        text_response("done"),
    )
    agent, pending = await prompt_in_mode(make_agent, tmp_path, fake_gemini, "yolo")
    asked = await agent.client.next_permission_request(timeout=90)
    assert ".git/config" in str(asked.tool_call)
    asked.select("cancel")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert (agent.workspace / "b.txt").read_text() == "b\n"
    assert not (agent.workspace / ".git" / "config").exists()
    assert len(agent.client.permission_requests) == 1
