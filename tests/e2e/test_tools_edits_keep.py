"""Issue 18 end to end ("never lose a byte"), through the real agent process.

Edits keep the bytes they do not change (encodings, BOMs, line endings, final
newline, mode bits) and refuse what they cannot keep (a read-only file, a file
with no exact decoding) without asking the user; at execution the file is read
again, so a change the user saved while the approval dialog was open is kept
(or the edit fails and the model is told to read the file again); two sessions
editing one file both land.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tools_harness import (
    BARE,
    CAPS,
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
    uses_editor,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

CHANGED = "the file changed since the diff was shown; read it again"


def replace(path: str, old: str, new: str) -> tuple[str, dict[str, str]]:
    return (
        "replace",
        {"file_path": path, "instruction": "edit", "old_string": old, "new_string": new},
    )


def all_responses(fake: FakeGeminiServer) -> list[str]:
    """What the model got back from every tool call, in the order the requests came."""
    return [response_text(r) for req in fake.generate_requests for r in function_responses(req)]


async def test_local_edits_keep_encoding_line_endings_final_newline_and_mode(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    utf16 = b"\xff\xfe" + "ä = 1\r\nb\r\n".encode("utf-16-le")
    files: dict[str, bytes] = {
        "latin1.txt": b"\x81 ctl\ncaf\xe9 = 1\nna\xefve\n",
        "win.txt": b"one\r\ntwo\r\n",
        "u16.txt": utf16,
        "bom.txt": b"\xef\xbb\xbfx = 1\n",
        "tool.sh": b"#!/bin/sh\necho 1",
        "ro.txt": b"keep = 1\n",
        "bad.txt": b"\xef\xbb\xbfok \xff\n",
    }
    calls = [
        replace("latin1.txt", "= 1", "= 2 é"),
        replace("win.txt", "one", "one\ninserted"),
        replace("u16.txt", "ä = 1", "ä = 2\nc"),
        replace("bom.txt", "x = 1", "x = 2"),
        replace("tool.sh", "echo 1", "echo 2\n"),
        replace("ro.txt", "keep = 1", "keep = 2"),
        replace("bad.txt", "ok", "fine"),
        ("write_file", {"file_path": "win.txt", "content": "whole\nnew\n"}),
    ]
    fake_gemini.add(*(function_call_response(*c) for c in calls), text_response("Edited."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, BARE)
    for name, data in files.items():
        (agent.workspace / name).write_bytes(data)
    os.chmod(agent.workspace / "tool.sh", 0o755)
    os.chmod(agent.workspace / "ro.txt", 0o444)

    assert await agent.prompt("Edit the files") == {"stopReason": "end_turn"}

    ws = agent.workspace
    assert (ws / "latin1.txt").read_bytes() == b"\x81 ctl\ncaf\xe9 = 2 \xe9\nna\xefve\n"
    assert (ws / "u16.txt").read_bytes() == b"\xff\xfe" + "ä = 2\r\nc\r\nb\r\n".encode("utf-16-le")
    assert (ws / "bom.txt").read_bytes() == b"\xef\xbb\xbfx = 2\n"
    assert (ws / "tool.sh").read_bytes() == b"#!/bin/sh\necho 2"  # still no final newline
    assert stat.S_IMODE((ws / "tool.sh").stat().st_mode) == 0o755
    assert (ws / "win.txt").read_bytes() == b"whole\r\nnew\r\n"  # after one\r\ninserted\r\n...
    assert (ws / "ro.txt").read_bytes() == b"keep = 1\n"
    assert stat.S_IMODE((ws / "ro.txt").stat().st_mode) == 0o444
    assert (ws / "bad.txt").read_bytes() == files["bad.txt"]

    responses = all_responses(fake_gemini)
    assert len(responses) == len(calls)
    assert responses[1].startswith("Successfully modified file: win.txt")
    assert "read-only (mode 0444)" in responses[5]
    assert "Cannot edit" in responses[6] and "left as it is" in responses[6]
    # the refusals are not put to the user, and the user sees why in the failed call
    asked = [r.tool_call["title"] for r in agent.client.permission_requests]
    assert "Edit ro.txt" not in asked and "Edit bad.txt" not in asked
    ro_call = agent.tool_calls()[5]["toolCallId"]
    final = agent.final(ro_call)
    assert final["status"] == "failed"
    assert "read-only" in final["content"][0]["content"]["text"]
    win_call = agent.tool_calls()[1]["toolCallId"]
    (diff,) = agent.final(win_call)["content"]
    assert diff["newText"] == "one\r\ninserted\r\ntwo\r\n"  # the diff shown is what was written
    assert sorted(os.listdir(ws)) == sorted(files)  # no temp files


async def test_edits_through_the_editor_keep_line_endings_and_spare_read_only_files(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    workspace = (tmp_path / "ws").resolve()
    fake_gemini.add(
        function_call_response(*replace("win.txt", "one", "one\nnew")),
        function_call_response(*replace("ro.txt", "x", "y")),
        text_response("Done."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        files={"win.txt": "disk\n", "ro.txt": "x\n"},
        unsaved_buffers={str(workspace / "win.txt"): "one\r\ntwo"},
    )
    os.chmod(workspace / "ro.txt", 0o444)

    assert await agent.prompt("Edit") == {"stopReason": "end_turn"}

    (write,) = [c for c in agent.client.files.calls if c.method == "write"]
    assert write.path == str(workspace / "win.txt")
    assert write.params["content"] == "one\r\nnew\r\ntwo"  # CRLF kept, still no final newline
    assert (workspace / "ro.txt").read_text() == "x\n"
    responses = all_responses(fake_gemini)
    assert "read-only" in responses[1]


@pytest.mark.parametrize("caps", CAPS)
async def test_a_change_saved_while_the_user_decides_is_kept_or_the_edit_fails(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict[str, Any]
) -> None:
    fake_gemini.add(
        function_call_response(*replace("a.py", "b = 2", "b = 3")),
        text_response("first"),
        function_call_response(*replace("a.py", "c = 3", "c = 4")),
        text_response("second"),
        function_call_response("write_file", {"file_path": "a.py", "content": "whole\n"}),
        text_response("third"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"a.py": "a = 1\nb = 2\nc = 3\n"},
        permission_policy="queue",
    )
    target = agent.workspace / "a.py"

    async def while_asked(prompt: str, user_text: str) -> None:
        pending = agent.client.start_prompt(agent.session_id, prompt)
        request = await agent.client.next_permission_request()
        target.write_text(user_text)  # the user saves a change while the dialog is open
        request.select("proceed_once")
        assert await pending.result(30) == {"stopReason": "end_turn"}

    # the old text still matches as it did: applied to the current file, the user's change kept
    await while_asked("b to 3", "a = 100\nb = 2\nc = 3\n")
    assert target.read_text() == "a = 100\nb = 3\nc = 3\n"
    assert all_responses(fake_gemini)[-1] == "Successfully modified file: a.py (1 replacement)."
    first = agent.tool_calls()[0]["toolCallId"]
    assert agent.final(first)["content"][0]["oldText"] == "a = 100\nb = 2\nc = 3\n"

    # the user changed the very text the edit replaces: nothing written, the model told why
    await while_asked("c to 4", "a = 100\nb = 3\nc = 9\n")
    assert target.read_text() == "a = 100\nb = 3\nc = 9\n"
    assert CHANGED in all_responses(fake_gemini)[-1]
    second = agent.tool_calls()[1]["toolCallId"]
    assert agent.final(second)["status"] == "failed"

    # a whole-file write over a file changed since its diff was shown fails the same way
    await while_asked("rewrite", "user's own\n")
    assert target.read_text() == "user's own\n"
    assert CHANGED in all_responses(fake_gemini)[-1]
    if uses_editor(caps):
        writes = [c.params["content"] for c in agent.client.files.calls if c.method == "write"]
        assert writes == ["a = 100\nb = 3\nc = 3\n"]


@pytest.mark.parametrize("caps", CAPS)
async def test_two_sessions_editing_one_file_both_land_in_order(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict[str, Any]
) -> None:
    fake_gemini.add(
        function_call_response(*replace("shared.txt", "a = 1", "a = 10")),
        function_call_response(*replace("shared.txt", "b = 2", "b = 20")),
        text_response("done"),
        text_response("done"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"shared.txt": "a = 1\nb = 2\n"},
        permission_policy="queue",
    )
    other = (await agent.client.new_session(agent.workspace))["sessionId"]
    first = agent.client.start_prompt(agent.session_id, "a to 10")
    asked_first = await agent.client.next_permission_request()
    second = agent.client.start_prompt(other, "b to 20")
    asked_second = await agent.client.next_permission_request()
    assert (asked_first.session_id, asked_second.session_id) == (agent.session_id, other)
    # both diffs were made of the same text; both are allowed at once
    for asked in (asked_first, asked_second):
        assert asked.tool_call["content"][0]["oldText"] == "a = 1\nb = 2\n"
    asked_first.select("proceed_once")
    asked_second.select("proceed_once")

    assert await first.result(30) == {"stopReason": "end_turn"}
    assert await second.result(30) == {"stopReason": "end_turn"}
    assert (agent.workspace / "shared.txt").read_text() == "a = 10\nb = 20\n"
    assert sorted(all_responses(fake_gemini)) == [
        "Successfully modified file: shared.txt (1 replacement).",
        "Successfully modified file: shared.txt (1 replacement).",
    ]
    if uses_editor(caps):
        # one writer at a time: the second write was made from the first one's result
        writes = [c.params["content"] for c in agent.client.files.calls if c.method == "write"]
        assert len(writes) == 2 and writes[1] == "a = 10\nb = 20\n"
        assert writes[0] in ("a = 10\nb = 2\n", "a = 1\nb = 20\n")
