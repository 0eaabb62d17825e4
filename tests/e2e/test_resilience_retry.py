"""Retries over ACP (issue #4): transient model failures never reach the editor as
questions; the answer arrives. When retries run out, the prompt fails with a clear
JSON-RPC error and the session stays usable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError, JsonObject, selected
from tests.e2e.resilience_harness import PRO, MakeAgent, start
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    capacity_429,
    per_minute_quota_429,
    server_error_500,
    text_response,
)

pytestmark = pytest.mark.e2e


def refuse_fallback(params: JsonObject) -> JsonObject:
    return selected("stop")


async def test_a_per_minute_429_is_retried_on_the_same_model_and_the_retry_told(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_minute_quota_429(PRO, retry="12s"), text_response("after the rate limit"))
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=refuse_fallback)

    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    # issue 34.5: every retry is told (Gemini CLI retried this one silently)
    told, answer = agent.text().rsplit("\n\n", 1)
    assert answer == "after the rate limit"
    assert f"The model call failed ({PRO} at {fake_gemini.base_url}: HTTP 429" in told
    assert "attempt 1 of 10, next try in" in told
    assert fake_gemini.models_called == [PRO, PRO]
    first, second = fake_gemini.generate_requests
    assert second.contents == first.contents
    assert agent.client.permission_requests == []
    assert agent.updates("config_option_update") == []


async def test_capacity_errors_server_errors_and_a_dropped_stream_are_all_retried(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        capacity_429(PRO),
        capacity_429(PRO),
        text_response("capacity answer"),
        server_error_500(),
        text_response("server answer"),
        text_response(["The stream ", "broke ", "off"]).drop_after(1),
        text_response(["The stream ", "was ", "retried"]),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=refuse_fallback)

    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    assert agent.text().endswith("capacity answer")
    assert agent.text().count(f"{PRO} at {fake_gemini.base_url} is at capacity") == 2
    assert fake_gemini.models_called == [PRO] * 3

    assert await agent.prompt("two") == {"stopReason": "end_turn"}
    assert agent.text().endswith("server answer")
    assert "HTTP 500 (server error)" in agent.text()
    assert fake_gemini.models_called == [PRO] * 5

    mark = len(agent.updates("agent_message_chunk"))
    assert await agent.prompt("three") == {"stopReason": "end_turn"}
    chunks = [u["content"]["text"] for u in agent.updates("agent_message_chunk")[mark:]]
    # the user is told, after the fragment that was shown; then the final answer arrives
    assert chunks[0] == "The stream "
    assert "interrupted" in chunks[1] and "Retrying" in chunks[1]
    assert "".join(chunks[2:]) == "The stream was retried"
    assert fake_gemini.models_called == [PRO] * 7
    assert agent.client.permission_requests == []


async def test_exhausted_retries_end_with_a_clear_error_and_the_session_stays_usable(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        *[server_error_500("the backend is down")] * 10,
        *[text_response(["half an ", "answer"]).drop_after(1)] * 4,
        text_response("working again"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=refuse_fallback)

    with pytest.raises(AcpError) as failure:
        await agent.prompt("one")
    assert failure.value.code == -32003
    assert "500" in failure.value.message and "the backend is down" in failure.value.message
    assert "Traceback" not in failure.value.message
    assert fake_gemini.models_called == [PRO] * 10
    # out of attempts, the agent offered the fallback model; the user said stop
    (question,) = agent.client.permission_requests
    assert question.tool_call["kind"] == "switch_mode"

    with pytest.raises(AcpError) as broken:
        await agent.prompt("two")
    assert broken.value.code == -32003
    assert "broke off 4 times" in broken.value.message and PRO in broken.value.message
    assert broken.value.data == {
        "status": "UNAVAILABLE",
        "code": "STREAM_INTERRUPTED",
        "model": PRO,
    }
    assert fake_gemini.models_called == [PRO] * 14

    assert await agent.prompt("three") == {"stopReason": "end_turn"}
    assert agent.text().endswith("working again")
