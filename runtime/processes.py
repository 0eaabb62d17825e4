"""A registry of the process groups the engine started, so none outlives the agent.

Every local command (and stdio MCP server) runs in its own process group
(`start_new_session=True`) and is registered here; `kill_all()` at shutdown kills
whatever is still running.

A shutdown is not always orderly: Zed kills its agent with SIGKILL, which no
handler sees, and the command groups are in sessions of their own, so the kill
does not reach them. A watchdog therefore holds the registry too: a tiny Python
process in its own session, started with the first group, fed `+pgid` / `-pgid`
lines through a pipe. When the pipe closes, because the agent exited in
whatever way, it kills every group still registered and exits.
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


def _tell_watchdog(line: str) -> None:
    """Send one registry change to the watchdog (started on first use); under `_lock`."""
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
            return
        for pgid in _groups:
            _write(_watchdog, f"+{pgid}\n")
    _write(_watchdog, line)


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
