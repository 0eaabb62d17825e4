"""Issue 36 end to end: the user changes the agent's proposed file before allowing it
(the `editReview` extension of ACP), through the real agent process.

A client that declares `clientCapabilities._meta.adkAcp.editReview` is told which
proposed file may be changed and may answer "allow" with the user's version in
`_meta.adkAcp.editReview`; the agent writes that version (byte-exact in the file's
encoding and line endings, through the editor's fs or locally), and the model's next
request says what the user changed (rejected hunks, a unified diff against the
proposal). A client that does not declare it sees exactly today's behaviour.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import PermissionRequest, selected
from tests.e2e.tools_harness import (
    BARE,
    EDITOR,
    Agent,
    MakeAgent,
    diff_of,
    function_responses,
    response_text,
    start_agent,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

REVIEW: dict[str, Any] = {"_meta": {"adkAcp": {"editReview": True}}}
REVIEW_CAPS = [
    pytest.param({**EDITOR, **REVIEW}, id="editor-fs"),
    pytest.param({**BARE, **REVIEW}, id="local-fs"),
]


def replace(path: str, old: str, new: str) -> tuple[str, dict[str, str]]:
    return (
        "replace",
        {"file_path": path, "instruction": "edit", "old_string": old, "new_string": new},
    )


def tool_answers(fake: FakeGeminiServer) -> list[str]:
    """What the model got back from every tool call, in request order."""
    return [response_text(r) for req in fake.generate_requests for r in function_responses(req)]


def users_version(request: PermissionRequest, content: str) -> dict[str, Any]:
    """The answer's `_meta` carrying the user's version of the proposed file."""
    path = request.params["_meta"]["adkAcp"]["editReview"]["path"]
    return {"adkAcp": {"editReview": {"path": path, "content": content}}}


async def ask_and_answer(
    agent: Agent, prompt: str, option: str, user: str | None, meta: Any = None
) -> PermissionRequest:
    """One turn whose one question is answered `option`, with the user's version `user`
    (or the raw `meta`)."""
    pending = agent.client.start_prompt(agent.session_id, prompt)
    request = await agent.client.next_permission_request()
    if user is not None:
        meta = users_version(request, user)
    request.answer(selected(option), meta=meta)
    assert await pending.result(60) == {"stopReason": "end_turn"}
    return request


def written_through(agent: Agent, caps: dict[str, Any], path: Path) -> str | None:
    """The content of the editor's last `fs/write_text_file` of `path` (None: local)."""
    if not (caps.get("fs") or {}).get("writeTextFile"):
        assert not [c for c in agent.client.files.calls if c.method == "write"]
        return None
    writes = [c for c in agent.client.files.calls if c.method == "write" and c.path == str(path)]
    return str(writes[-1].params["content"])


@pytest.mark.parametrize("caps", REVIEW_CAPS)
async def test_a_word_changed_before_allow_is_written_and_told_to_the_model(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict[str, Any]
) -> None:
    fake_gemini.add(function_call_response(*replace("win.txt", "two", "2")), text_response("Done."))
    crlf = "one\r\ntwo\r\nthree\r\n"
    workspace = (tmp_path / "ws").resolve()
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"win.txt": crlf},
        permission_policy="queue",
        # an editor's read gives its buffer's bytes (the test client's disk read is Python's)
        unsaved_buffers={str(workspace / "win.txt"): crlf},
    )
    (caps_sent,) = [
        m["result"]["agentCapabilities"]
        for who, m in agent.client.transcript
        if who == "agent" and "agentCapabilities" in (m.get("result") or {})
    ]
    assert caps_sent["_meta"]["adkAcp"] == {"editReview": True}
    target = agent.workspace / "win.txt"

    # the editor normalized the document to LF; the user typed "TWO!" over the proposal
    request = await ask_and_answer(agent, "Edit", "proceed_once", "one\nTWO!\nthree\n")

    assert request.params["_meta"] == {"adkAcp": {"editReview": {"path": str(target)}}}
    assert diff_of(request.tool_call)["newText"] == "one\r\n2\r\nthree\r\n"
    through_editor = written_through(agent, caps, target)
    if through_editor is None:
        assert target.read_bytes() == b"one\r\nTWO!\r\nthree\r\n"  # CRLF kept on every line
    else:
        assert through_editor == "one\r\nTWO!\r\nthree\r\n"
    (answer,) = tool_answers(fake_gemini)
    assert answer.startswith("Successfully modified file: win.txt (1 replacement).\n\n")
    assert "the file holds the user's version, not yours" in answer
    assert "rejected" not in answer  # the hunk was changed, not reverted
    assert answer.endswith(
        "--- win.txt (your proposal)\n+++ win.txt (written)\n"
        "@@ -1,3 +1,3 @@\n one\n-2\n+TWO!\n three"
    )
    call = agent.tool_calls()[0]["toolCallId"]
    final = agent.final(call)
    assert final["status"] == "completed"
    assert (
        diff_of(final)["newText"] == "one\r\nTWO!\r\nthree\r\n"
    )  # the diff shows what was written

    # a replayed session says the user changed the edit
    before = len(agent.tool_calls())
    await agent.client.load_session(agent.session_id, agent.workspace)
    (replayed,) = agent.tool_calls()[before:]
    permission = replayed["_meta"]["adkAcp"]["permission"]
    assert permission["answer"] == "proceed_once" and permission["modified"] is True


async def test_the_users_version_keeps_the_files_8_bit_encoding_or_nothing_is_written(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(*replace("latin1.txt", "cafe", "coffee")),
        text_response("first"),
        function_call_response(*replace("latin1.txt", "x = 1", "x = 2")),
        text_response("second"),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, {**BARE, **REVIEW}, permission_policy="queue"
    )
    target = agent.workspace / "latin1.txt"
    target.write_bytes(b"cafe\nna\xefve\nx = 1\n")

    await ask_and_answer(agent, "first", "proceed_once", "café\nnaïve\nx = 1\n")
    assert target.read_bytes() == b"caf\xe9\nna\xefve\nx = 1\n"

    # a character the file's encoding cannot hold: refused, the file as it was, the model told
    await ask_and_answer(agent, "second", "proceed_once", "café\nnaïve\nx = 2 ✓\n")
    assert target.read_bytes() == b"caf\xe9\nna\xefve\nx = 1\n"
    answers = tool_answers(fake_gemini)
    assert "Cannot write" in answers[1] and "Nothing was written" in answers[1]


@pytest.mark.parametrize("caps", REVIEW_CAPS)
async def test_a_new_file_is_created_as_the_user_changed_it(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict[str, Any]
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "new.py", "content": "x = 1\n"}),
        text_response("first"),
        function_call_response(*replace("other.py", "", "a = 1\n")),
        text_response("second"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps, permission_policy="queue")
    await ask_and_answer(agent, "write", "proceed_once", "# by me\nx = 1\n")
    await ask_and_answer(agent, "create", "proceed_once", "a = 100\n")

    assert (agent.workspace / "new.py").read_text() == "# by me\nx = 1\n"
    assert (agent.workspace / "other.py").read_text() == "a = 100\n"
    first, second = tool_answers(fake_gemini)
    assert first.startswith("Successfully created and wrote to new file: new.py\n\n")
    assert "+# by me" in first and "rejected" not in first
    assert second.startswith("Created new file: other.py\n\n") and "-a = 1\n+a = 100" in second


async def test_a_reverted_hunk_is_not_written_and_the_model_is_told(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    original = "".join(f"line {n}\n" for n in range(1, 13))
    proposal = original.replace("line 2\n", "LINE 2\n").replace("line 6\n", "LINE 6\n")
    proposal = proposal.replace("line 11\n", "LINE 11\n")
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "a.txt", "content": proposal}),
        text_response("Done."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        {**EDITOR, **REVIEW},
        files={"a.txt": original},
        permission_policy="queue",
    )
    users = proposal.replace("LINE 6\n", "line 6\n")  # the middle hunk reverted
    await ask_and_answer(agent, "three changes", "proceed_once", users)

    assert (agent.workspace / "a.txt").read_text() == users
    (answer,) = tool_answers(fake_gemini)
    assert "They rejected 1 of the 3 hunks of your change (line 6 of the original)" in answer
    assert "-LINE 6\n+line 6" in answer


async def test_a_rejection_after_changes_keeps_the_file(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(function_call_response(*replace("a.py", "1", "2")), text_response("Ok."))
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        {**EDITOR, **REVIEW},
        files={"a.py": "a = 1\n"},
        permission_policy="queue",
    )
    await ask_and_answer(agent, "edit", "cancel", "a = 3\n")
    assert (agent.workspace / "a.py").read_text() == "a = 1\n"
    assert tool_answers(fake_gemini) == ["The user rejected this tool call."]


async def test_clients_without_the_extension_see_todays_behaviour(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(function_call_response(*replace("a.py", "1", "2")), text_response("Ok."))
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        files={"a.py": "a = 1\n"},
        permission_policy="queue",
    )
    path = str(agent.workspace / "a.py")
    meta = {"adkAcp": {"editReview": {"path": path, "content": "a = 3\n"}}}
    request = await ask_and_answer(agent, "edit", "proceed_once", None, meta)

    assert "_meta" not in request.params
    assert (agent.workspace / "a.py").read_text() == "a = 2\n"  # the agent's own proposal
    assert tool_answers(fake_gemini) == ["Successfully modified file: a.py (1 replacement)."]
    before = len(agent.tool_calls())
    await agent.client.load_session(agent.session_id, agent.workspace)
    (replayed,) = agent.tool_calls()[before:]
    assert "modified" not in replayed["_meta"]["adkAcp"]["permission"]


async def test_a_malformed_version_writes_nothing_and_the_agent_keeps_serving(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(*replace("a.py", "1", "2")),
        text_response("first"),
        function_call_response(*replace("a.py", "1", "2")),
        text_response("second"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        {**BARE, **REVIEW},
        files={"a.py": "a = 1\n"},
        permission_policy="queue",
    )
    path = str(agent.workspace / "a.py")
    bad = {"adkAcp": {"editReview": {"path": path, "content": 3}}}
    await ask_and_answer(agent, "edit", "proceed_once", None, bad)
    assert (agent.workspace / "a.py").read_text() == "a = 1\n"
    assert "without a text `content`" in tool_answers(fake_gemini)[0]

    other = {"adkAcp": {"editReview": {"path": path + ".x", "content": "a = 5\n"}}}
    await ask_and_answer(agent, "again", "proceed_once", None, other)
    assert (agent.workspace / "a.py").read_text() == "a = 1\n"
    assert "but the proposed file is" in tool_answers(fake_gemini)[1]


async def test_a_file_saved_while_the_user_reviewed_is_not_overwritten(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(function_call_response(*replace("a.py", "b = 2", "b = 3")), text_response("x"))
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        {**EDITOR, **REVIEW},
        files={"a.py": "a = 1\nb = 2\n"},
        permission_policy="queue",
    )
    target = agent.workspace / "a.py"
    pending = agent.client.start_prompt(agent.session_id, "edit")
    request = await agent.client.next_permission_request()
    target.write_text("a = 100\nb = 2\n")  # saved elsewhere while the diff was open
    request.answer(selected("proceed_once"), meta=users_version(request, "a = 1\nb = 30\n"))
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert target.read_text() == "a = 100\nb = 2\n"
    assert "the file changed since the diff was shown" in tool_answers(fake_gemini)[0]
