"""CommandRunner: local process groups and the editor terminal path."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from runtime.protocol import DisplayTerminal
from runtime.tools.io.commands import CommandRunner
from runtime.tools.io.process_group import group_alive, live_group_members
from tests.unit.runtime.tools.fakes import ProgressLog, RecordingHost, TerminalScript


def terminals(log: ProgressLog) -> list[DisplayTerminal]:
    return [c for update in log.updates for c in update if isinstance(c, DisplayTerminal)]


async def wait_for_pid(log: ProgressLog, timeout_s: float = 5.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for item in terminals(log):
            if item.pid is not None:
                return item.pid
        await asyncio.sleep(0.01)
    raise AssertionError("no pid reported")


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def test_output_is_merged_and_exit_code_reported(tmp_path: Path) -> None:
    result = await CommandRunner().run("echo out; echo err >&2; pwd; exit 3", tmp_path, 10, 10_000)
    assert result.output == f"out\nerr\n{tmp_path}\n"
    assert (result.exit_code, result.signal, result.timed_out, result.truncated) == (
        3,
        None,
        False,
        False,
    )
    assert result.pid is not None and result.terminal_id is None


async def test_output_streams_while_the_command_runs(tmp_path: Path) -> None:
    log = ProgressLog()
    runner = CommandRunner(update_interval_s=0.05)
    result = await runner.run(
        "for i in 1 2 3; do echo line$i; sleep 0.3; done", tmp_path, 10, 10_000, log
    )
    assert result.output == "line1\nline2\nline3\n"
    partial = [t.ansi for t in terminals(log) if t.ansi and t.exit_code is None]
    assert any("line1" in text and "line3" not in text for text in partial)
    assert terminals(log)[0].pid == result.pid  # the pid comes first, before any output
    assert terminals(log)[-1].ansi == result.output


async def test_streaming_is_throttled(tmp_path: Path) -> None:
    log = ProgressLog()
    runner = CommandRunner(update_interval_s=0.1)
    result = await runner.run(
        "for i in $(seq 1 3000); do echo $i; done; sleep 0.3", tmp_path, 10, 100_000, log
    )
    assert result.output.endswith("3000\n")
    assert len(log.updates) <= 10


async def test_output_limit_keeps_the_tail(tmp_path: Path) -> None:
    result = await CommandRunner().run("seq 1 10000", tmp_path, 10, 100)
    assert result.truncated
    assert result.output.endswith("9999\n10000\n")
    assert len(result.output.encode()) <= 100


async def test_timeout_stops_the_group(tmp_path: Path) -> None:
    start = time.monotonic()
    result = await CommandRunner().run("sleep 30 & sleep 30", tmp_path, 0.3, 1000)
    assert result.timed_out and result.signal == "SIGTERM" and result.exit_code is None
    assert time.monotonic() - start < 5
    assert result.pid is not None and not group_alive(result.pid)


async def test_sigkill_follows_when_sigterm_is_ignored(tmp_path: Path) -> None:
    runner = CommandRunner(kill_grace_s=0.2)
    start = time.monotonic()
    # 2 s for the shell to set its trap even on a loaded machine (a TERM before the trap
    # is set simply ends it, which is not what this test is about)
    result = await runner.run("trap '' TERM; sleep 30; sleep 30", tmp_path, 2.0, 1000)
    assert result.timed_out and result.signal == "SIGKILL"
    assert time.monotonic() - start < 10
    assert result.pid is not None and not group_alive(result.pid)


async def test_cancel_kills_the_whole_process_group(tmp_path: Path) -> None:
    log = ProgressLog()
    task = asyncio.create_task(
        CommandRunner().run("sleep 30 & sleep 30; ", tmp_path, 60, 1000, log)
    )
    pid = await wait_for_pid(log)
    try:
        deadline = time.monotonic() + 5
        while len(live_group_members(pid)) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(live_group_members(pid)) == 3  # bash and both sleeps
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        elapsed = time.monotonic() - started
        assert live_group_members(pid) == []  # gone by the time the cancel lands
        assert elapsed < 0.5
    finally:
        kill_group(pid)


async def test_a_failing_progress_callback_stops_the_command(tmp_path: Path) -> None:
    pids: list[int] = []

    async def broken(content: tuple[object, ...]) -> None:
        (item,) = content
        assert isinstance(item, DisplayTerminal) and item.pid is not None
        pids.append(item.pid)
        if item.ansi:
            raise ConnectionError("editor went away")

    runner = CommandRunner(update_interval_s=0.05)
    with pytest.raises(ConnectionError):
        await runner.run("echo tick; sleep 30", tmp_path, 60, 1000, broken)
    assert not group_alive(pids[0])


async def test_pagers_are_disabled(tmp_path: Path) -> None:
    result = await CommandRunner().run("echo $PAGER $GIT_PAGER", tmp_path, 10, 1000)
    assert result.output == "cat cat\n"


async def test_background_children_are_reported_not_waited_for(tmp_path: Path) -> None:
    start = time.monotonic()
    result = await CommandRunner().run("sleep 30 & echo started", tmp_path, 10, 1000)
    try:
        assert result.output == "started\n" and result.exit_code == 0
        assert len(result.background_pids) == 1
        assert time.monotonic() - start < 5
    finally:
        assert result.pid is not None
        kill_group(result.pid)


async def test_a_missing_directory_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await CommandRunner().run("true", tmp_path / "missing", 5, 1000)


async def test_start_background_returns_a_group_leader(tmp_path: Path) -> None:
    log_path = tmp_path / "logs" / "bg.log"
    started = await CommandRunner().start_background("echo ready; sleep 30", tmp_path, log_path)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and "ready" not in (
            log_path.read_text() if log_path.exists() else ""
        ):
            await asyncio.sleep(0.02)
        assert log_path.read_text() == "ready\n"
        assert group_alive(started.pid)
    finally:
        kill_group(started.pid)


# ---------------------------------------------------------------- editor terminal


async def test_terminal_path_runs_in_the_editor(tmp_path: Path) -> None:
    host = RecordingHost(terminal=True, terminal_script=TerminalScript(output="hi\n", exit_code=2))
    log = ProgressLog()
    runner = CommandRunner(host)
    assert runner.uses_editor_terminal
    result = await runner.run("echo hi; exit 2", tmp_path, 10, 5000, log)
    request = host.terminal_requests[0]
    assert (request.command, request.args, request.cwd, request.output_byte_limit) == (
        "bash",
        ("-c", "echo hi; exit 2"),
        tmp_path,
        5000,
    )
    assert request.env["PAGER"] == "cat"
    assert log.updates[0] == (DisplayTerminal(terminal_id="term-1"),)
    assert [c[0] for c in host.calls] == [
        "create_terminal",
        "wait_for_exit",
        "output",
        "release",
        "released",
    ]
    assert (result.output, result.exit_code, result.terminal_id, result.pid) == (
        "hi\n",
        2,
        "term-1",
        None,
    )


async def test_terminal_timeout_kills_then_releases(tmp_path: Path) -> None:
    host = RecordingHost(
        terminal=True, terminal_script=TerminalScript(output="partial", delay_s=None)
    )
    result = await CommandRunner(host).run("sleep 99", tmp_path, 0.2, 1000)
    assert result.timed_out and result.signal == "SIGKILL" and result.output == "partial"
    assert [c[0] for c in host.calls] == [
        "create_terminal",
        "wait_for_exit",
        "kill",
        "output",
        "release",
        "released",
    ]


async def test_terminal_cancel_kills_releases_and_reraises(tmp_path: Path) -> None:
    host = RecordingHost(terminal=True, terminal_script=TerminalScript(delay_s=None))
    log = ProgressLog()
    task = asyncio.create_task(CommandRunner(host).run("sleep 99", tmp_path, 60, 1000, log))
    while ("wait_for_exit", "term-1") not in host.calls:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [c[0] for c in host.calls] == [
        "create_terminal",
        "wait_for_exit",
        "kill",
        "release",
        "released",
    ]


async def _cancelled_in_terminal(host: RecordingHost, runner: CommandRunner) -> asyncio.Task[Any]:
    """A command running in the editor terminal, then its task cancelled twice: once, and
    again once the terminal's release was asked (the turn's abort grace ran out)."""
    task = asyncio.create_task(runner.run("sleep 99", Path("."), 60, 1000))
    while ("wait_for_exit", "term-1") not in host.calls:
        await asyncio.sleep(0.01)
    task.cancel()
    while ("release", "term-1") not in host.calls:
        await asyncio.sleep(0.01)
    task.cancel()
    return task


async def test_a_second_cancel_still_waits_for_the_release() -> None:
    gate = asyncio.Event()
    host = RecordingHost(
        terminal=True, terminal_script=TerminalScript(delay_s=None, release_gate=gate)
    )
    task = await _cancelled_in_terminal(host, CommandRunner(host, release_wait_s=30))
    done, _ = await asyncio.wait({task}, timeout=0.2)
    assert not done  # the editor has not answered the release yet
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert [c[0] for c in host.calls][-3:] == ["kill", "release", "released"]


async def test_an_editor_that_never_releases_holds_the_cancel_at_most_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = asyncio.Event()
    host = RecordingHost(
        terminal=True, terminal_script=TerminalScript(delay_s=None, release_gate=never)
    )
    task = await _cancelled_in_terminal(host, CommandRunner(host, release_wait_s=0.3))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert "released" not in [c[0] for c in host.calls]
    assert "did not release terminal term-1 within 0.3 s" in caplog.text
