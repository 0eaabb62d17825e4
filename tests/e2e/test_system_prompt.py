"""A client-supplied system prompt (ACP `systemPrompt`, issue 22), through the real agent:
advertised in `initialize`; `append` and `override` applied to the model's system
instruction; kept in the record, so a load or resume without one restores it; a new one
on resume replaces it; an unsupported mode or a non-text block refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpError, AcpTestClient, JsonObject
from tests.e2e.test_sessions import another_process
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = pytest.mark.e2e

CORE = "You are an interactive coding agent"


def system_prompt(mode: str, *texts: str) -> JsonObject:
    return {"mode": mode, "content": [{"type": "text", "text": t} for t in texts]}


async def open_with(
    client: AcpTestClient, method: str, cwd: Path, prompt: JsonObject | None, **more: Any
) -> JsonObject:
    params: JsonObject = {"cwd": str(cwd), "mcpServers": [], **more}
    if prompt is not None:
        params["systemPrompt"] = prompt
    result: JsonObject = await client.request(method, params)
    return result


async def test_append_and_override_reach_the_model_and_survive_load_and_resume(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(*(text_response(f"answer {i}") for i in range(5)))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    init = await agent.client.initialize(EDITOR)  # answered again, the same way
    assert init["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {
        "mode": {"override": {}}
    }
    client, ws = agent.client, agent.workspace

    # a session without one: the agent's own instructions only
    assert await agent.prompt("plain") == {"stopReason": "end_turn"}
    plain = fake_gemini.generate_requests[-1].system_instruction_text
    assert CORE in plain and "Instructions from the editor" not in plain

    appended = await open_with(
        client, "session/new", ws, system_prompt("append", "Answer in French.")
    )
    await client.prompt(appended["sessionId"], "hi")
    sent = fake_gemini.generate_requests[-1].system_instruction_text
    assert CORE in sent and sent.rstrip().endswith("Answer in French.")

    overridden = await open_with(client, "session/new", ws, system_prompt("override", "Be a poet."))
    await client.prompt(overridden["sessionId"], "hi")
    sent = fake_gemini.generate_requests[-1].system_instruction_text
    assert sent.startswith("Be a poet.") and CORE not in sent
    assert str(ws) in sent  # the environment stays

    # another process: a load without one keeps the recorded prompt
    other = await another_process(make_agent, agent)
    await other.load_session(appended["sessionId"], ws)
    assert await other.prompt(appended["sessionId"], "again") == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests[-1].system_instruction_text.endswith("Answer in French.\n")
    # a resume with a new one replaces it (and the record keeps the new one)
    third = await another_process(make_agent, agent)
    await open_with(
        third,
        "session/resume",
        ws,
        system_prompt("override", "Be terse."),
        sessionId=overridden["sessionId"],
    )
    assert await third.prompt(overridden["sessionId"], "again") == {"stopReason": "end_turn"}
    sent = fake_gemini.generate_requests[-1].system_instruction_text
    assert sent.startswith("Be terse.") and "poet" not in sent


async def test_an_unsupported_mode_or_block_is_refused_and_nothing_is_opened(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    bad: list[JsonObject] = [
        system_prompt("_merge", "x"),
        {"mode": "append", "content": []},
        {"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
    ]
    for prompt in bad:
        with pytest.raises(AcpError) as refused:
            await open_with(agent.client, "session/new", agent.workspace, prompt)
        assert refused.value.code == -32602
    listed = await agent.client.request("session/list", {"cwd": str(agent.workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [agent.session_id]
