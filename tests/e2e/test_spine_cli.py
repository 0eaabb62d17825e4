"""Spine e2e (issue #2): the command line of the real `adk-acp` process —
`--fake-responses`, `--record-responses`, logs (stderr or `--log-file`), the
protocol trace (`--trace-file` / `ADK_ACP_TRACE_FILE`), and stdout carrying ACP
only (the client checks every line it reads)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.spine import MakeAgent, assert_chunks_follow, dirs, start_agent, start_session
from tests.fakes.gemini_server import FakeGeminiServer, text_response, usage

pytestmark = pytest.mark.e2e

SECRET = "AIzaSyD-secret-key-from-meta-0123456789"


def _script_line(*texts: str, thought: str | None = None) -> str:
    chunks = []
    if thought:
        parts = [{"text": thought, "thought": True}]
        chunks.append({"candidates": [{"content": {"role": "model", "parts": parts}}]})
    for i, text in enumerate(texts):
        candidate: dict[str, object] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if i == len(texts) - 1:
            candidate["finishReason"] = "STOP"
        chunks.append({"candidates": [candidate]})
    return json.dumps({"method": "generateContentStream", "response": chunks})


async def test_fake_responses_drive_turns_without_credentials(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    d = dirs(tmp_path)
    script = tmp_path / "script.jsonl"
    script.write_text(
        _script_line("Hello ", "from ", "the script.", thought="Planning a greeting")
        + "\n\n"
        + _script_line("Second turn.")
        + "\n"
    )
    client, sid = await start_session(
        make_agent, d, args=["--fake-responses", str(script)], api_key=None
    )
    assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
    chunks = [u["content"]["text"] for u in client.updates(sid, "agent_message_chunk")]
    assert_chunks_follow(chunks, ["Hello ", "from ", "the script."])
    assert client.text_of(sid, "agent_thought_chunk") == "Planning a greeting"
    assert await client.prompt(sid, "more") == {"stopReason": "end_turn"}
    assert client.text_of(sid).endswith("Second turn.")
    with pytest.raises(AcpError) as info:  # the script has no line left
        await client.prompt(sid, "one too many")
    assert "no entry left" in info.value.message and "Traceback" not in info.value.message


async def test_a_missing_fake_responses_file_fails_each_prompt_clearly_and_the_agent_serves(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    d = dirs(tmp_path)
    script = tmp_path / "missing.jsonl"
    client, sid = await start_session(
        make_agent, d, args=["--fake-responses", str(script)], api_key=None
    )
    with pytest.raises(AcpError) as info:
        await client.prompt(sid, "hi", timeout=60)
    assert f"the --fake-responses file {script} does not exist" in info.value.message
    assert "Traceback" not in info.value.message
    # the file is read again at the next prompt: once it is there, the agent answers
    script.write_text(_script_line("Now it is here.") + "\n")
    assert await client.prompt(sid, "again", timeout=60) == {"stopReason": "end_turn"}
    assert client.text_of(sid).endswith("Now it is here.")
    assert "--fake-responses file not found" in client.stderr_text


async def test_bad_command_line_exits_with_code_2(make_agent: MakeAgent, tmp_path: Path) -> None:
    d = dirs(tmp_path)
    args, said = ["--no-such-flag"], "unrecognized arguments"
    client = await start_agent(make_agent, d, args=args, initialize=False)
    assert client.process is not None
    # the first initialize may be answered before the flags are checked; then it exits
    client.begin("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert await asyncio.wait_for(client.process.wait(), 10) == 2
    await client.close(expect_exit_code=2)
    assert said in client.stderr_text
    assert "Fatal Python error" not in client.stderr_text


async def test_record_responses_then_replay(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    recording = tmp_path / "recorded.jsonl"
    fake_gemini.add(text_response(["Recorded ", "answer."], thoughts=["hmm"], usage=usage(20, 4)))
    client, sid = await start_session(
        make_agent, d, fake_gemini, args=["--record-responses", str(recording)]
    )
    assert await client.prompt(sid, "record me") == {"stopReason": "end_turn"}
    original = client.text_of(sid)
    assert original == "Recorded answer."
    await client.close()
    lines = [json.loads(line) for line in recording.read_text().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0]["method"] == "generateContentStream"

    replay, rsid = await start_session(
        make_agent, d, args=["--fake-responses", str(recording)], api_key=None
    )
    assert await replay.prompt(rsid, "record me") == {"stopReason": "end_turn"}
    assert replay.text_of(rsid) == original
    assert replay.text_of(rsid, "agent_thought_chunk") == "hmm"
    assert len(fake_gemini.generate_requests) == 1  # the replay never called the server


async def test_trace_file_redacts_the_meta_api_key_and_logs_go_to_stderr(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    trace = tmp_path / "trace.jsonl"
    fake_gemini.add(text_response("traced"))
    client = await start_agent(
        make_agent,
        d,
        fake_gemini,
        args=["--trace-file", str(trace), "--log-level", "DEBUG"],
        api_key=None,
    )
    assert await client.authenticate("gemini-api-key", {"api-key": SECRET}) == {}
    # a line too deep to parse is traced as text and answered; reading goes on
    await client.send_raw_line(b"[" * 100_000 + b"]" * 100_000)
    await client.wait_for_message(lambda m: m.get("id") is None and "error" in m)
    sid = (await client.new_session(d.workspace))["sessionId"]
    assert await client.prompt(sid, "hello trace") == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests[0].headers["x-goog-api-key"] == SECRET
    await client.close()

    text = trace.read_text()
    assert SECRET not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert {r["dir"] for r in records} == {"in", "out"}
    incoming = [r["msg"] for r in records if r["dir"] == "in" and isinstance(r["msg"], dict)]
    methods = [m.get("method") for m in incoming]
    assert methods[:4] == ["initialize", "authenticate", "session/new", "session/prompt"]
    auth = next(r["msg"] for r in records if r["msg"].get("method") == "authenticate")
    assert auth["params"]["_meta"]["api-key"] == "***"
    assert any(r["dir"] == "out" and r["msg"].get("method") == "session/update" for r in records)
    # logs went to stderr, and stdout held nothing but ACP (checked line by line)
    assert "acp_server" in client.stderr_text and "DEBUG" in client.stderr_text
    assert SECRET not in client.stderr_text
    assert client.violations == []


async def test_log_file_and_trace_env_keep_stderr_quiet(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    log = tmp_path / "logs" / "agent.log"
    trace = tmp_path / "env-trace.jsonl"
    fake_gemini.add(text_response("logged"))
    client, sid = await start_session(
        make_agent,
        d,
        fake_gemini,
        args=["--log-file", str(log), "--log-level", "DEBUG"],
        env={"ADK_ACP_TRACE_FILE": str(trace)},
    )
    assert await client.prompt(sid, "hello log") == {"stopReason": "end_turn"}
    await client.close()
    assert "stdin closed; shutting down" in log.read_text()
    assert "acp_server" not in client.stderr_text
    assert "hello log" in trace.read_text()
