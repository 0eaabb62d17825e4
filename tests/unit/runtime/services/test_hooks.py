"""The hook runner with real hook processes."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from runtime.services.hooks import HookRunner, fire


async def test_a_hook_that_leaves_a_child_holding_stdout_answers_at_its_exit(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "left.pid"
    answer = json.dumps({"decision": "deny", "reason": "not today"})
    command = f"sleep 30 & echo $! > {pid_file}; cat > /dev/null; echo '{answer}'"
    runner = HookRunner(
        {"BeforeTool": [{"hooks": [{"type": "command", "command": command}]}]},
        project_dir=tmp_path,
        cwd=tmp_path,
        session_id="s1",
    )
    started = time.monotonic()
    try:
        verdict = await fire(runner, "BeforeTool", {"tool_name": "write_file"}, "write_file")
    finally:
        elapsed = time.monotonic() - started
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert elapsed < 15  # the hook exits at once; its `sleep 30` holds the pipe 30 s
    assert verdict.blocked and verdict.reason == "not today"
