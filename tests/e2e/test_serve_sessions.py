"""`adk-acp serve` (issue 24): ACP over WebSocket and Streamable HTTP from a real
process on loopback, sessions that outlive connections, two clients on one session."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject
from tests.e2e.official_schema import official_schema
from tests.e2e.remote_client import RemoteAcp, Served, remote, start_serve
from tests.e2e.test_subagent_sessions import REVIEW_FILES, review_replies
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
)

# Each starts a real `adk-acp serve` (seconds on a busy machine) and drives turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
async def served(tmp_path: Path, fake_gemini: FakeGeminiServer) -> AsyncIterator[Served]:
    server = await start_serve(
        tmp_path / "home", fake_gemini.base_url, "--permission-timeout", "60"
    )
    yield server
    assert await server.stop() == 0, server.log()


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws.resolve()


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_a_prompt_over_each_transport(
    kind: str, served: Served, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(text_response(["Hello ", "from afar"]))
    async with remote(kind, served) as client:
        session_id = await client.new_session(workspace(tmp_path))
        answer = await client.request("session/prompt", client.prompt_params(session_id, "hi"))
        assert answer == {"stopReason": "end_turn"}
        assert client.text_of(session_id) == "Hello from afar"


async def _ask_for_a_write(fake_gemini: FakeGeminiServer, ws: Path) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": str(ws / "a.txt"), "content": "one\n"}),
        text_response("Written."),
    )


async def test_two_clients_see_every_update_and_the_first_answer_wins(
    served: Served, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    ws = workspace(tmp_path)
    await _ask_for_a_write(fake_gemini, ws)
    async with (
        remote("ws", served, capabilities=OPTED_IN) as first,
        remote("http", served) as second,
    ):
        write_files(ws, REVIEW_FILES)  # the reviewer subagent, for the followers' part
        session_id = await first.new_session(ws)
        await second.request(
            "session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
        )
        turn = first.start("session/prompt", first.prompt_params(session_id, "write it"))
        asked_first = await asyncio.wait_for(first.asked.get(), 60)
        asked_second = await asyncio.wait_for(second.asked.get(), 60)
        assert asked_first["params"]["toolCall"] == asked_second["params"]["toolCall"]
        await second.answer(asked_second, _allow(asked_second))
        assert await asyncio.wait_for(turn, 60) == {"stopReason": "end_turn"}
        await first.wait_until(lambda: asked_first["id"] in first.cancelled)
        assert (ws / "a.txt").read_text() == "one\n"
        await second.wait_until(lambda: second.text_of(session_id) == "Written.")
        assert first.text_of(session_id) == "Written."
        for client in (first, second):
            kinds = [u["sessionUpdate"] for u in client.updates(session_id)]
            assert "tool_call" in kinds and "tool_call_update" in kinds
        await each_follower_gets_its_own_kinds(served, fake_gemini, (first, second), session_id, ws)


async def test_a_dropped_client_leaves_the_turn_running_and_a_new_one_resumes_it(
    served: Served, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    ws = workspace(tmp_path)
    hang = HangPoint()
    fake_gemini.add(
        function_call_response(
            "write_file", {"file_path": str(ws / "b.txt"), "content": "two\n"}, text="Writing "
        ).hang_after(0, hang),
        text_response("Done after the reconnect."),
    )
    first = await RemoteAcp.websocket(served.ws_url)
    await first.initialize()
    session_id = await first.new_session(ws)
    first.start("session/prompt", first.prompt_params(session_id, "write b"))
    await hang.wait_reached_async()
    cursor = first.last_cursor()
    await first.close()  # gone mid-turn, before the model's answer
    hang.release()
    async with remote("http", served) as second:
        await second.request(
            "session/resume",
            {
                "sessionId": session_id,
                "cwd": str(ws),
                "mcpServers": [],
                "_meta": {"adkAcp": {"replayFrom": cursor}},
            },
        )
        asked = await asyncio.wait_for(second.asked.get(), 60)
        assert asked["params"]["sessionId"] == session_id
        assert "Writing " in second.text_of(session_id)  # missed while no client was there
        assert second.updates(session_id, "tool_call")
        await second.answer(asked, _allow(asked))
        await second.wait_until(lambda: "Done after the reconnect." in second.text_of(session_id))
    assert (ws / "b.txt").read_text() == "two\n"


async def test_a_question_without_any_client_fails_after_the_permission_timeout(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    ws = workspace(tmp_path)
    server = await start_serve(tmp_path / "home", fake_gemini.base_url, "--permission-timeout", "1")
    try:
        await _ask_for_a_write(fake_gemini, ws)
        client = await RemoteAcp.websocket(server.ws_url)
        await client.initialize()
        session_id = await client.new_session(ws)
        client.start("session/prompt", client.prompt_params(session_id, "write it"))
        await asyncio.wait_for(client.asked.get(), 60)
        await client.close()
        await fake_gemini.wait_for_requests_async(2, timeout=60)  # the model told of the failure
        async with remote("ws", server) as later:
            await later.request(
                "session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
            )
            replayed = later.updates(session_id)
            assert any(
                u["sessionUpdate"].startswith("tool_call") and u.get("status") == "failed"
                for u in replayed
            ), replayed
            assert "Written." in later.text_of(session_id)
        assert not (ws / "a.txt").exists()
    finally:
        assert await server.stop() == 0


OPTED_IN: JsonObject = {
    "session": {"notices": {}, "compaction": {}},
    "plan": {},
    "subagents": {},
}
"""A v1 client that takes every optional update kind."""

OPT_IN_KINDS = {"notice", "compaction_update", "plan_update", "plan_removed", "subagent_update"}


async def each_follower_gets_its_own_kinds(
    served: Served,
    fake_gemini: FakeGeminiServer,
    clients: tuple[RemoteAcp, RemoteAcp],
    session_id: str,
    ws: Path,
) -> None:
    """A turn with a plan and a notice (an answer that stopped), then `/compress`: the
    client that opted in (and opened the session) gets `plan_update`, `notice` and
    `compaction_update`; the one that did not gets the plain `plan` and the notice as
    marked agent text, every message valid in the stable v1 schema, the same text. A
    third plain client gets the same forms from a cursor (`replayFrom`) and a load.
    Before them, a subagent's run: a child session the opted-in client follows (its
    question asked there), of which the plain one sees only the tool call (its question
    asked in the session)."""
    opted, plain = clients
    fake_gemini.add(*review_replies())
    review = opted.start("session/prompt", opted.prompt_params(session_id, "review a.py"))
    asked_opted = await asyncio.wait_for(opted.asked.get(), 60)
    asked_plain = await asyncio.wait_for(plain.asked.get(), 60)
    child = asked_opted["params"]["sessionId"]
    assert child != session_id and asked_plain["params"]["sessionId"] == session_id
    await plain.answer(asked_plain, _allow(asked_plain))
    assert (await asyncio.wait_for(review, 60))["stopReason"] == "end_turn"
    assert [u["sessionId"] for u in opted.updates(session_id, "subagent_update")] == [child] * 2
    assert opted.text_of(child) == "Reading a.py first."
    todos = [{"description": "Fix it", "status": "in_progress"}]
    fake_gemini.add(
        function_call_response("write_todos", {"todos": todos}),
        text_response(["Part of ", "it"], finish="OTHER"),
        text_response("<state_snapshot>the gist</state_snapshot>"),
        text_response(""),  # an empty verification keeps the first summary
    )
    before = opted.last_cursor()
    for text in ("plan it", "/compress"):
        answer = await opted.request("session/prompt", opted.prompt_params(session_id, text))
        assert answer["stopReason"] == "end_turn"
    await plain.wait_until(lambda: "Compressed the conversation" in plain.text_of(session_id))

    def kinds(client: RemoteAcp) -> set[str]:
        return {u["sessionUpdate"] for u in client.updates(session_id)}

    assert {"notice", "compaction_update", "plan_update"} <= kinds(opted)
    assert "plan" not in kinds(opted)
    assert not kinds(plain) & OPT_IN_KINDS and "plan" in kinds(plain)
    assert {n["params"]["sessionId"] for n in plain.notifications} == {session_id}
    [notice] = opted.updates(session_id, "notice")
    [marked] = [
        u for u in plain.updates(session_id) if "notice" in u.get("_meta", {}).get("adkAcp", {})
    ]
    assert "finish reason OTHER" in notice["title"]
    assert marked["_meta"]["adkAcp"]["notice"]["text"].strip() == notice["title"]
    assert plain.text_of(session_id).replace(marked["content"]["text"], "") == opted.text_of(
        session_id
    )
    [plan_op] = opted.updates(session_id, "plan_update")
    assert [p["entries"] for p in plain.updates(session_id, "plan")] == [plan_op["plan"]["entries"]]
    assert_stable_v1(plain)

    async with remote("ws", served) as third:
        meta = {"adkAcp": {"replayFrom": before}}
        opening = {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
        await third.request("session/resume", {**opening, "_meta": meta})
        assert cursored(third, before) == cursored(plain, before)  # the missed ones, as plain's
        await third.request("session/load", opening)
        assert not kinds(third) & OPT_IN_KINDS and "plan" in kinds(third)
        assert {n["params"]["sessionId"] for n in third.notifications} == {session_id}
        assert_stable_v1(third)


def write_files(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def cursored(client: RemoteAcp, after: int) -> list[tuple[int, JsonObject]]:
    """The updates with a cursor after `after`, by cursor."""
    return [
        (n["params"]["_meta"]["adkAcp"]["cursor"], n["params"]["update"])
        for n in client.notifications
        if n["params"].get("_meta", {}).get("adkAcp", {}).get("cursor", 0) > after
    ]


def assert_stable_v1(client: RemoteAcp) -> None:
    """Every notification the client got is valid in the stable v1 schema (no opt-in)."""
    stable = official_schema(stable=True)
    if stable is None:
        return
    problems = [
        problem
        for n in client.notifications
        if (problem := stable.problem(n["method"], "client", "Notification", n.get("params")))
    ]
    assert not problems, problems


def _allow(asked: dict[str, object]) -> dict[str, object]:
    options = asked["params"]["options"]  # type: ignore[index]
    option = next(o for o in options if o["kind"] == "allow_once")
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


async def test_the_server_stops_cleanly_with_clients_still_connected(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    server = await start_serve(tmp_path / "home", fake_gemini.base_url)
    fake_gemini.add(text_response("Recorded"))
    ws_client = await RemoteAcp.websocket(server.ws_url)
    await ws_client.initialize()
    http_client = await RemoteAcp.http(server.http_url)
    session_id = await http_client.new_session(workspace(tmp_path))
    await http_client.request("session/prompt", http_client.prompt_params(session_id, "hi"))
    assert await server.stop() == 0, server.log()  # SSE streams and a WebSocket still open
    records = list((tmp_path / "home").rglob(f"*{session_id}*.jsonl"))
    assert records and "Recorded" in records[0].read_text()
    await ws_client.close()
    await http_client.close()


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_the_prompt_running_at_sigterm_is_answered_before_its_connection_closes(
    kind: str, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """A server asked to stop (SIGTERM) cancels the running turn and answers its prompt
    `cancelled` while the client is still connected, then exits 0 (issue 33.6)."""
    ws = workspace(tmp_path)
    hang = HangPoint()
    fake_gemini.add(text_response(["Working ", "on it"]).hang_after(1, hang))
    server = await start_serve(tmp_path / "home", fake_gemini.base_url)
    try:
        async with remote(kind, server) as client:
            session_id = await client.new_session(ws)
            turn = client.start("session/prompt", client.prompt_params(session_id, "go"))
            await hang.wait_reached_async()
            await client.wait_until(lambda: client.text_of(session_id) == "Working ")
            server.process.send_signal(signal.SIGTERM)
            answer = await asyncio.wait_for(turn, 60)
            assert answer == {"stopReason": "cancelled"}
            assert await asyncio.wait_for(server.process.wait(), 60) == 0
    finally:
        hang.release()
        assert await server.stop() == 0, server.log()


async def test_a_resume_from_any_cursor_replays_each_update_once(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """A cursor older than what the instance logs (from before the session was let go
    for idleness, or 0) gets the record up to where the log starts, then the log: a turn
    it saw to its end is not sent again, a later turn once (issue 33.6)."""
    ws = workspace(tmp_path)
    fake_gemini.add(text_response(["Answer ", "one."]), text_response(["Answer ", "two."]))
    server = await start_serve(
        tmp_path / "home", fake_gemini.base_url, "--session-idle-timeout", "1"
    )
    resume = {"cwd": str(ws), "mcpServers": []}
    try:
        async with remote("ws", server) as first:
            session_id = await first.new_session(ws)
            await first.request("session/prompt", first.prompt_params(session_id, "one"))
            seen = first.last_cursor()
        resume["sessionId"] = session_id
        let_go = f"session {session_id} let go (idle)"
        for _ in range(600):
            if let_go in server.log():
                break
            await asyncio.sleep(0.1)
        assert let_go in server.log()
        async with remote("http", server) as second:  # opens it again: a new log
            await second.request("session/resume", resume)
            await second.request("session/prompt", second.prompt_params(session_id, "two"))
            for kind, cursor, expected in (("ws", seen, "Answer two."),
                                           ("http", 0, "Answer one.Answer two.")):  # fmt: skip
                async with remote(kind, server) as late:
                    meta = {"adkAcp": {"replayFrom": cursor}}
                    await late.request("session/resume", {**resume, "_meta": meta})
                    assert late.text_of(session_id) == expected, (cursor, late.notifications)
                    cursors = [
                        n["params"]["_meta"]["adkAcp"]["cursor"]
                        for n in late.notifications
                        if "cursor" in n["params"].get("_meta", {}).get("adkAcp", {})
                    ]
                    assert cursors == sorted(set(cursors))  # the log's part: once, in order
    finally:
        assert await server.stop() == 0, server.log()
