"""The processes a test process starts end with it, even when it is killed (a pytest
worker that dies of a crash or a SIGKILL runs no teardown).

- `install()` (called by `tests/conftest.py`) makes every child started from the main
  thread ask the kernel for SIGKILL when its parent dies (Linux `PR_SET_PDEATHSIG`,
  set between fork and exec). Children started from other threads are left alone: the
  kernel sends the signal when the *thread* that forked the child ends.
- `on_death(argv)` is for what a child leaves detached (PostgreSQL's `pg_ctl start`
  daemonizes the server): a watcher process, told nothing but an open pipe, runs
  `argv` once that pipe's writer (this process) is gone; `cancel_on_death` withdraws it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1

# Reads its commands, one JSON line each ({"add": id, "argv": [...]} / {"drop": id});
# on EOF (the test process is gone) runs the ones still registered.
_WATCHER = """
import json, subprocess, sys
commands = {}
for line in sys.stdin:
    message = json.loads(line)
    if "drop" in message:
        commands.pop(message["drop"], None)
    else:
        commands[message["add"]] = message["argv"]
for argv in commands.values():
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60, check=False)
"""

_original_init = subprocess.Popen.__init__
_watcher: subprocess.Popen[bytes] | None = None
_watcher_lock = threading.Lock()
_exempt = threading.local()


@functools.cache
def _prctl() -> Callable[..., int]:
    return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]


def _die_with(parent: int, chained: Callable[[], object] | None) -> Callable[[], None]:
    prctl = _prctl()  # resolved before the fork: the child only calls it

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the prctl: end now
            os.kill(os.getpid(), signal.SIGKILL)
        if chained is not None:
            chained()

    return in_child


def _init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    on_main = threading.current_thread() is threading.main_thread()
    positional_preexec = len(args) >= 7
    if on_main and not getattr(_exempt, "on", False) and not positional_preexec:
        kwargs["preexec_fn"] = _die_with(os.getpid(), kwargs.get("preexec_fn"))
    _original_init(self, *args, **kwargs)


def install() -> None:
    """Children started from this process' main thread from now on die with it (Linux)."""
    if sys.platform == "linux" and subprocess.Popen.__init__ is _original_init:
        subprocess.Popen.__init__ = _init  # type: ignore[method-assign]


def _send(message: dict[str, Any]) -> None:
    global _watcher
    with _watcher_lock:
        if _watcher is None or _watcher.poll() is not None:
            _exempt.on = True  # the watcher must outlive this process
            try:
                _watcher = subprocess.Popen(
                    [sys.executable, "-c", _WATCHER],
                    stdin=subprocess.PIPE,
                    start_new_session=True,  # a Ctrl-C of the run does not stop it first
                )
            finally:
                _exempt.on = False
            atexit.register(_end_watcher, _watcher)
        assert _watcher.stdin is not None
        _watcher.stdin.write(json.dumps(message).encode() + b"\n")
        _watcher.stdin.flush()


def _end_watcher(watcher: subprocess.Popen[bytes]) -> None:
    """At a normal exit: the watcher's end of input now (it runs what is left, usually
    nothing) and its exit waited for briefly, so no process or pipe is left unaccounted."""
    with contextlib.suppress(OSError):
        assert watcher.stdin is not None
        watcher.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        watcher.wait(timeout=10)


def on_death(key: str, argv: Sequence[str]) -> None:
    """Run `argv` when this process has ended, however it ended, unless
    `cancel_on_death(key)` is called first."""
    _send({"add": key, "argv": list(argv)})


def cancel_on_death(key: str) -> None:
    _send({"drop": key})
