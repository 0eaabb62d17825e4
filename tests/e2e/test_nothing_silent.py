"""Nothing silent (issue 18.6), through the real process: the answer being streamed
reaches the record (a `kill -9` mid-answer, then a load, replays what the user saw);
the compression notice is a notice of its own, not glued to the answer; `/rewind`
says that file edits were kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_session_commands import words
from tests.e2e.test_sessions import another_process, contents_text, kill_9, records
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent, wait_until
from tests.fakes.gemini_server import (
    Drop,
    FakeGeminiServer,
    HangPoint,
    Reply,
    chunk,
    function_call_response,
    text_part,
    text_response,
    usage,
)


def recorded_partial(home: Path) -> str | None:
    """The text of the newest partial gemini message in the (only) record."""
    [record] = records(home)
    found = None
    for line in record.read_text(encoding="utf-8").splitlines():
        message = json.loads(line)
        if message.get("type") == "gemini" and message.get("partial"):
            found = message.get("content")
    return found


async def test_after_kill_9_mid_answer_load_replays_the_part_the_user_saw(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response("first answer"),
        text_response(["The start ", "of it, ", "never finished"]).hang_after(2, hang),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    pending = agent.client.start_prompt(agent.session_id, "two")
    await hang.wait_reached_async()
    await agent.client.wait_for_update(
        lambda u: "of it, " in u.get("content", {}).get("text", ""), session_id=agent.session_id
    )
    # the record follows the stream within half a second (a generous bound here)
    await wait_until(lambda: recorded_partial(agent.home) == "The start of it, ", 10, "flush")
    await kill_9(agent.client)
    hang.release()
    del pending

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    assert client.text_of(agent.session_id) == "first answerThe start of it, "
    fake_gemini.add(text_response("three answered"))
    assert await client.prompt(agent.session_id, "three") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [  # shown, never sent back
        ("user", "one"),
        ("model", "first answer"),
        ("user", "two"),
        ("user", "three"),
    ]


async def test_a_finished_answer_replaces_its_streamed_part_in_the_record(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(text_response(["Slow ", "answer."]).hang_after(1, hang))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    pending = agent.client.start_prompt(agent.session_id, "one")
    await hang.wait_reached_async()
    await wait_until(lambda: recorded_partial(agent.home) == "Slow ", 10, "flush")
    hang.release()
    assert await pending.result() == {"stopReason": "end_turn"}

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    assert client.text_of(agent.session_id) == "Slow answer."  # once, not twice


async def test_the_compression_notice_is_a_notice_of_its_own(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    one, two = words("one"), words("two")
    fake_gemini.add(
        text_response(words("answer-one")),
        text_response(words("answer-two"), usage=usage(600_000, 20)),  # over half of 1M
        text_response("<state_snapshot>one</state_snapshot>"),
        text_response("<state_snapshot>one</state_snapshot>"),  # the verification pass
        text_response("answer two"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt(one)
    await agent.prompt(two)
    mark = len(agent.client.updates(agent.session_id, "agent_message_chunk"))
    assert await agent.prompt("three") == {"stopReason": "end_turn"}
    chunks = [
        u["content"]["text"]
        for u in agent.client.updates(agent.session_id, "agent_message_chunk")[mark:]
    ]
    [notice] = [c for c in chunks if "Compressed the conversation" in c]
    assert notice.startswith("\n\n") and notice.endswith("\n\n")
    assert chunks.index(notice) < chunks.index("answer two")  # said first, then the answer
    assert "kept).answer two" not in agent.text()


async def test_rewind_says_that_file_edits_were_kept(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "notes.txt", "content": "hi\n"}),
        text_response("Wrote it."),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, args=["--approval-mode", "yolo"]
    )
    await agent.prompt("write notes.txt")
    before = len(agent.text())
    await agent.prompt("/rewind")
    said = agent.text()[before:]
    assert "Rewound 1 exchange(s)" in said
    assert "File edits made in those exchanges were kept" in said
    assert str(agent.workspace / "notes.txt") in said
    assert (agent.workspace / "notes.txt").read_text() == "hi\n"


async def test_a_retried_answer_replays_in_the_order_it_was_seen(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    broken = Reply(steps=(chunk([text_part("Broken ")]), hang, Drop()))
    fake_gemini.add(broken, text_response("Whole answer."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    pending = agent.client.start_prompt(agent.session_id, "one")
    await hang.wait_reached_async()
    await wait_until(lambda: recorded_partial(agent.home) == "Broken ", 10, "flush")
    hang.release()
    assert await pending.result() == {"stopReason": "end_turn"}
    seen = agent.text()
    assert seen.startswith("Broken ") and "Retrying" in seen and seen.endswith("Whole answer.")

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    replayed = client.text_of(agent.session_id)
    assert replayed == seen  # what was shown before the retry, the notice, then the answer
