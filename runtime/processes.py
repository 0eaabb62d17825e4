"""A registry of the process groups the engine started, so none outlives the agent.

Every local command (and stdio MCP server) runs in its own process group
(`start_new_session=True`) and is registered here; `kill_all()` at shutdown kills
whatever is still running.

A shutdown is not always orderly: Zed kills its agent with SIGKILL, which no
handler sees, and the command groups are in sessions of their own, so the kill
does not reach them. A watchdog therefore holds the registry too: a tiny Python
process in its own session, started once the agent is up (`start_watchdog`, before
any command; else by the first group), fed `+pgid` / `-pgid` lines through a pipe.
When the pipe closes, because the agent exited in whatever way, it kills every group
still registered and exits.

No window is left between a command's start and its registration: a command starts
behind a gate (`gated`: `/bin/sh` reads one line from its stdin, a pipe, before it
execs the command), which opens only once the group is registered with the watchdog.
An agent killed before that closes the pipe, and the command exits without running.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

logger = logging.getLogger(__name__)

_groups: set[int] = set()
_lock = threading.Lock()
_watchdog: subprocess.Popen[bytes] | None = None

_WATCHDOG = """
import os, signal, sys, time
groups = set()
for line in sys.stdin.buffer:
    sign, number = line[:1], line[1:].strip()
    if number.isdigit():
        (groups.add if sign == b"+" else groups.discard)(int(number))
for sig in (signal.SIGTERM, signal.SIGKILL):
    alive = False
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
            alive = True
        except OSError:
            pass
    if not alive:
        break
    time.sleep(0.3)
"""


def start_watchdog() -> None:
    """Start the watchdog now (the agent's start, off its first answer's path), so the
    first command does not wait for it."""
    with _lock:
        _ensure_watchdog()


def _tell_watchdog(line: str) -> None:
    """Send one registry change to the watchdog (started if not yet); under `_lock`."""
    if _ensure_watchdog():
        assert _watchdog is not None
        _write(_watchdog, line)


def _ensure_watchdog() -> bool:
    """A live watchdog that knows every registered group; False when none can start."""
    global _watchdog
    if _watchdog is None or _watchdog.poll() is not None:
        try:
            _watchdog = subprocess.Popen(
                [sys.executable, "-S", "-c", _WATCHDOG],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # out of the agent's group, which an editor may kill
                close_fds=True,
            )
        except OSError as exc:
            logger.warning("no process watchdog (commands may outlive a killed agent): %s", exc)
            return False
        for pgid in _groups:
            _write(_watchdog, f"+{pgid}\n")
    return True


def _write(watchdog: subprocess.Popen[bytes], line: str) -> None:
    if watchdog.stdin is None:
        return
    try:
        watchdog.stdin.write(line.encode())
        watchdog.stdin.flush()
    except (BrokenPipeError, ValueError, OSError) as exc:
        logger.debug("process watchdog gone: %s", exc)


def register_group(pgid: int) -> None:
    with _lock:
        _groups.add(pgid)
        _tell_watchdog(f"+{pgid}\n")


def unregister_group(pgid: int) -> None:
    with _lock:
        _groups.discard(pgid)
        if _watchdog is not None:
            _write(_watchdog, f"-{pgid}\n")


GATE_SHELL = "/bin/sh"
_GATE = 'read -r _ || exit 125; exec "$@"'
GATE_LINE = b"go\n"
"""What opens a gate: the one line its shell reads before it execs the command."""


def gated(command: list[str], *, keep_stdin: bool = False) -> list[str]:
    """`command` behind a gate on its standard input: `/bin/sh` reads one line there
    (`GATE_LINE`), then execs the command (same pid: it stays its group's leader), with
    stdin `/dev/null` unless `keep_stdin` (the rest of the pipe is then the command's).
    If the pipe closes first (the agent died before registering the group), the shell
    exits (125) and the command never runs."""
    script = _GATE if keep_stdin else _GATE + " </dev/null"
    return [GATE_SHELL, "-c", script, GATE_SHELL, *command]


class Gate:
    """Holds a command back until its process group is registered (no window in which
    a killed agent leaves it running): the pipe for `gated`'s standard input.

    Start `gated(command)` with `stdin=gate.stdin`, then call `started()` (closes our
    copy of the read end) and `open(pgid)`; `close()` in any case."""

    def __init__(self) -> None:
        self.stdin, self._write = os.pipe()

    def started(self) -> None:
        """The command has been started: only it holds the read end now."""
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1

    def open(self, pgid: int) -> None:
        """Register `pgid` (the watchdog knows it before the command runs), then let the
        command run."""
        register_group(pgid)
        try:
            os.write(self._write, GATE_LINE)
        except OSError as exc:  # the command died before reading: nothing to let go
            logger.debug("gate of group %d: %s", pgid, exc)
        self.close()

    def close(self) -> None:
        """Close what is left (a command never let through exits without running)."""
        self.started()
        if self._write >= 0:
            os.close(self._write)
            self._write = -1


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        logger.warning("cannot signal process group %d: %s", pgid, exc)


def kill_all() -> None:
    with _lock:
        groups = list(_groups)
        _groups.clear()
    for pgid in groups:
        kill_group(pgid)
