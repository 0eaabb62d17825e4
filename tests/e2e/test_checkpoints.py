"""Checkpoints (issue 19.7, Gemini CLI's checkpointing), through the real agent: with
`general.checkpointing.enabled`, a snapshot in a shadow git repository (under our
state dir, never the user's `.git`) before each approved edit; `/restore` lists and
restores (files byte for byte, the conversation too); `/rewind` asks whether the
files of the rewound exchanges go back as well."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.acp_client import JsonObject, allow_once, selected
from tests.e2e.test_sessions import contents_text
from tests.e2e.tools_harness import EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]  # several processes on a busy machine

ENABLED = json.dumps({"general": {"checkpointing": {"enabled": True}}})
CRLF = b"one\r\nkeep these bytes\r\n"


def write(path: str, content: str) -> tuple[str, dict[str, str]]:
    return "write_file", {"file_path": path, "content": content}


def tree_digest(folder: Path) -> str:
    """Every file's path and bytes under `folder` (the user's `.git`, checked untouched)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


async def start(
    make_agent: MakeAgent, tmp_path: Path, fake: FakeGeminiServer, **options: object
) -> Agent:
    """A workspace under the user's own git, with a `.gitattributes` that would turn
    CRLF into LF if it applied to snapshots, and checkpointing on."""
    files = {".gemini/settings.json": ENABLED, ".gitattributes": "* text=auto eol=lf\n"}
    agent = await start_agent(make_agent, tmp_path, fake, EDITOR, files=files, **options)
    (agent.workspace / "a.txt").write_bytes(CRLF)
    subprocess.run(["git", "init", "-q", str(agent.workspace)], check=True)
    return agent


def listed(text: str) -> list[str]:
    return [line[3:-1] for line in text.splitlines() if line.startswith("- `")]


async def test_restore_lists_and_brings_back_files_and_conversation(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response(*write("a.txt", "two\n")),
        text_response("wrote a"),
        function_call_response(*write("new.txt", "new\n")),
        text_response("wrote new"),
        text_response("after the restore"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours\n")
    user_git = tree_digest(agent.workspace / ".git")

    await agent.prompt("/restore list", timeout=120)  # Gemini CLI's sub-command
    assert "No checkpoints yet" in agent.text()
    assert await agent.prompt("write a.txt", timeout=120) == {"stopReason": "end_turn"}
    assert await agent.prompt("write new.txt", timeout=120) == {"stopReason": "end_turn"}
    assert (agent.workspace / "a.txt").read_bytes() == b"two\n"

    mark = len(agent.text())
    await agent.prompt("/restore", timeout=120)
    names = listed(agent.text()[mark:])
    assert [n.rsplit("Z-", 1)[1] for n in names] == ["a.txt-write_file", "new.txt-write_file"]
    # stored under our state dir, in a shadow repository of its own
    [folder] = list((agent.home / ".local/state/adk-acp/sessions").glob("*/checkpoints"))
    saved = json.loads((folder / f"{names[0]}.json").read_text())
    assert saved["toolCall"] == {
        "name": "write_file",
        "args": {"file_path": "a.txt", "content": "two\n"},
    }
    assert saved["sessionId"] == agent.session_id and saved["messageId"]
    assert (folder.parent / "history" / ".git").is_dir()

    mark = len(agent.text())
    await agent.prompt(f"/restore {names[0]}", timeout=120)
    said = agent.text()[mark:]
    assert "Restored the workspace's files to before `write_file` on `a.txt`" in said
    assert "conversation went back" in said
    assert (agent.workspace / "a.txt").read_bytes() == CRLF  # byte for byte
    assert not (agent.workspace / "new.txt").exists()  # made after the checkpoint
    assert tree_digest(agent.workspace / ".git") == user_git  # the user's git untouched
    assert outside.read_text() == "not ours\n"
    await agent.prompt("next", timeout=120)
    assert contents_text(fake_gemini.generate_requests[-1]) == [("user", "next")]

    # the restore itself can be undone: the state before it is a checkpoint
    mark = len(agent.text())
    await agent.prompt("/restore", timeout=120)
    undo = listed(agent.text()[mark:])[-1]
    assert undo.endswith("before-restore-restore")
    await agent.prompt(f"/restore {undo}", timeout=120)
    assert (agent.workspace / "new.txt").read_bytes() == b"new\n"
    assert (agent.workspace / "a.txt").read_bytes() == b"two\n"

    # bad names are answered, nothing changes
    for bad in ("../../etc/passwd", "nope"):
        mark = len(agent.text())
        await agent.prompt(f"/restore {bad}", timeout=120)
        assert "Nothing was restored" in agent.text()[mark:]
    assert (agent.workspace / "a.txt").read_bytes() == b"two\n"


async def test_rewind_asks_whether_the_files_go_back_too(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    def policy(params: JsonObject) -> JsonObject:
        if params["toolCall"]["toolCallId"].startswith("rewind-"):
            questions.append(params)
            return selected("restore_files")
        return allow_once(params)

    questions: list[JsonObject] = []
    fake_gemini.add(
        function_call_response(*write("a.txt", "two\n")),
        text_response("wrote a"),
        function_call_response(*write("a.txt", "three\n")),
        text_response("wrote a again"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=policy)
    await agent.prompt("first", timeout=120)
    await agent.prompt("second", timeout=120)
    assert (agent.workspace / "a.txt").read_bytes() == b"three\n"

    mark = len(agent.text())
    await agent.prompt("/rewind 2", timeout=120)
    said = agent.text()[mark:]
    [question] = questions
    assert question["toolCall"]["title"].startswith("Restore the files")
    assert {o["optionId"] for o in question["options"]} == {"restore_files", "keep_files"}
    assert "Rewound 2 exchange(s)" in said and "The files were restored" in said
    assert (agent.workspace / "a.txt").read_bytes() == CRLF


async def test_restore_without_checkpointing_says_how_to_enable_it(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt("/restore", timeout=120)
    assert "Checkpointing is not enabled" in agent.text()
    assert "general" in agent.text() and "checkpointing" in agent.text()
