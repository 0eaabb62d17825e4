"""runtime/processes.py: a command behind a gate runs only once its group is registered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from runtime import processes
from runtime.processes import GATE_LINE, Gate, gated


def _start(gate: Gate, command: list[str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(gated(command), stdin=gate.stdin, start_new_session=True)
    gate.started()
    return process


def test_a_gate_never_opened_means_the_command_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    gate = Gate()
    process = _start(gate, ["/bin/sh", "-c", f"touch {marker}"])
    gate.close()  # as a killed agent's pipe closes
    assert process.wait(30) == 125
    assert not marker.exists()


def test_an_opened_gate_registers_the_group_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    gate = Gate()
    process = _start(gate, ["/bin/sh", "-c", f"cat > {out}; echo $$ >> {out}"])
    try:
        gate.open(process.pid)
        assert process.pid in processes._groups
        assert process.wait(30) == 0
        # same pid (exec), and stdin is /dev/null once through the gate
        assert out.read_text() == f"{process.pid}\n"
    finally:
        processes.unregister_group(process.pid)


def test_keep_stdin_hands_the_rest_of_the_pipe_to_the_command(tmp_path: Path) -> None:
    process = subprocess.Popen(
        gated(["/bin/cat"], keep_stdin=True), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    out, _ = process.communicate(GATE_LINE + b'{"hook": "data"}', timeout=30)
    assert out == b'{"hook": "data"}'


_STARTER = """
import sys, time
from runtime.processes import Gate, gated
import subprocess
gate = Gate()
command = gated(["/bin/sh", "-c", sys.argv[1]])
p = subprocess.Popen(command, stdin=gate.stdin, start_new_session=True)
gate.started()
print(p.pid, flush=True)
time.sleep(600)  # killed here: between the command's start and its registration
"""


def test_an_agent_killed_before_registering_leaves_nothing_running(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    starter = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_STARTER), f"touch {marker}; sleep 300"],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[3],
    )
    assert starter.stdout is not None
    with starter.stdout:
        command = int(starter.stdout.readline())
    starter.send_signal(signal.SIGKILL)
    starter.wait(30)
    deadline = time.monotonic() + 30
    while _alive(command) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(command) and not marker.exists()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_watchdog_starts_before_any_command() -> None:
    processes.start_watchdog()
    watchdog = processes._watchdog
    assert watchdog is not None and watchdog.poll() is None
    assert os.getsid(watchdog.pid) == watchdog.pid  # out of the agent's group and session
