"""Slash commands, /rewind, compression and steering (issue 10), on the real process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.test_sessions import another_process, contents_text
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    server_error_500,
    text_response,
    usage,
)

# two processes and compression's two calls per compression: minutes on a busy machine
pytestmark = pytest.mark.timeout(240)


async def test_commands_answer_without_a_model_call_and_change_the_session(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    client, sid = agent.client, agent.session_id
    # sent once the engine is up (session/new may be answered before)
    announced = await client.wait_for_update(
        lambda u: u["sessionUpdate"] == "available_commands_update", session_id=sid, timeout=30
    )
    names = {c["name"] for c in announced["availableCommands"]}
    assert {"rewind", "compress", "clear", "model", "mode", "memory", "stats", "help"} <= names

    async def run(text: str) -> str:
        before = len(client.text_of(sid))
        assert await agent.prompt(text) == {"stopReason": "end_turn"}
        return client.text_of(sid)[before:]

    assert "/rewind" in await run("/help")
    unknown = await run("/frobnicate now")
    assert "Unknown command `/frobnicate`" in unknown and "/compress" in unknown
    assert fake_gemini.generate_requests == []  # no command reached the model

    assert "Mode set to `yolo`" in await run("/mode yolo")
    assert agent.updates("current_mode_update")[-1]["currentModeId"] == "yolo"
    assert "Model set to `gemini-2.5-flash`" in await run("/model gemini-2.5-flash")
    options = agent.updates("config_option_update")[-1]["configOptions"]
    assert {o["id"]: o["currentValue"] for o in options}["model"] == "gemini-2.5-flash"

    assert "Remembered" in await run("/memory add Always use tabs for indentation")
    memory = (agent.home / ".gemini" / "GEMINI.md").read_text()
    assert "## Gemini Added Memories\n- Always use tabs for indentation" in memory
    assert "Always use tabs" in await run("/memory show")

    # a path is not a command: it goes to the model, with the new model and memory
    fake_gemini.add(text_response("that path is fine", usage=usage(120, 30)))
    assert await agent.prompt("/usr/bin/env is broken") == {"stopReason": "end_turn"}
    [request] = fake_gemini.generate_requests
    assert request.model == "gemini-2.5-flash"
    assert "Always use tabs for indentation" in request.system_instruction_text
    stats = await run("/stats")
    assert "Prompts: 1" in stats and "| gemini-2.5-flash | 1 | 120 | 30 |" in stats

    # the mode and model choice are part of the record: a reload restores them
    other = await another_process(make_agent, agent)
    loaded = await other.load_session(sid, agent.workspace)
    assert loaded["modes"]["currentModeId"] == "yolo"
    assert {o["id"]: o["currentValue"] for o in loaded["configOptions"]}["model"] == (
        "gemini-2.5-flash"
    )


async def test_rewind_and_clear_change_what_the_model_sees_and_survive_a_reload(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(text_response("answer one"), text_response("answer two"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt("one")
    await agent.prompt("two")
    before = len(agent.text())
    await agent.prompt("/rewind")
    said = agent.text()[before:]
    assert "Rewound 1 exchange(s)" in said and "- two" in said
    fake_gemini.add(text_response("answer three"))
    await agent.prompt("three")
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "one"),
        ("model", "answer one"),
        ("user", "three"),
    ]
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    users = [u["content"]["text"] for u in other.updates(agent.session_id, "user_message_chunk")]
    assert users == ["one", "three"]  # the record was rewound too

    await agent.prompt("/clear")
    fake_gemini.add(text_response("fresh"))
    await agent.prompt("four")
    assert contents_text(fake_gemini.generate_requests[-1]) == [("user", "four")]


def words(stem: str) -> str:
    """Distinct words (a repeated phrase would look like a loop to the detector)."""
    return " ".join(f"{stem}-{i}" for i in range(30))


async def test_compression_automatic_at_the_threshold_manual_and_a_failed_one(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    one, two = words("one"), words("two")
    answer_one, answer_two = words("answer-one"), words("answer-two")
    fake_gemini.add(
        text_response(answer_one),
        text_response(answer_two, usage=usage(600_000, 20)),  # over half of 1M
        text_response("<state_snapshot>counted</state_snapshot>"),
        # the verification pass improves it; its answer is the summary kept
        text_response("<state_snapshot>the user counted to two</state_snapshot>"),
        text_response("answer three"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt(one)
    await agent.prompt(two)
    assert await agent.prompt("three") == {"stopReason": "end_turn"}
    summary_request, verify_request, main_request = fake_gemini.generate_requests[-3:]
    assert "compresses" in summary_request.system_instruction_text
    assert contents_text(summary_request)[:2] == [("user", one), ("model", answer_one)]
    # the verification pass: the same history, the first snapshot, the request to check it
    assert verify_request.system_instruction_text == summary_request.system_instruction_text
    checked = contents_text(verify_request)
    assert checked[: len(contents_text(summary_request))] == contents_text(summary_request)
    assert checked[-2] == ("model", "<state_snapshot>counted</state_snapshot>")
    assert checked[-1][0] == "user" and "<state_snapshot>" in checked[-1][1]
    history = contents_text(main_request)
    assert history[0] == ("user", "<state_snapshot>the user counted to two</state_snapshot>")
    assert history[1][0] == "model"
    assert history[2:] == [("user", two), ("model", answer_two), ("user", "three")]
    notice = agent.text()
    assert "Compressed the conversation: about 600,000 →" in notice
    assert agent.updates("compaction_update") == []  # the client did not opt in

    # the record keeps everything: a reload replays all, the model history stays compressed
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    users = [u["content"]["text"] for u in other.updates(agent.session_id, "user_message_chunk")]
    assert users == [one, two, "three"]
    assert other.updates(agent.session_id, "compaction_update") == []
    fake_gemini.add(text_response("four done"))
    await other.prompt(agent.session_id, "four")
    assert contents_text(fake_gemini.generate_requests[-1])[0][1].startswith("<state_snapshot>")

    # /compress whose summary call fails: history untouched, the user told why
    fake_gemini.add(server_error_500())
    before = len(agent.text())
    await agent.prompt("/compress")
    assert "Could not compress the conversation" in agent.text()[before:]
    fake_gemini.add(text_response("five done"))
    await agent.prompt("five")
    assert contents_text(fake_gemini.generate_requests[-1])[-1] == ("user", "five")


async def test_a_client_that_opted_in_gets_compactions_with_their_summary(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """`clientCapabilities.session.compaction` (ACP 1.21): `/compress` is also a
    completed `compaction_update` carrying the summary, live and on a reload."""
    caps = {**EDITOR, "session": {"compaction": {}}}
    fake_gemini.add(
        text_response(words("answer-one")),
        text_response(words("answer-two")),
        text_response("<state_snapshot>counted to two</state_snapshot>"),
        text_response(""),  # an empty verification keeps the first summary
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps)
    await agent.prompt(words("one"))
    await agent.prompt(words("two"))
    assert await agent.prompt("/compress") == {"stopReason": "end_turn"}
    assert "Compressed the conversation" in agent.text()  # the command's answer stays
    [compaction] = agent.updates("compaction_update")
    assert compaction["status"] == "completed"
    summary = [{"type": "text", "text": "<state_snapshot>counted to two</state_snapshot>"}]
    assert compaction["summary"] == summary
    other = await another_process(make_agent, agent, caps=caps)
    await other.load_session(agent.session_id, agent.workspace)
    assert other.updates(agent.session_id, "compaction_update") == [compaction]


async def test_a_prompt_sent_during_a_turn_steers_it_and_is_never_lost(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}).hang_after(0, hang),
        text_response("read it, and noted your remark"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files={"a.txt": "alpha\n"})
    client = agent.client
    first = client.start_prompt(agent.session_id, "read a.txt")
    await hang.wait_reached_async()
    second = client.start_prompt(agent.session_id, "also check b.txt later")
    await asyncio.sleep(0.3)
    hang.release()
    assert await first.result(30) == {"stopReason": "end_turn"}
    assert await second.result(30) == {"stopReason": "end_turn"}
    steered = contents_text(fake_gemini.generate_requests[-1])
    assert steered[-3:] == [
        ("model", "call:read_file"),
        ("user", "response:read_file"),
        ("user", "also check b.txt later"),
    ]
    assert len(fake_gemini.generate_requests) == 2

    # a turn that makes no further model call: the message runs as its own turn
    hang2 = HangPoint()
    fake_gemini.add(
        text_response(["thinking ", "done"]).hang_after(1, hang2), text_response("second turn")
    )
    first = client.start_prompt(agent.session_id, "one more")
    await hang2.wait_reached_async()
    second = client.start_prompt(agent.session_id, "and this")
    await asyncio.sleep(0.3)
    hang2.release()
    assert await first.result(30) == {"stopReason": "end_turn"}
    assert await second.result(30) == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1])[-1] == ("user", "and this")

    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    users = [u["content"]["text"] for u in other.updates(agent.session_id, "user_message_chunk")]
    assert users == ["read a.txt", "also check b.txt later", "one more", "and this"]


async def test_compress_on_a_short_conversation_compresses_and_an_empty_one_says_so(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt("/compress", timeout=90)
    assert "nothing to compress yet" in agent.text()
    assert fake_gemini.generate_requests == []

    fake_gemini.add(
        text_response("the answer"),
        text_response("<state_snapshot>asked one question</state_snapshot>"),
        text_response("<state_snapshot>asked one question</state_snapshot>"),
        text_response("after"),
    )
    await agent.prompt("one question", timeout=90)
    before = len(agent.text())
    await agent.prompt(
        "/compress", timeout=90
    )  # one exchange: the user asked, it is summarized whole
    assert "Compressed the conversation" in agent.text()[before:]
    summary_request = fake_gemini.generate_requests[-2]
    assert contents_text(summary_request)[:2] == [("user", "one question"), ("model", "the answer")]
    await agent.prompt("next", timeout=90)
    history = contents_text(fake_gemini.generate_requests[-1])
    assert history[0] == ("user", "<state_snapshot>asked one question</state_snapshot>")
    assert history[1][0] == "model" and history[2:] == [("user", "next")]
