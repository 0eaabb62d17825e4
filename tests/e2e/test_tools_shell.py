"""Issue #3 end to end: `run_shell_command` through the real agent process.

With a client that offers terminals the command runs in an editor terminal
(terminal/create, the terminal embedded in the tool call, output read, released);
without, it runs as a local process group whose output streams into the tool
call. A cancel while a long command runs ends the turn as cancelled at once and
leaves no process behind.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from runtime.host import TERMINAL_STOP_WAIT_S
from runtime.tools.io.process_group import live_group_members
from tests.e2e.acp_client import PendingRequest
from tests.e2e.tools_harness import (
    CAPS,
    EDITOR,
    Agent,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
    stop_order,
    uses_editor,
    wait_group_gone,
    wait_until,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


def content_texts(update: dict) -> list[str]:
    return [
        c["content"]["text"]
        for c in update.get("content") or []
        if c.get("type") == "content" and c["content"].get("type") == "text"
    ]


@pytest.mark.parametrize("caps", CAPS)
async def test_a_command_runs_in_the_editor_terminal_or_locally(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    command = "printf 'one\\n'; sleep 0.8; printf 'two\\n'"
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": command}),
        text_response("It printed two lines."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps)

    assert await agent.prompt("run it") == {"stopReason": "end_turn"}

    (request,) = agent.client.permission_requests
    assert request.tool_call["kind"] == "execute"
    assert request.tool_call["title"] == f"Run `{command}`"
    (call,) = agent.tool_calls()
    updates = agent.tool_updates(call["toolCallId"])
    assert updates[-1]["status"] == "completed"
    (response,) = function_responses(fake_gemini.generate_requests[1])
    output = response_text(response)
    assert f"Command: {command}" in output and "Output: one\ntwo" in output

    if uses_editor(caps):
        methods = [method for method, _ in agent.client.terminals.calls]
        assert methods[0] == "create" and methods[-1] == "release"
        assert "output" in methods and "kill" not in methods
        create = agent.client.terminals.calls[0][1]
        assert create["args"][-1] == command and create["cwd"] == str(agent.workspace)
        (terminal,) = agent.client.terminals.created
        assert terminal.released
        embedded = {"type": "terminal", "terminalId": terminal.id}
        assert any(embedded in (u.get("content") or []) for u in updates[1:-1])
        assert embedded in updates[-1]["content"]
    else:
        assert agent.client.terminals.calls == []
        streamed = [t for u in updates[1:-1] for t in content_texts(u)]
        # output arrives while the command still runs, then complete at the end
        assert "one\n" in streamed
        assert content_texts(updates[-1]) == ["one\ntwo\n"]


async def _long_command_running(agent: Agent, fake_gemini: FakeGeminiServer) -> PendingRequest:
    """A prompt whose shell command runs (in the editor's terminal) until it is killed."""
    before = len(agent.client.terminals.created)
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": "echo started-marker; sleep 30"})
    )
    pending = agent.client.start_prompt(agent.session_id, "run something long")
    await wait_until(
        lambda: (
            len(agent.client.terminals.created) > before
            and "started-marker" in agent.client.terminals.created[-1].text()
        ),
        20,
        "the command's marker in the editor terminal",
    )
    return pending


async def test_a_cancel_waits_for_a_slow_release_and_at_most_the_bound_for_none(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    terminals = agent.client.terminals
    gate = terminals.release_gate = asyncio.Event()

    # an editor slow to release (past the turn's abort grace): the answer waits for it
    pending = await _long_command_running(agent, fake_gemini)
    await agent.client.cancel(agent.session_id)
    await wait_until(lambda: "release" in [m for m, _ in terminals.calls], 10, "release asked")
    await asyncio.sleep(1.0)  # held past the turn's abort grace (0.25 s): a second cancel
    assert not pending.done()
    gate.set()
    assert await pending.result(10) == {"stopReason": "cancelled"}
    assert stop_order(agent.client) == ["kill", "release", "cancelled"]
    await wait_group_gone(terminals.created[0].process.pid)

    # an editor that never answers the release: the cancel answers after the bound
    gate = terminals.release_gate = asyncio.Event()
    pending = await _long_command_running(agent, fake_gemini)
    started = time.monotonic()
    await agent.client.cancel(agent.session_id)
    assert await pending.result(TERMINAL_STOP_WAIT_S + 20) == {"stopReason": "cancelled"}
    assert TERMINAL_STOP_WAIT_S <= time.monotonic() - started < TERMINAL_STOP_WAIT_S + 10
    assert stop_order(agent.client)[3:] == ["kill", "cancelled"]  # the release unanswered
    await wait_group_gone(terminals.created[1].process.pid)  # killed all the same
    assert "did not release terminal term-2" in agent.client.stderr_text

    # the session goes on; the late answer to the release is dropped quietly
    fake_gemini.add(text_response("ready"))
    assert await agent.prompt("next") == {"stopReason": "end_turn"}
    gate.set()
    await wait_until(lambda: terminals.created[1].released, 10, "the late release")
    fake_gemini.add(text_response("still ready"))
    assert await agent.prompt("and next") == {"stopReason": "end_turn"}


@pytest.mark.parametrize("caps", CAPS)
async def test_cancel_stops_a_long_command_and_leaves_no_process(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    # a background child in the group, and SIGTERM ignored by all: only SIGKILL ends them
    command = "trap '' TERM; sleep 29 & echo $$ > pid.txt; echo started-marker; sleep 30"
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": command}),
        text_response("never sent"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps)
    pid_file = agent.workspace / "pid.txt"
    pending = agent.client.start_prompt(agent.session_id, "run something long")

    if uses_editor(caps):
        await wait_until(
            lambda: (
                bool(agent.client.terminals.created)
                and "started-marker" in agent.client.terminals.created[0].text()
            ),
            20,
            "the command's marker in the editor terminal",
        )
        pgid = agent.client.terminals.created[0].process.pid
    else:
        await agent.client.wait_for_update(
            lambda u: any("started-marker" in t for t in content_texts(u)),
            session_id=agent.session_id,
            timeout=20,
        )
        pgid = int(pid_file.read_text())
    assert live_group_members(pgid)  # the command runs

    started = time.monotonic()
    await agent.client.cancel(agent.session_id)
    assert await pending.result(10) == {"stopReason": "cancelled"}
    assert time.monotonic() - started < 5

    if uses_editor(caps):
        # ACP: the command killed and its terminal released before the `cancelled` answer
        assert stop_order(agent.client) == ["kill", "release", "cancelled"]
        assert [method for method, _ in agent.client.terminals.calls][-2:] == ["kill", "release"]
    await wait_group_gone(pgid)
    (call,) = agent.tool_calls()
    assert agent.final(call["toolCallId"])["status"] == "failed"
    assert len(fake_gemini.generate_requests) == 1

    # the session goes on
    fake_gemini.add(text_response("ready"))
    assert await agent.prompt("next") == {"stopReason": "end_turn"}
