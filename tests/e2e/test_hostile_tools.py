"""Issue #8 end to end, the tool side: what real clients answer, and hostile input
through the model and the prompt — each on the real `adk-acp` process.

New files with a client that answers a missing file with -32603 (as the official
SDK clients and acpx do), one editor read per edit, a streamed loop cut at
detection, `glob` confined, @-mentions of FIFOs and huge files, credentials kept
out of commands and traces, secret files asked for in every mode, commands that
die with a killed agent, and tool outputs removed with their session.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.tools_harness import (
    EDITOR,
    MakeAgent,
    diff_of,
    function_responses,
    response_text,
    start_agent,
    wait_until,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    parts_response,
    text_part,
    text_response,
)

pytestmark = pytest.mark.e2e
logger = logging.getLogger(__name__)

GOOGLE_KEY = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


# ---------------------------------------------------------------- interop


async def test_new_file_with_a_client_that_answers_missing_with_internal_error(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "new.txt", "content": "hello\n"}),
        function_call_response(
            "replace",
            {
                "file_path": "old.txt",
                "instruction": "say two",
                "old_string": "one",
                "new_string": "two",
            },
        ),
        text_response("Done."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        files={"old.txt": "one\n"},
        missing_file="internal",
        permission_policy="queue",
    )
    pending = agent.client.start_prompt(agent.session_id, "create new.txt, edit old.txt")

    first = await agent.client.next_permission_request()
    diff = diff_of(first.tool_call)
    assert diff["path"] == str(agent.workspace / "new.txt") and diff["newText"] == "hello\n"
    assert diff.get("oldText") is None  # shown as a new file, not a failed read
    first.select("proceed_once")
    second = await agent.client.next_permission_request()
    assert diff_of(second.tool_call)["oldText"] == "one\n"
    second.select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}

    assert (agent.workspace / "new.txt").read_text() == "hello\n"
    assert (agent.workspace / "old.txt").read_text() == "two\n"
    # the missing file was never asked of the editor; the edited one was read for its
    # diff and again at execution (issue 18: a change made while the user decided counts)
    assert agent.client.files.reads == [str(agent.workspace / "old.txt")] * 2
    assert agent.client.files.writes == [
        str(agent.workspace / "new.txt"),
        str(agent.workspace / "old.txt"),
    ]
    created = function_responses(fake_gemini.generate_requests[1])[0]
    assert response_text(created) == "Successfully created and wrote to new file: new.txt"


async def test_a_streamed_loop_stops_at_detection_with_notice_and_nudge(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    sentence = "I am checking the configuration files once again. "
    looping = parts_response([[text_part(sentence)] for _ in range(30)]).with_delay(0.02)
    fake_gemini.add(looping, text_response("Let me try something else."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)

    assert await agent.prompt("check the configuration") == {"stopReason": "end_turn"}

    shown = agent.text()
    # Not 30: the stream stopped at detection (10 repeats). Chunks that arrived together
    # on a busy machine are shown as one batch, so a few more may precede the cut.
    assert shown.count(sentence.strip()) <= 20, shown
    assert shown.endswith("Let me try something else.")
    # the nudge went to the model as a user turn of the same prompt, and stays in history
    nudge = fake_gemini.generate_requests[1].contents[-1]
    assert nudge["role"] == "user" and "Potential loop detected" in nudge["parts"][0]["text"]
    notices = json.dumps(agent.updates())
    assert "possible loop was detected" in notices
    fake_gemini.add(text_response("next"))
    assert await agent.prompt("and now?") == {"stopReason": "end_turn"}
    history = json.dumps(fake_gemini.generate_requests[-1].contents)
    assert "Potential loop detected" in history


# ---------------------------------------------------------------- confinement


async def test_glob_cannot_leave_the_workspace(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    fake_gemini.add(
        function_call_response("glob", {"pattern": "../../../../../../../../etc/*"}),
        function_call_response("glob", {"pattern": "link/*.txt"}),
        function_call_response("glob", {"pattern": "**/*.txt"}),
        text_response("done"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files={"in.txt": "i"})
    (agent.workspace / "link").symlink_to(outside, target_is_directory=True)

    assert await agent.prompt("list files") == {"stopReason": "end_turn"}

    answers = [response_text(function_responses(r)[0]) for r in fake_gemini.generate_requests[1:4]]
    assert "passwd" not in answers[0] and "outside the workspace" in answers[0]
    assert "secret.txt" not in answers[1] and "outside the workspace" in answers[1]
    assert "in.txt" in answers[2] and "secret.txt" not in answers[2]
    assert agent.client.permission_requests == []


@pytest.mark.cold  # the agent process' own memory
@pytest.mark.timeout(180)  # generous bounds: see inside
async def test_mentions_of_a_fifo_and_a_huge_file_do_not_hang_the_agent(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.default = text_response("ok")
    agent = await start_agent(make_agent, tmp_path, fake_gemini, {})
    fifo = agent.workspace / "pipe"
    os.mkfifo(fifo)
    huge = agent.workspace / "huge.txt"
    with open(huge, "wb") as handle:
        handle.truncate(300 * 1024 * 1024)  # sparse: 300 MB that cost no disk

    def mention(path: Path) -> list[dict[str, str]]:
        link = {"type": "resource_link", "uri": path.as_uri(), "name": path.name}
        return [{"type": "text", "text": "look"}, link]

    # A hang would be forever: the bounds only tell "answered" from "hung", generously
    # (a loaded machine takes seconds); the times are printed.
    started = time.monotonic()
    with pytest.raises(AcpError) as info:
        await agent.client.prompt(agent.session_id, mention(fifo), timeout=60)
    assert info.value.code == -32602 and "regular file" in info.value.message
    logger.info("a FIFO's mention refused in %.2f s", time.monotonic() - started)
    started = time.monotonic()
    assert await agent.client.prompt(agent.session_id, mention(huge), timeout=60) == {
        "stopReason": "end_turn"
    }
    logger.info("a 300 MB file's mention answered in %.2f s", time.monotonic() - started)
    sent = json.dumps(fake_gemini.generate_requests[-1].contents)
    assert "too large" in sent and len(sent) < 100_000
    status = Path(f"/proc/{agent.client.process.pid}/status").read_text()  # type: ignore[union-attr]
    rss_kb = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
    assert rss_kb < 300 * 1024


# ---------------------------------------------------------------- credentials


async def test_commands_get_no_credentials_and_traces_and_logs_show_none(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    log = tmp_path / "agent.log"
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": "printenv"}),
        text_response(f"the token is {GITHUB_TOKEN}"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        {},  # local commands
        args=[
            "--trace-file",
            str(trace),
            "--log-file",
            str(log),
            "--log-level",
            "DEBUG",
            "--approval-mode",
            "yolo",
        ],
    )
    assert await agent.prompt(f"my key is {GOOGLE_KEY}") == {"stopReason": "end_turn"}

    output = response_text(function_responses(fake_gemini.generate_requests[1])[0])
    assert "HOME=" in output  # the command ran with an environment
    assert "GEMINI_API_KEY" not in output and "GITHUB_TOKEN" not in output
    traced = trace.read_text()
    assert GOOGLE_KEY not in traced and GITHUB_TOKEN not in traced and "***" in traced
    logged = log.read_text()
    assert GOOGLE_KEY not in logged and GITHUB_TOKEN not in logged


async def test_secret_files_are_asked_for_even_in_yolo(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("read_file", {"file_path": ".env"}),
        text_response("refused"),
        function_call_response("read_file", {"file_path": "ok.txt"}),
        function_call_response("grep_search", {"pattern": "SECRET"}),
        text_response("done"),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "yolo"],
        files={".env": "SECRET=hunter2\n", "ok.txt": "fine\n", "notes.md": "no SECRET here\n"},
        permission_policy="queue",
    )
    pending = agent.client.start_prompt(agent.session_id, "read .env")
    request = await agent.client.next_permission_request()
    assert request.tool_call["title"] == "Read .env"
    request.select_kind("reject_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert "hunter2" not in json.dumps(fake_gemini.generate_requests[1].contents)

    assert await agent.prompt("read ok.txt and search") == {"stopReason": "end_turn"}
    assert agent.client.open_permissions == 0 and len(agent.client.permission_requests) == 1
    found = response_text(function_responses(fake_gemini.generate_requests[-1])[0])
    assert "notes.md" in found and "hunter2" not in found


async def test_a_hard_link_counts_as_outside(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "linked.txt"}), text_response("ok")
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, {})
    os.link(outside, agent.workspace / "linked.txt")
    assert await agent.prompt("read linked.txt") == {"stopReason": "end_turn"}
    answer = response_text(function_responses(fake_gemini.generate_requests[1])[0])
    assert "private" not in answer and "hard link" in answer


# ---------------------------------------------------------------- process lifetime


@pytest.mark.timeout(180)  # generous bounds: see inside
async def test_a_killed_agent_takes_its_commands_with_it(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ws" / "started"  # in the workspace: written with a sandbox on too
    command = f"touch {marker}; sleep 300 & sleep 300"
    fake_gemini.add(function_call_response("run_shell_command", {"command": command}))
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, {}, args=["--approval-mode", "yolo"]
    )
    agent.client.start_prompt(agent.session_id, "run it")
    await wait_until(marker.exists, 60, "the command to start")
    # The command's own processes only: its shell (named by the marker) and whatever
    # runs in that shell's process group (not any other "sleep 300" on the machine).
    groups = {_pgid(pid) for pid in _processes_running(str(marker))} - {None}
    sleepers = [pid for pid in _processes_running("sleep 300") if _pgid(pid) in groups]
    assert sleepers
    process = agent.client.process
    assert process is not None
    os.kill(process.pid, signal.SIGKILL)  # as Zed closes a thread: no handler runs
    await agent.client.close(expect_exit_code=None)

    killed = time.monotonic()
    await wait_until(
        lambda: not any(_alive(pid) for pid in sleepers), 60, "the killed agent's commands to end"
    )
    logger.info("the killed agent's commands ended in %.2f s", time.monotonic() - killed)


async def test_tool_outputs_live_as_long_as_the_session_record(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    command = "python3 -c \"print('x' * 100000)\""
    fake_gemini.add(
        function_call_response("run_shell_command", {"command": command}), text_response("ok")
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, {}, args=["--approval-mode", "yolo"]
    )
    assert await agent.prompt("print a lot") == {"stopReason": "end_turn"}
    saved = list((agent.home / ".gemini" / "tmp").rglob("*.txt"))
    assert saved, "the truncated output was saved in full"
    # the session can be reloaded later, pointers to its full outputs included
    assert await agent.client.request("session/close", {"sessionId": agent.session_id}) == {}
    assert all(p.exists() for p in saved)
    # deleting the session deletes them
    assert await agent.client.request("session/delete", {"sessionId": agent.session_id}) == {}
    assert not any(p.exists() for p in saved)


def _processes_running(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry.name))
    return found


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
