"""run_shell_command: the model's view, displays, background runs, the editor terminal."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from runtime.protocol import DisplayTerminal
from runtime.tools.builtin.shell import RunShellCommandTool, strip_ansi
from runtime.tools.io.process_group import group_alive
from tests.unit.runtime.tools.fakes import ProgressLog, RecordingHost, TerminalScript, make_env


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    return root


async def test_success_output_for_the_model(ws: Path) -> None:
    env = make_env(ws)
    result = await RunShellCommandTool().execute({"command": "printf 'a\\nb\\n'"}, env)
    assert not result.is_error
    lines = result.llm_content.splitlines()
    assert lines[:4] == ["Command: printf 'a\\nb\\n'", "Directory: .", "Output: a", "b"]
    assert lines[4].startswith("Process Group PGID: ")
    assert "Exit Code" not in result.llm_content and "Error" not in result.llm_content
    (display,) = result.display
    assert (
        isinstance(display, DisplayTerminal) and display.exit_code == 0 and display.ansi == "a\nb\n"
    )
    assert (
        isinstance(env.on_progress, ProgressLog) and env.on_progress.updates
    )  # streamed to the editor


async def test_failure_exit_code_and_directory(ws: Path) -> None:
    result = await RunShellCommandTool().execute(
        {"command": "pwd; echo oops >&2; exit 4", "dir_path": "sub"}, make_env(ws)
    )
    assert not result.is_error  # a failing command is an answer, not a tool error
    assert f"Output: {ws / 'sub'}\noops" in result.llm_content
    assert "Directory: sub" in result.llm_content and "Exit Code: 4" in result.llm_content
    assert result.raw_output is not None and result.raw_output["exit_code"] == 4


async def test_empty_output_and_ansi_stripped(ws: Path) -> None:
    empty = await RunShellCommandTool().execute({"command": "true"}, make_env(ws))
    assert "Output: (empty)" in empty.llm_content
    colored = await RunShellCommandTool().execute(
        {"command": "printf '\\033[31mred\\033[0m'"}, make_env(ws)
    )
    assert "Output: red" in colored.llm_content
    assert strip_ansi("\x1b]0;title\x07x\x1b[1;32my") == "xy"


async def test_timeout_is_an_error_with_a_signal(ws: Path) -> None:
    result = await RunShellCommandTool(timeout_s=0.2).execute({"command": "sleep 30"}, make_env(ws))
    assert result.is_error and result.error_type == "timeout"
    assert "Error: Command timed out after 0.2 s" in result.llm_content
    assert "Signal: SIGTERM" in result.llm_content


async def test_truncated_output_says_so(ws: Path) -> None:
    result = await RunShellCommandTool(output_limit=50).execute(
        {"command": "seq 1 1000"}, make_env(ws)
    )
    output = result.llm_content.split("Output: ", 1)[1]
    assert (
        output.startswith("[Earlier output was dropped")
        and "999\n1000\nProcess Group PGID" in output
    )
    assert "\n500\n" not in output


async def test_bad_arguments_and_directories(ws: Path) -> None:
    env = make_env(ws)
    tool = RunShellCommandTool()
    assert tool.validate({"command": ""}) is not None
    assert tool.validate({"command": "ls", "is_background": "yes"}) is not None
    outside = await tool.execute({"command": "ls", "dir_path": ".."}, env)
    assert outside.is_error and outside.error_type == "path_outside_workspace"
    missing = await tool.execute({"command": "ls", "dir_path": "nope"}, env)
    assert missing.is_error and missing.error_type == "file_not_found"


async def test_cancel_propagates(ws: Path) -> None:
    env = make_env(ws)
    task = asyncio.create_task(RunShellCommandTool().execute({"command": "sleep 30"}, env))
    assert isinstance(env.on_progress, ProgressLog)
    while not env.on_progress.updates:
        await asyncio.sleep(0.01)
    (first,) = env.on_progress.updates[0]
    assert isinstance(first, DisplayTerminal) and first.pid is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not group_alive(first.pid)


async def test_background_run_returns_the_pid(ws: Path) -> None:
    env = make_env(ws)
    tool = RunShellCommandTool(background_check_s=0.3)
    result = await tool.execute({"command": "echo serving; sleep 30", "is_background": True}, env)
    assert result.raw_output is not None
    pid = result.raw_output["pid"]
    try:
        assert not result.is_error and result.raw_output["running"]
        assert (
            f"Background PIDs: {pid}" in result.llm_content
            and "Output: serving" in result.llm_content
        )
        assert Path(result.raw_output["log_path"]).is_relative_to(env.temp_dir)
    finally:
        os.killpg(pid, signal.SIGKILL)
    quick = await tool.execute({"command": "echo done", "is_background": True}, env)
    assert not quick.is_error and "already finished" in quick.llm_content


async def test_editor_terminal_is_embedded(ws: Path) -> None:
    host = RecordingHost(terminal=True, terminal_script=TerminalScript(output="ok\n", exit_code=1))
    env = make_env(ws, host)
    result = await RunShellCommandTool().execute({"command": "make test", "dir_path": "sub"}, env)
    assert host.terminal_requests[0].cwd == ws / "sub"
    assert result.display == (DisplayTerminal(terminal_id="term-1", exit_code=1),)
    assert isinstance(env.on_progress, ProgressLog)
    assert env.on_progress.updates[0] == (DisplayTerminal(terminal_id="term-1"),)
    assert "Output: ok" in result.llm_content and "Exit Code: 1" in result.llm_content
    assert "Process Group PGID" not in result.llm_content


async def test_background_is_refused_through_the_editor_terminal(ws: Path) -> None:
    host = RecordingHost(terminal=True)
    result = await RunShellCommandTool().execute(
        {"command": "serve", "is_background": True}, make_env(ws, host)
    )
    assert result.is_error and result.error_type == "unsupported"
    assert host.terminal_requests == []


def test_display(ws: Path) -> None:
    env = make_env(ws)
    tool = RunShellCommandTool()
    display = tool.display({"command": "pytest -q"}, env)
    assert (display.title, display.kind) == ("Run `pytest -q`", "execute")
    assert tool.display(
        {"command": "npm start", "dir_path": "sub", "is_background": True}, env
    ).title == ("Run `npm start` in sub (background)")
    assert tool.display({"command": "echo a\necho b"}, env).title == "Run `echo a…`"
