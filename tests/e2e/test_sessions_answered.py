"""No prompt left unanswered (issue 18.5), through the real process: a close or a
delete while a prompt waits on the model answers that prompt `cancelled` first; two
loads of one session sent back to back share one engine (one set of MCP servers); a
permission request the editor answers with a JSON-RPC error ends the call `failed`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInternalError

from tests.e2e.acp_client import JsonObject
from tests.e2e.test_sessions import another_process
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
)

pytestmark = pytest.mark.e2e


def answer_position(transcript: list[tuple[str, JsonObject]], request_id: int | str) -> int:
    return next(
        i
        for i, (who, message) in enumerate(transcript)
        if who == "agent" and message.get("id") == request_id and "method" not in message
    )


@pytest.mark.parametrize("method", ["session/close", "session/delete"])
async def test_closing_a_session_answers_its_waiting_prompt_cancelled_first(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, method: str
) -> None:
    hang = HangPoint()
    fake_gemini.add(text_response(["Half an ", "answer"]).hang_after(1, hang))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    client = agent.client
    prompt = client.start_prompt(agent.session_id, "tell me")
    await hang.wait_reached_async()

    closing = client.begin(method, {"sessionId": agent.session_id})
    assert await closing.result(30) == {}
    assert await prompt.result(5) == {"stopReason": "cancelled"}
    assert answer_position(client.transcript, prompt.id) < answer_position(
        client.transcript, closing.id
    )
    hang.release()
    # the process keeps serving
    fake_gemini.add(text_response("fresh"))
    other = (await client.new_session(agent.workspace))["sessionId"]
    assert await client.prompt(other, "hello") == {"stopReason": "end_turn"}


async def test_two_loads_sent_back_to_back_share_one_engine(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(text_response("first"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    # every engine built runs the SessionStart hooks once (as would its MCP servers)
    starts = tmp_path / "engine-starts.log"
    hook = {"type": "command", "command": f'echo started >> "{starts}"'}
    settings = agent.workspace / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    client = await another_process(make_agent, agent)
    params = {"sessionId": agent.session_id, "cwd": str(agent.workspace), "mcpServers": []}
    first = client.begin("session/load", params)
    second = client.begin("session/load", params)
    await first.result()
    await second.result()
    assert starts.read_text().splitlines() == ["started"]
    # each load replayed the conversation, the second after the first was answered
    users = [
        i
        for i, (who, m) in enumerate(client.transcript)
        if who == "agent"
        and m.get("params", {}).get("update", {}).get("sessionUpdate") == "user_message_chunk"
    ]
    assert len(users) == 2
    assert users[0] < answer_position(client.transcript, first.id) < users[1]
    assert answer_position(client.transcript, second.id) > users[1]

    fake_gemini.add(text_response("second"))
    assert await client.prompt(agent.session_id, "again") == {"stopReason": "end_turn"}
    assert client.text_of(agent.session_id).endswith("second")
    assert starts.read_text().splitlines() == ["started"]


async def test_a_permission_request_answered_with_an_error_fails_the_call(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    def broken_dialog(params: JsonObject) -> JsonObject:
        raise JsonRpcInternalError("the permission dialog crashed")

    fake_gemini.add(
        function_call_response("write_file", {"file_path": "a.txt", "content": "new\n"}),
        text_response("I could not write it."),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, permission_policy=broken_dialog
    )
    assert await agent.prompt("write a.txt") == {"stopReason": "end_turn"}

    [call] = agent.client.updates(agent.session_id, "tool_call")
    final = agent.client.updates(agent.session_id, "tool_call_update")[-1]
    assert final["toolCallId"] == call["toolCallId"] and final["status"] == "failed"
    assert not (agent.workspace / "a.txt").exists()
    sent_back = fake_gemini.generate_requests[-1].contents[-1]["parts"][0]["functionResponse"]
    assert "permission dialog crashed" in str(sent_back["response"])
    assert agent.client.text_of(agent.session_id).endswith("I could not write it.")
