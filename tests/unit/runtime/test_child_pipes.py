"""A child's answer is read until it exits (plus a grace), not until every process it
left behind closes the pipes: real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from runtime.child_pipes import run_child

# A process left behind keeps the pipes open this long; reading to EOF would wait it.
LEFT_BEHIND_S = 30
# Separates "returned at the child's exit" from "waited for what it left behind",
# with room for a busy machine.
BOUND_S = LEFT_BEHIND_S / 2


def _stop(pid_file: Path) -> None:
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def test_a_child_that_leaves_a_process_holding_its_pipes_is_answered_at_its_exit(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "left.pid"
    script = f"sleep {LEFT_BEHIND_S} & echo $! > {pid_file}; read l; echo got $l; echo err >&2"
    started = time.monotonic()
    try:
        done = await run_child(script, cwd=tmp_path, stdin=b"hello\n", own_group=True)
    finally:
        elapsed = time.monotonic() - started
        _stop(pid_file)
    assert elapsed < BOUND_S
    assert (done.returncode, done.stdout, done.stderr) == (0, b"got hello\n", b"err\n")


async def test_all_output_of_a_child_is_read_and_its_exit_status_kept(tmp_path: Path) -> None:
    big = 1_000_000  # more than a pipe holds: read while it runs
    done = await run_child(
        ("python3", "-c", f"import sys; sys.stdout.write('x' * {big}); sys.exit(3)"),
        cwd=tmp_path,
    )
    assert (done.returncode, len(done.stdout), done.stderr) == (3, big, b"")
    killed = await run_child("kill -TERM $$", cwd=tmp_path)
    assert killed.returncode == -signal.SIGTERM


async def test_a_timeout_kills_the_childs_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "left.pid"
    with pytest.raises(TimeoutError):
        await run_child(
            f"sleep {LEFT_BEHIND_S} & echo $! > {pid_file}; sleep {LEFT_BEHIND_S}",
            cwd=tmp_path,
            timeout_s=0.5,
            own_group=True,
        )
    pid = int(pid_file.read_text())
    for _ in range(200):  # the group got SIGKILL: gone, or a zombie of init's
        if not _alive(pid):
            break
        await asyncio.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_a_command_that_cannot_start_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await run_child(("/no/such/binary",), cwd=tmp_path)
