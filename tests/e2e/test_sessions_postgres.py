"""Sessions in PostgreSQL through the real process (issue 24): two `adk-acp` processes
on stdio with `--store postgresql://…` on one database (a throwaway cluster): a
session made and prompted in one is listed, loaded with its replay and continued in
the other (the first, idle, hands the session over when the second asks for it); a
`kill -9` mid-turn loses nothing recorded, and the other process takes the session
over once the dead one's lease expires; Gemini CLI's chats are listed and imported
into the database on load."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import asyncpg
import pytest

from runtime.services.gemini_cli_chats import chats_dir
from tests.e2e.acp_client import AGENT_COMMAND, AcpError, AcpTestClient
from tests.e2e.test_sessions import contents_text, env_of, kill_9
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, HangPoint, text_response

BUSY = -32004
# Two agent processes per test on a machine that may be busy.
pytestmark = pytest.mark.timeout(180)


def lease(seconds: float) -> dict[str, str]:
    """The lease period of a process: short for a takeover, long enough elsewhere that
    a busy machine's pauses do not let a live holder's lease expire."""
    return {"ADK_ACP_LEASE_SECONDS": str(seconds)}


async def first_process(
    make_agent: MakeAgent, tmp_path: Path, fake: FakeGeminiServer, url: str, lease_s: float
) -> Agent:
    return await start_agent(
        make_agent, tmp_path, fake, EDITOR, args=["--store", url], env_extra=lease(lease_s)
    )


async def second_process(
    make_agent: MakeAgent, agent: Agent, url: str, tmp_path: Path, lease_s: float
) -> AcpTestClient:
    """Another process on the same database (named by `ADK_ACP_STORE` this time), with a
    HOME of its own (no shared files)."""
    home = tmp_path / "home-2"
    home.mkdir()
    env = (
        env_of(agent)
        | lease(lease_s)
        | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    )
    env["ADK_ACP_STORE"] = url
    client = await make_agent(AGENT_COMMAND, env, cwd=agent.workspace)
    await client.initialize(EDITOR)
    return client


async def record_lines(url: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        return [
            r["line"] for r in await conn.fetch("SELECT line::text FROM adk_records ORDER BY seq")
        ]
    finally:
        await conn.close()


async def test_a_session_is_listed_loaded_and_continued_in_another_process(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, pg_url: str
) -> None:
    fake_gemini.add(text_response("first answer"), text_response("second answer"))
    agent = await first_process(make_agent, tmp_path, fake_gemini, pg_url, 6)
    assert await agent.prompt("hello there") == {"stopReason": "end_turn"}
    other = await second_process(make_agent, agent, pg_url, tmp_path, 6)

    [info] = (await other.request("session/list", {"cwd": str(agent.workspace)}))["sessions"]
    assert (info["sessionId"], info["title"]) == (agent.session_id, "hello there")
    # the first one drives it, idle: it hands the session over when the second asks
    await other.load_session(agent.session_id, agent.workspace)
    users = [u["content"]["text"] for u in other.updates(agent.session_id, "user_message_chunk")]
    assert users == ["hello there"] and "first answer" in other.text_of(agent.session_id)
    assert await other.prompt(agent.session_id, "and again") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "hello there"),
        ("model", "first answer"),
        ("user", "and again"),
    ]
    await agent.client.request("session/close", {"sessionId": agent.session_id})
    # both processes see one list; no process wrote session files
    listed = await agent.client.request("session/list", {"cwd": str(agent.workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [agent.session_id]
    assert not list(tmp_path.rglob("*.jsonl"))


async def test_kill_9_mid_turn_loses_nothing_recorded_and_the_other_process_takes_over(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, pg_url: str
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response("first answer"), text_response(["partial ", "rest"]).hang_after(1, hang)
    )
    agent = await first_process(make_agent, tmp_path, fake_gemini, pg_url, 2)
    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    pending = agent.client.start_prompt(agent.session_id, "two")
    await hang.wait_reached_async()
    while not any('"text":"two"' in line for line in await record_lines(pg_url)):
        await asyncio.sleep(0.05)  # until the prompt in flight is in the database
    recorded = await record_lines(pg_url)
    await kill_9(agent.client)  # mid-turn: its lease is still held, and no longer renewed
    hang.release()
    del pending

    other = await second_process(make_agent, agent, pg_url, tmp_path, 2)
    listed = await other.request("session/list", {"cwd": str(agent.workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [agent.session_id]
    await other.load_session(agent.session_id, agent.workspace, timeout=60)  # lease expired
    assert (await record_lines(pg_url))[: len(recorded)] == recorded  # nothing lost
    users = [u["content"]["text"] for u in other.updates(agent.session_id, "user_message_chunk")]
    assert users == ["one", "two"]
    assert "first answer" in other.text_of(agent.session_id)
    fake_gemini.add(text_response("three answered"))
    assert await other.prompt(agent.session_id, "three") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "one"),
        ("model", "first answer"),
        ("user", "two"),
        ("user", "three"),
    ]


@pytest.mark.cold  # SIGSTOP to the agent's own process (not forwardable)
async def test_a_paused_process_whose_lease_was_taken_over_refuses_the_next_prompt(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, pg_url: str
) -> None:
    fake_gemini.add(text_response("first answer"), text_response("answered elsewhere"))
    agent = await first_process(make_agent, tmp_path, fake_gemini, pg_url, 2)
    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    process = agent.client.process
    assert process is not None
    process.send_signal(signal.SIGSTOP)  # paused: its lease is no longer renewed
    try:
        other = await second_process(make_agent, agent, pg_url, tmp_path, 2)
        await other.load_session(agent.session_id, agent.workspace, timeout=60)  # taken over
        assert await other.prompt(agent.session_id, "two") == {"stopReason": "end_turn"}
    finally:
        process.send_signal(signal.SIGCONT)
    with pytest.raises(AcpError) as refused:
        await agent.prompt("three, from the paused one")
    assert refused.value.code == BUSY and "taken over by another" in refused.value.message
    assert agent.client.text_of(agent.session_id) == "first answer"
    assert not any("paused one" in line for line in await record_lines(pg_url))
    assert len(fake_gemini.generate_requests) == 2  # the refused prompt reached no model


async def test_gemini_cli_chats_are_listed_and_imported_into_the_database_on_load(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, pg_url: str
) -> None:
    agent = await first_process(make_agent, tmp_path, fake_gemini, pg_url, 30)
    chats = chats_dir(agent.home, agent.workspace)
    chats.mkdir(parents=True)
    source = chats / "session-2026-11-24T10-00-7e1f.jsonl"  # Gemini CLI's JSONL shape
    lines = [
        {"sessionId": "7e1f0000-0000-4000-8000-000000000002", "projectHash": "x"},
        {"id": "m1", "type": "user", "content": [{"text": "what does main.py do?"}]},
        {"id": "m2", "type": "gemini", "content": "It prints the date."},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    original = source.read_bytes()
    chat_id = "gemini-cli-7e1f0000-0000-4000-8000-000000000002"
    client, cwd = agent.client, {"cwd": str(agent.workspace)}

    listed = (await client.request("session/list", cwd))["sessions"]
    assert {s["sessionId"] for s in listed} == {agent.session_id, chat_id}
    [entry] = [s for s in listed if s["sessionId"] == chat_id]
    assert entry["title"] == "what does main.py do?"
    assert entry["_meta"] == {"source": "gemini-cli"}

    await client.load_session(chat_id, agent.workspace)
    users = [u["content"]["text"] for u in client.updates(chat_id, "user_message_chunk")]
    assert users == ["what does main.py do?"] and "It prints the date." in client.text_of(chat_id)
    fake_gemini.add(text_response("Now it prints the time."))
    assert await client.prompt(chat_id, "change it to the time") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "what does main.py do?"),
        ("model", "It prints the date."),
        ("user", "change it to the time"),
    ]
    again = (await client.request("session/list", cwd))["sessions"]
    assert [s["sessionId"] for s in again].count(chat_id) == 1
    assert "_meta" not in [s for s in again if s["sessionId"] == chat_id][0]  # the database's
    recorded = "\n".join(await record_lines(pg_url))
    assert "It prints the date." in recorded and "change it to the time" in recorded
    assert source.read_bytes() == original  # Gemini CLI's file is never written
    assert list(tmp_path.rglob("*.jsonl")) == [source]  # no session file of ours
