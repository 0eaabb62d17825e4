"""Process-group helpers for local commands: who is still alive, and stopping them all.

A command started with `start_new_session=True` leads its own process group,
and its children (`sleep 30 &`) stay in it. Zombies do not count as alive: an
orphan's zombie waits for whoever reaps it (PID 1 in a container may never),
yet it runs nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

logger = logging.getLogger(__name__)

_PROC = "/proc"
_POLL_S = 0.005


def _proc_stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a pid from /proc, None when it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    if len(fields) < 3:
        return None
    return fields[0], int(fields[2])


def live_group_members(pgid: int) -> list[int]:
    """Pids of the group's processes that are not zombies (Linux /proc; else [] or [pgid])."""
    if not os.path.isdir(_PROC):
        return [pgid] if _group_signalable(pgid) else []
    members: list[int] = []
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        info = _proc_stat(name)
        if info is not None and info[1] == pgid and info[0] not in ("Z", "X"):
            members.append(int(name))
    return sorted(members)


def _group_signalable(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process of the group is left."""
    if not _group_signalable(pgid):
        return False
    return bool(live_group_members(pgid))


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError as exc:
        logger.warning("cannot signal process group %d: %s", pgid, exc)
        return False
    return True


async def terminate_group(pgid: int, grace_s: float) -> None:
    """SIGTERM the group; SIGKILL what is still alive after `grace_s`.

    Returns as soon as no live member is left. A second cancel during the grace
    period skips the rest of it: the group is killed at once and the cancel goes on.
    """
    if not _signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    try:
        while loop.time() < deadline:
            if not group_alive(pgid):
                return
            await asyncio.sleep(_POLL_S)
    except asyncio.CancelledError:
        _signal_group(pgid, signal.SIGKILL)
        raise
    logger.info("process group %d still alive %.1fs after SIGTERM; sending SIGKILL", pgid, grace_s)
    _signal_group(pgid, signal.SIGKILL)
