"""Spine e2e (issue #2): bad input, unknown sessions, model errors and stdin EOF,
through the real `adk-acp` process. Every error is a JSON-RPC error with a clear
message, and the server (and the session) keeps serving afterwards."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError, AcpTestClient
from tests.e2e.spine import MakeAgent, children_of, dirs, start_agent, start_session
from tests.e2e.tools_harness import wait_group_gone
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    error_response,
    function_call_response,
    server_error_500,
    text_response,
)

pytestmark = pytest.mark.e2e

FAST_RETRIES = {"ADK_ACP_RETRY_DELAY_SCALE": "0.001"}


def _no_stack_trace(message: str) -> None:
    assert "Traceback" not in message and 'File "' not in message, message
    assert len(message) < 2000, message


async def _still_serving(client: AcpTestClient, session_id: str) -> None:
    """A cheap request that needs the whole dispatch path."""
    result = await client.set_mode(session_id, "default")
    assert result == {} or isinstance(result, dict)


# ---------------------------------------------------------------- bad input


async def test_bad_input_gets_json_rpc_errors_and_serving_goes_on(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)

    bad_lines = [
        b'{"jsonrpc": "2.0", "id": 99, "method": ',  # cut short
        b"[" * 100_000 + b"]" * 100_000,  # valid JSON, too deep to parse
        b'{"jsonrpc": "2.0", "method": "_x", "params": {"text": "\xff\xfe"}}',  # not UTF-8
    ]
    for line in bad_lines:
        await client.send_raw_line(line)
        await _still_serving(client, sid)
    assert [e["error"]["code"] for e in client.orphan_errors] == [-32700] * len(bad_lines)
    await client.send_raw_line(b"[]")  # JSON, but not a JSON-RPC message
    await _still_serving(client, sid)
    assert client.orphan_errors[-1]["error"]["code"] == -32600

    with pytest.raises(AcpError) as info:
        await client.request("session/prompt", {"sessionId": sid, "prompt": "not a list"})
    assert info.value.code == -32602
    assert isinstance(info.value.data, list) and info.value.data
    assert any("prompt" in [str(x) for x in err["loc"]] for err in info.value.data)
    with pytest.raises(AcpError) as info:
        await client.request("session/new", {"mcpServers": []})
    assert info.value.code == -32602 and "cwd" in info.value.message

    with pytest.raises(AcpError) as info:
        await client.request("session/fly", {"sessionId": sid})
    assert info.value.code == -32601
    with pytest.raises(AcpError) as info:
        await client.request("_vendor/extension", {})
    assert info.value.code == -32601

    def answers() -> list[dict[str, object]]:
        return [m for who, m in client.transcript if who == "agent" and "id" in m]

    answered = len(answers())
    await client.notify("session/unknown_notification", {"sessionId": sid})
    await client.notify("_vendor/ping", {})
    await _still_serving(client, sid)
    replies = answers()[answered:]
    assert len(replies) == 1 and "result" in replies[0]  # only the set_mode answer
    assert len(client.orphan_errors) == len(bad_lines) + 1


async def test_unknown_session_ids_are_resource_not_found(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    calls = [
        ("session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
        ("session/set_mode", {"sessionId": "nope", "modeId": "plan"}),
        ("session/set_config_option", {"sessionId": "nope", "configId": "mode", "value": "plan"}),
    ]
    for method, params in calls:
        with pytest.raises(AcpError) as info:
            await client.request(method, params)
        assert info.value.code == -32002, method
        assert "Session not found: nope" in info.value.message, method
    await _still_serving(client, sid)


# ---------------------------------------------------------------- model errors


async def test_model_400_is_a_clear_error_and_the_session_goes_on(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        error_response(400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
        text_response("recovered"),
    )
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini, env=FAST_RETRIES)
    with pytest.raises(AcpError) as info:
        await client.prompt(sid, "trigger a 400")
    assert info.value.code in (-32603, -32003)
    assert "invalid argument" in info.value.message.lower()
    assert "400" in info.value.message or "INVALID_ARGUMENT" in str(info.value.data)
    _no_stack_trace(info.value.message)
    assert len(fake_gemini.generate_requests) == 1  # a 400 is not retried
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert client.text_of(sid).endswith("recovered")


async def test_model_500s_until_retries_run_out(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.default = server_error_500("The service is having a bad day.")
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini, env=FAST_RETRIES)
    started = time.monotonic()
    with pytest.raises(AcpError) as info:
        await client.prompt(sid, "trigger 500s", timeout=60)
    assert time.monotonic() - started < 30  # scaled-down pauses (unscaled: minutes)
    assert info.value.code in (-32603, -32003)
    assert "bad day" in info.value.message or "500" in info.value.message
    _no_stack_trace(info.value.message)
    assert len(fake_gemini.generate_requests) > 1  # retried before giving up
    fake_gemini.default = text_response("back to normal")
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert client.text_of(sid).endswith("back to normal")


# ---------------------------------------------------------------- stdin EOF


async def _exit_time(client: AcpTestClient) -> float:
    assert client.process is not None and client.process.stdin is not None
    started = time.monotonic()
    client.process.stdin.close()
    await asyncio.wait_for(client.process.wait(), 10)
    return time.monotonic() - started


@pytest.mark.cold  # the agent process' own group
async def test_stdin_eof_exits_at_once_after_a_turn(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("done"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
    assert client.process is not None
    pid = client.process.pid
    elapsed = await _exit_time(client)
    assert client.process.returncode == 0
    assert elapsed < 3.0, f"exit took {elapsed:.2f}s"  # not the 30 s of what it waited on
    await wait_group_gone(pid)
    assert await client.close() == 0


@pytest.mark.cold  # children of the agent process
async def test_stdin_eof_during_a_turn_kills_its_command(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """A prompt is running a local shell command (no editor terminal) and another
    session waits on the model: EOF still ends the agent within a second, and the
    command's process group goes with it."""
    d = dirs(tmp_path)
    hang = HangPoint()
    fake_gemini.add(function_call_response("run_shell_command", {"command": "sleep 30"}))
    client = await start_agent(
        make_agent, d, fake_gemini, args=["--approval-mode", "yolo"], caps={}
    )
    first = (await client.new_session(d.workspace))["sessionId"]
    second = (await client.new_session(d.workspace))["sessionId"]
    client.start_prompt(first, "run a slow command")
    assert client.process is not None
    pid = client.process.pid
    deadline = time.monotonic() + 10
    while not (kids := children_of(pid)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert kids, "the shell command never started"
    fake_gemini.add(text_response(["never"]).hang_after(0, hang))
    client.start_prompt(second, "and wait on the model")
    await hang.wait_reached_async()

    elapsed = await _exit_time(client)
    assert client.process.returncode == 0
    assert elapsed < 3.0, f"exit took {elapsed:.2f}s"  # not the 30 s of what it waited on
    await asyncio.sleep(0.1)
    alive = [k for k in kids if os.path.exists(f"/proc/{k}") and _state(k) != "Z"]
    assert alive == [], f"left behind: {alive}"
    await wait_group_gone(pid)
    await client.close(check=False)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
