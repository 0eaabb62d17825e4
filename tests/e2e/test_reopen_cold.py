"""A thread reopened at a cold spawn (issue 37.1): `session/load` and `session/resume`
sent right after `initialize` are answered from the record while the server and the
engine still load (`acp_server/early_reopen.py`), with what the full handler would
send, and the engine opened behind the answer carries the conversation on.

Cold by premise: a warm-served spawn has its server loaded before its first line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpError, AcpTestClient, JsonObject
from tests.e2e.test_sessions import another_process, contents_text
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    parts_response,
    text_part,
    text_response,
    thought_part,
)

pytestmark = [pytest.mark.e2e, pytest.mark.cold, pytest.mark.timeout(300)]

PATIENT_S = 120.0
CAPS: JsonObject = {**EDITOR, "plan": {}, "session": {"notices": {}, "compaction": {}}}
COMMANDS = "available_commands_update"


async def recorded(make_agent: MakeAgent, fake: FakeGeminiServer, tmp_path: Path) -> Agent:
    """A session with a tool call and its diff, a thought, a title and the mode chosen
    in the editor (autoEdit), then its process closed."""
    fake.add(
        function_call_response("write_file", {"file_path": "notes.txt", "content": "hello\n"}),
        text_response("Wrote notes.txt."),
        parts_response([[thought_part("thinking it over")], [text_part("The answer is 42.")]]),
    )
    agent = await start_agent(make_agent, tmp_path, fake, CAPS, args=["--approval-mode", "yolo"])
    assert await agent.prompt("Create notes.txt please") == {"stopReason": "end_turn"}
    assert await agent.prompt("What is the answer?") == {"stopReason": "end_turn"}
    await agent.client.set_mode(agent.session_id, "autoEdit")
    await agent.client.close()
    return agent


async def reopened(
    make_agent: MakeAgent, agent: Agent, method: str, *, list_first: bool = False
) -> tuple[AcpTestClient, Any, list[JsonObject]]:
    """A fresh process sending `method` right after `initialize` (after a `session/list`
    when `list_first`, which the server answers: the request then meets the full
    handler). Its answer and the updates sent before it."""
    client = await another_process(make_agent, agent, caps=CAPS)
    client.default_timeout = PATIENT_S
    if list_first:
        await client.request("session/list", {"cwd": str(agent.workspace)})
    params = {"sessionId": agent.session_id, "cwd": str(agent.workspace), "mcpServers": []}
    answer = await client.begin(method, params).result(PATIENT_S)
    return client, answer, client.updates(agent.session_id)


async def test_a_load_at_a_cold_spawn_is_answered_from_the_record_as_the_server_would(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await recorded(make_agent, fake_gemini, tmp_path)
    full, full_answer, full_replay = await reopened(
        make_agent, agent, "session/load", list_first=True
    )
    await full.close()
    client, answer, replay = await reopened(make_agent, agent, "session/load")

    # the same replay and answer as the full handler's; the engine was not waited for:
    # its slash commands come after the answer, once it is open
    assert replay == [u for u in full_replay if u["sessionUpdate"] != COMMANDS]
    assert any(u["sessionUpdate"] == COMMANDS for u in full_replay)
    assert answer == full_answer and answer["modes"]["currentModeId"] == "autoEdit"
    kinds = [u["sessionUpdate"] for u in replay]
    assert {"user_message_chunk", "tool_call", "agent_thought_chunk"} <= set(kinds)
    assert "session_info_update" in kinds
    await client.wait_for_update(lambda u: u["sessionUpdate"] == COMMANDS, timeout=PATIENT_S)

    # the engine opened behind the answer carries the conversation on
    fake_gemini.add(text_response("Still 42."))
    assert await client.prompt(agent.session_id, "And again?") == {"stopReason": "end_turn"}
    history = contents_text(fake_gemini.generate_requests[-1])
    assert [h for h in history if h[1] != "thought"] == [
        ("user", "Create notes.txt please"),
        ("model", "call:write_file"),
        ("user", "response:write_file"),
        ("model", "Wrote notes.txt."),
        ("user", "What is the answer?"),
        ("model", "The answer is 42."),
        ("user", "And again?"),
    ]
    assert client.text_of(agent.session_id).endswith("Still 42.")


async def test_a_resume_at_a_cold_spawn_is_answered_without_replay_and_carries_on(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await recorded(make_agent, fake_gemini, tmp_path)
    client, answer, before = await reopened(make_agent, agent, "session/resume")
    assert answer["modes"]["currentModeId"] == "autoEdit"
    assert [u["sessionUpdate"] for u in before] in ([], [COMMANDS])  # no replay
    fake_gemini.add(text_response("Resumed."))
    assert await client.prompt(agent.session_id, "Go on") == {"stopReason": "end_turn"}
    history = contents_text(fake_gemini.generate_requests[-1])
    assert history[0] == ("user", "Create notes.txt please") and history[-1] == ("user", "Go on")


async def test_what_the_record_cannot_answer_at_a_cold_spawn_gets_the_servers_error(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await recorded(make_agent, fake_gemini, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    unknown = {"sessionId": "f" * 32, "cwd": str(agent.workspace), "mcpServers": []}
    other_workspace = {"sessionId": agent.session_id, "cwd": str(elsewhere), "mcpServers": []}
    for params, code in ((unknown, -32002), (other_workspace, -32602)):
        client = await another_process(make_agent, agent, caps=CAPS)
        with pytest.raises(AcpError) as error:
            await client.begin("session/load", params).result(PATIENT_S)
        assert error.value.code == code
        assert client.updates() == []  # nothing replayed
        fake_gemini.add(text_response("still serving"))
        other = (await client.new_session(agent.workspace))["sessionId"]
        assert await client.prompt(other, "hello") == {"stopReason": "end_turn"}
        await client.close()
