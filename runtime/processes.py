"""A registry of the process groups the engine started, so none outlives the agent.

Every local command runs in its own process group (`start_new_session=True`) and
is registered here; `kill_all()` at shutdown kills whatever is still running.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

logger = logging.getLogger(__name__)

_groups: set[int] = set()
_lock = threading.Lock()


def register_group(pgid: int) -> None:
    with _lock:
        _groups.add(pgid)


def unregister_group(pgid: int) -> None:
    with _lock:
        _groups.discard(pgid)


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
