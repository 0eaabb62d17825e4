"""A pytest worker that dies (SIGKILL: no teardown runs) leaves nothing it started
running: its agents and `serve` instances die with it (`tests/worker_children.py`,
PR_SET_PDEATHSIG) and the detached PostgreSQL server is stopped by the watcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__).with_name("worker_death_scenario.py")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.cold]  # direct children


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has ended, waiting for its new parent


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout}s for {what}")
        time.sleep(0.1)


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_worker_leaves_no_agent_serve_or_postgresql_running(tmp_path: Path) -> None:
    report = tmp_path / "pids"
    worker = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SCENARIO)],
        cwd=ROOT,
        env={**os.environ, "WORKER_DEATH_REPORT": str(report)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait(lambda: report.exists() or worker.poll() is not None, 180, "the children started")
        assert report.exists(), worker.communicate()[0].decode(errors="replace")[-3000:]
        first, folder = report.read_text().splitlines()
        pids = [int(pid) for pid in first.split()]
        assert all(_running(pid) for pid in pids)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
        _wait(lambda: not any(_running(pid) for pid in pids), 60, f"{pids} to end")
        _wait(lambda: not Path(folder).exists(), 60, "the cluster's folder removed")
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()
