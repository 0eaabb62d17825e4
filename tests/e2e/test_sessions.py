"""Sessions that outlive the process (issue 10): recording, load after `kill -9`,
list, resume, close, fork, delete, and the model getting its history back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, AcpError, AcpTestClient, JsonObject
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    parts_response,
    text_part,
    text_response,
    thought_part,
)

# Each test starts two or three agents and runs several turns: on a loaded machine (load
# 15 on 2 cores) that takes minutes, so every wait is generous; a hang still fails.
pytestmark = pytest.mark.timeout(300)
PATIENT_S = 120.0


@pytest.fixture
def make_agent(make_agent: MakeAgent) -> MakeAgent:
    """The shared `make_agent`, its clients waiting up to `PATIENT_S` for each answer."""

    async def patient(
        argv: list[str], env: dict[str, str | None] | None = None, **options: Any
    ) -> AcpTestClient:
        options.setdefault("default_timeout", PATIENT_S)
        return await make_agent(argv, env, **options)

    return patient


def env_of(agent: Agent) -> dict[str, str | None]:
    env: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    env |= {
        "HOME": str(agent.home),
        "XDG_CONFIG_HOME": str(agent.home / ".config"),
        "GEMINI_API_KEY": "x",
        "GOOGLE_GEMINI_BASE_URL": agent.fake.base_url,
    }
    return env


async def another_process(
    make_agent: MakeAgent, agent: Agent, *args: str, caps: JsonObject = EDITOR
) -> AcpTestClient:
    """A second agent process on the same HOME (the editor reopened), initialized."""
    client = await make_agent([*AGENT_COMMAND, *args], env_of(agent), cwd=agent.workspace)
    init = await client.initialize(caps)
    assert init["agentCapabilities"]["loadSession"] is True
    return client


async def kill_9(client: AcpTestClient) -> None:
    assert client.process is not None
    client.process.kill()
    await client.close(expect_exit_code=None, check=False)


def records(home: Path) -> list[Path]:
    return sorted((home / ".local" / "state" / "adk-acp" / "sessions").glob("*/*.jsonl"))


def contents_text(request: Any) -> list[tuple[str, str]]:
    """(role, what) per part of a model request: text, call:<name>, response:<name>."""
    out = []
    for content in request.contents:
        role = content.get("role", "user")
        for part in content.get("parts", []):
            if "text" in part:
                out.append((role, "thought" if part.get("thought") else part["text"]))
            elif "functionCall" in part:
                out.append((role, f"call:{part['functionCall']['name']}"))
            elif "functionResponse" in part:
                out.append((role, f"response:{part['functionResponse']['name']}"))
    return out


@pytest.mark.parametrize("after_s", [0.0, 0.5], ids=["at-once", "half-a-second-later"])
async def test_a_session_killed_with_sigkill_is_listed_loaded_replayed_and_continued(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, after_s: float
) -> None:
    fake_gemini.add(
        function_call_response(
            "write_file", {"file_path": "notes.txt", "content": "hello\n"}, signature="c2lnLTE="
        ),
        text_response("Wrote notes.txt."),
        parts_response([[thought_part("thinking it over")], [text_part("The answer is 42.")]]),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, args=["--approval-mode", "yolo"]
    )
    assert await agent.prompt("Create notes.txt please") == {"stopReason": "end_turn"}
    assert await agent.prompt("What is the answer?") == {"stopReason": "end_turn"}
    await asyncio.sleep(after_s)
    await kill_9(agent.client)  # Zed closes its agent with SIGKILL

    client = await another_process(make_agent, agent, "--approval-mode", "yolo")
    listed = await client.request("session/list", {"cwd": str(agent.workspace)})
    [info] = listed["sessions"]
    assert info["sessionId"] == agent.session_id
    assert info["title"] == "Create notes.txt please"
    assert info["cwd"] == str(agent.workspace) and info["updatedAt"].endswith("Z")

    loaded = await client.load_session(agent.session_id, agent.workspace)
    # everything was replayed before the answer arrived
    replay = client.updates(agent.session_id)
    assert loaded["modes"]["currentModeId"] == "yolo"
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds.index("user_message_chunk") < kinds.index("tool_call")
    users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["Create notes.txt please", "What is the answer?"]
    [call] = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert call["status"] == "completed" and call["kind"] == "edit"
    [diff] = [c for c in call["content"] if c["type"] == "diff"]
    assert diff["path"] == str(agent.workspace / "notes.txt")
    assert diff.get("oldText") is None and diff["newText"] == "hello\n"
    assert call["locations"][0]["path"] == str(agent.workspace / "notes.txt")
    text = "".join(
        u["content"]["text"] for u in replay if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert "Wrote notes.txt." in text and "The answer is 42." in text
    thoughts = [u for u in replay if u["sessionUpdate"] == "agent_thought_chunk"]
    assert thoughts[0]["content"]["text"] == "thinking it over"
    assert any(u["sessionUpdate"] == "available_commands_update" for u in replay)
    assert any(
        u["sessionUpdate"] == "session_info_update" and u["title"] == "Create notes.txt please"
        for u in replay
    )

    # the model remembers: the next request carries the conversation in order
    fake_gemini.add(text_response("Still 42."))
    assert await client.prompt(agent.session_id, "And again?") == {"stopReason": "end_turn"}
    history = contents_text(fake_gemini.generate_requests[-1])
    assert history == [
        ("user", "Create notes.txt please"),
        ("model", "call:write_file"),
        ("user", "response:write_file"),
        ("model", "Wrote notes.txt."),
        ("user", "What is the answer?"),
        ("model", "thought"),
        ("model", "The answer is 42."),
        ("user", "And again?"),
    ] or history == [
        ("user", "Create notes.txt please"),
        ("model", "call:write_file"),
        ("user", "response:write_file"),
        ("model", "Wrote notes.txt."),
        ("user", "What is the answer?"),
        ("model", "The answer is 42."),
        ("user", "And again?"),
    ]
    last = fake_gemini.generate_requests[-1].contents
    call_part = next(p for c in last for p in c.get("parts", []) if "functionCall" in p)
    assert call_part.get("thoughtSignature") == "c2lnLTE="  # Gemini 3 needs it back


async def test_a_kill_mid_turn_loses_only_the_message_in_flight_and_a_torn_line_is_skipped(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response("first answer"), text_response(["partial ", "rest"]).hang_after(1, hang)
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    pending = agent.client.start_prompt(agent.session_id, "two")
    await hang.wait_reached_async()
    await kill_9(agent.client)
    hang.release()
    del pending
    [record] = records(agent.home)
    with record.open("a", encoding="utf-8") as out:
        out.write('{"id": "torn", "type": "gem')  # what a crash mid-write leaves

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    users = [u["content"]["text"] for u in client.updates(agent.session_id, "user_message_chunk")]
    assert users == ["one", "two"]  # the prompt in flight was recorded; its answer was not
    assert "first answer" in client.text_of(agent.session_id)
    fake_gemini.add(text_response("three answered"))
    assert await client.prompt(agent.session_id, "three") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "one"),
        ("model", "first answer"),
        ("user", "two"),
        ("user", "three"),
    ]
    # the record goes on after the torn line and loads again
    lines = record.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["type"] in ("gemini", "user")


async def test_list_resume_close_fork_delete_and_unknown_ids(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(text_response("alpha answer"), text_response("beta answer"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    client = agent.client
    assert await agent.prompt("alpha") == {"stopReason": "end_turn"}
    second = (await client.new_session(agent.workspace))["sessionId"]  # the same second
    assert second != agent.session_id
    assert await client.prompt(second, "beta") == {"stopReason": "end_turn"}

    listed = (await client.request("session/list", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [second, agent.session_id]  # newest first
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert (await client.request("session/list", {"cwd": str(other)}))["sessions"] == []

    # close frees the live session; resume brings it back without replay
    assert await client.request("session/close", {"sessionId": second}) == {}
    with pytest.raises(AcpError) as closed:
        await client.prompt(second, "still there?")
    assert closed.value.code == -32002
    before = len(client.updates(second))
    await client.request("session/resume", {"sessionId": second, "cwd": str(agent.workspace)})
    assert [u["sessionUpdate"] for u in client.updates(second)[before:]] == [
        "available_commands_update"
    ]
    fake_gemini.add(text_response("beta again"))
    assert await client.prompt(second, "more beta") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1])[:2] == [
        ("user", "beta"),
        ("model", "beta answer"),
    ]

    # fork: a new session with the same history, recorded on its own
    forked = await client.request(
        "session/fork", {"sessionId": agent.session_id, "cwd": str(agent.workspace)}
    )
    fork_id = forked["sessionId"]
    assert fork_id not in (agent.session_id, second)
    fake_gemini.add(text_response("fork answer"))
    assert await client.prompt(fork_id, "in the fork") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "alpha"),
        ("model", "alpha answer"),
        ("user", "in the fork"),
    ]
    assert len(records(agent.home)) == 3

    # unknown ids: a clear error, nothing created on disk
    for method, extra in (
        ("session/load", {"cwd": str(agent.workspace), "mcpServers": []}),
        ("session/resume", {"cwd": str(agent.workspace)}),
        ("session/fork", {"cwd": str(agent.workspace)}),
        ("session/close", {}),
        ("session/delete", {}),
    ):
        with pytest.raises(AcpError) as unknown:
            await client.request(method, {"sessionId": "no-such-session", **extra})
        assert unknown.value.code == -32002, method
        assert "no-such-session" in unknown.value.message
    with pytest.raises(AcpError) as escaping:
        await client.request(
            "session/load",
            {"sessionId": "../../etc/passwd", "cwd": str(agent.workspace), "mcpServers": []},
        )
    assert escaping.value.code == -32002
    assert len(records(agent.home)) == 3

    # a session belongs to its workspace
    with pytest.raises(AcpError) as elsewhere:
        await client.request("session/resume", {"sessionId": fork_id, "cwd": str(other)})
    assert elsewhere.value.code == -32602

    # delete removes the record
    assert await client.request("session/delete", {"sessionId": fork_id}) == {}
    assert len(records(agent.home)) == 2
    assert fork_id not in [
        s["sessionId"] for s in (await client.request("session/list", {}))["sessions"]
    ]


async def test_list_pages_with_a_cursor(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    client = agent.client
    for _ in range(54):
        await client.new_session(agent.workspace)
    first = await client.request("session/list", {"cwd": str(agent.workspace)})
    assert len(first["sessions"]) == 50 and first["nextCursor"]
    rest = await client.request(
        "session/list", {"cwd": str(agent.workspace), "cursor": first["nextCursor"]}
    )
    assert len(rest["sessions"]) == 5 and "nextCursor" not in rest
    ids = {s["sessionId"] for s in first["sessions"] + rest["sessions"]}
    assert len(ids) == 55
    with pytest.raises(AcpError) as bad:
        await client.request("session/list", {"cursor": "garbage!"})
    assert bad.value.code == -32602


async def test_two_processes_on_one_workspace_keep_their_own_records(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(*(text_response(f"answer {i}") for i in range(6)))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    other = await another_process(make_agent, agent)
    other_id = (await other.new_session(agent.workspace))["sessionId"]
    for i in range(3):
        await asyncio.gather(agent.prompt(f"first {i}"), other.prompt(other_id, f"second {i}"))
    third = await another_process(make_agent, agent)
    for session_id, word in ((agent.session_id, "first"), (other_id, "second")):
        await third.load_session(session_id, agent.workspace)
        users = [u["content"]["text"] for u in third.updates(session_id, "user_message_chunk")]
        assert users == [f"{word} {i}" for i in range(3)]


async def test_a_gemini_cli_chat_of_the_workspace_is_listed_and_continues_here(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    import hashlib

    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    chats = (
        agent.home
        / ".gemini"
        / "tmp"
        / hashlib.sha256(str(agent.workspace).encode()).hexdigest()
        / "chats"
    )
    chats.mkdir(parents=True)
    chat = {
        "sessionId": "5d9c7a10-0000-4000-8000-000000000001",
        "projectHash": "x",
        "startTime": "2026-11-24T10:00:00.000Z",
        "lastUpdated": "2026-11-24T10:05:00.000Z",
        "messages": [
            {
                "id": "m1",
                "timestamp": "2026-11-24T10:00:00.000Z",
                "type": "user",
                "content": "fix the bug in a.py",
            },
            {
                "id": "m2",
                "timestamp": "2026-11-24T10:01:00.000Z",
                "type": "gemini",
                "content": "Fixed it.",
                "toolCalls": [
                    {
                        "id": "replace-1",
                        "name": "replace",
                        "args": {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
                        "status": "success",
                        "timestamp": "2026-11-24T10:00:30.000Z",
                        "displayName": "Edit",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "replace-1",
                                    "name": "replace",
                                    "response": {"output": "Edited a.py"},
                                }
                            }
                        ],
                        "resultDisplay": {
                            "fileDiff": "--- a.py\n+++ a.py\n-x = 1\n+x = 2\n",
                            "fileName": "a.py",
                            "originalContent": "x = 1\n",
                            "newContent": "x = 2\n",
                        },
                    }
                ],
            },
        ],
    }
    source = chats / "session-2026-11-24T10-00-5d9c7a10.json"
    source.write_text(json.dumps(chat), encoding="utf-8")
    original = source.read_bytes()
    client = agent.client

    listed = (await client.request("session/list", {"cwd": str(agent.workspace)}))["sessions"]
    imported_id = "gemini-cli-5d9c7a10-0000-4000-8000-000000000001"
    assert [s["sessionId"] for s in listed] == [agent.session_id, imported_id] or [
        s["sessionId"] for s in listed
    ] == [imported_id, agent.session_id]
    [entry] = [s for s in listed if s["sessionId"] == imported_id]
    assert entry["title"] == "fix the bug in a.py"

    await client.load_session(imported_id, agent.workspace)
    replay = client.updates(imported_id)
    assert [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"] == [
        "fix the bug in a.py"
    ]
    [call] = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert call["status"] == "completed" and call["title"] == "Edit"
    [diff] = [c for c in call["content"] if c["type"] == "diff"]
    assert diff["path"] == str(agent.workspace / "a.py") and diff["newText"] == "x = 2\n"
    assert "Fixed it." in client.text_of(imported_id)

    fake_gemini.add(text_response("continuing from the terminal"))
    assert await client.prompt(imported_id, "and now?") == {"stopReason": "end_turn"}
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "fix the bug in a.py"),
        ("model", "Fixed it."),
        ("model", "call:replace"),
        ("user", "response:replace"),
        ("user", "and now?"),
    ]
    assert source.read_bytes() == original  # Gemini CLI's file is never written
    again = (await client.request("session/list", {"cwd": str(agent.workspace)}))["sessions"]
    assert [s["sessionId"] for s in again].count(imported_id) == 1
    assert "_meta" not in [s for s in again if s["sessionId"] == imported_id][0]  # ours now


async def test_mcp_servers_given_to_load_are_started(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    from tests.e2e.test_mcp import commands_offered, stdio_entry

    fake_gemini.add(text_response("first"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt("hello")
    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace, [stdio_entry("demo")])
    await commands_offered(client, agent.session_id, "demo:review")
    fake_gemini.add(text_response("second"))
    await client.prompt(agent.session_id, "which tools?")
    assert "mcp_demo_echo" in fake_gemini.generate_requests[-1].function_declaration_names


async def test_a_cancelled_answer_is_replayed_as_seen_but_not_sent_back_to_the_model(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(text_response(["Half an ", "answer"]).hang_after(1, hang))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    pending = agent.client.start_prompt(agent.session_id, "tell me")
    await hang.wait_reached_async()
    await agent.client.wait_for_update(
        lambda u: u["sessionUpdate"] == "agent_message_chunk", session_id=agent.session_id
    )
    await agent.client.cancel(agent.session_id)
    assert await pending.result(PATIENT_S) == {"stopReason": "cancelled"}
    hang.release()
    other = await another_process(make_agent, agent)
    await other.load_session(agent.session_id, agent.workspace)
    assert other.text_of(agent.session_id) == "Half an "
    fake_gemini.add(text_response("full answer"))
    await other.prompt(agent.session_id, "again please")
    assert contents_text(fake_gemini.generate_requests[-1]) == [
        ("user", "tell me"),
        ("user", "again please"),
    ]


async def test_answered_permission_requests_and_notices_are_replayed_with_their_answers(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """Issue 21: a reloaded chat shows each permission card with its answer (`_meta` of
    the replayed `tool_call`), and notices stay marked as notices."""
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "a.txt", "content": "A\n"}),
        function_call_response("write_file", {"file_path": "b.txt", "content": "B\n"}),
        text_response("Wrote a.txt, not b.txt."),
    )
    answers = iter(["allow_once", "reject_once"])

    def policy(params: dict[str, Any]) -> dict[str, Any]:
        kind = next(answers)
        option = next(o for o in params["options"] if o["kind"] == kind)
        return {"outcome": "selected", "optionId": option["optionId"]}

    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy=policy)
    assert await agent.prompt("write a and b") == {"stopReason": "end_turn"}
    live = agent.client.permission_requests
    assert len(live) == 2
    await kill_9(agent.client)

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    calls = [u for u in client.updates(agent.session_id) if u["sessionUpdate"] == "tool_call"]
    assert [c["status"] for c in calls] == ["completed", "failed"]
    asked = [c["_meta"]["adkAcp"]["permission"] for c in calls]
    for question, request in zip(asked, live, strict=True):
        assert question["title"] == request.params["toolCall"]["title"]
        assert question["options"] == request.params["options"]
    chosen = [next(o["kind"] for o in q["options"] if o["optionId"] == q["answer"]) for q in asked]
    assert chosen == ["allow_once", "reject_once"]


async def test_a_question_cancelled_with_its_turn_is_replayed_as_cancelled(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """The turn is cancelled while the question waits (the client never answers it): the
    reloaded chat still shows the question, answered `None` (cancelled)."""
    fake_gemini.add(function_call_response("write_file", {"file_path": "c.txt", "content": "C"}))
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        permission_policy="queue",
        cancel_answers_permissions=False,
    )
    pending = agent.client.start_prompt(agent.session_id, "write c")
    asked = await agent.client.next_permission_request(timeout=PATIENT_S)
    await agent.client.cancel(agent.session_id)
    assert await pending.result(PATIENT_S) == {"stopReason": "cancelled"}
    await kill_9(agent.client)

    client = await another_process(make_agent, agent)
    await client.load_session(agent.session_id, agent.workspace)
    [call] = [u for u in client.updates(agent.session_id) if u["sessionUpdate"] == "tool_call"]
    question = call["_meta"]["adkAcp"]["permission"]
    assert question["title"] == asked.params["toolCall"]["title"]
    assert question["answer"] is None
