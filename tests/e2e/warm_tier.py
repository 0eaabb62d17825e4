"""The e2e tier's agents are served by the warm server (acp_server/warm/), one per test process.

Every test process (a pytest-xdist worker, or a plain run) gets a private 0700 runtime
folder, given to its agents as `XDG_RUNTIME_DIR` while an e2e test runs; the first
spawn there serves cold and starts the zygote once it has answered its first prompt (or
as it exits; `ready_zygote` starts it at once), the later ones are forked from it. Workers never
share or stop each other's zygote. It is stopped at the end of the session, and, should
the test process be killed, by a watcher (`worker_children.on_death`: the zygote runs
detached, so it does not die with us). A test (or module) marked `cold` keeps
`ADK_ACP_NO_WARM=1`, as every test outside the e2e tier does (tests/conftest.py);
`ADK_ACP_E2E_COLD=1` keeps the whole tier cold (to compare).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from acp_server.warm import place
from tests import worker_children

COLD_MARK = "cold"
COLD_MARK_HELP = "cold: this e2e test's agents start cold (ADK_ACP_NO_WARM=1), not warm"
ALL_COLD_ENV = "ADK_ACP_E2E_COLD"
IDLE_S = "900"
"""The zygote's idle exit: a worker busy with other files for a while starts a new one."""

_KEYS = ("XDG_RUNTIME_DIR", place.NO_WARM_ENV, place.IDLE_ENV)
_runtime: Path | None = None

# Run by the watcher once the test process is gone: stop its zygotes, remove the folder.
_STOP = """
import os, shutil, signal, sys
runtime = sys.argv[1]
folder = os.path.join(runtime, "adk-acp")
for name in os.listdir(folder) if os.path.isdir(folder) else []:
    if name.endswith(".lock"):
        try:
            pid = int(open(os.path.join(folder, name)).read().strip() or 0)
            if pid and b"acp_server.warm.server" in open(f"/proc/{pid}/cmdline", "rb").read():
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass  # no server behind this lock
shutil.rmtree(runtime, ignore_errors=True)
"""


def runtime() -> Path:
    """This test process' private runtime folder (made on first use)."""
    global _runtime
    if _runtime is None:
        _runtime = Path(tempfile.mkdtemp(prefix="aw", dir="/tmp"))  # short: socket path ≤ 107
        worker_children.on_death(_watch_key(_runtime), [sys.executable, "-c", _STOP, str(_runtime)])
    return _runtime


def _watch_key(path: Path) -> str:
    return f"warm-tier {path}"


def environment(cold: bool) -> dict[str, str | None]:
    """What the agents of one e2e test get (None: removed)."""
    if cold or os.environ.get(ALL_COLD_ENV, "") not in ("", "0"):
        return {place.NO_WARM_ENV: "1"}
    return {"XDG_RUNTIME_DIR": str(runtime()), place.NO_WARM_ENV: None, place.IDLE_ENV: IDLE_S}


def apply(changes: dict[str, str | None]) -> dict[str, str | None]:
    """Change `os.environ`; what it was before, for `apply` again to restore."""
    before = {key: os.environ.get(key) for key in _KEYS if key in changes}
    for key, value in changes.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    return before


def ready_zygote(timeout_s: float = 240.0) -> None:
    """Start this test process' zygote if none runs (as a cold spawn does after its first
    answer) and wait until it serves: the next spawn is served warm."""
    from acp_server.warm import client

    assert os.environ.get("XDG_RUNTIME_DIR") == str(runtime()), "not a warm e2e test"
    folder, key = place.folder(os.environ), place.install_key()
    client.start_server(folder, key)
    deadline = time.monotonic() + timeout_s
    while not place.ready(folder, key):
        if time.monotonic() > deadline:
            raise AssertionError(f"no warm server in {folder} within {timeout_s} s")
        time.sleep(0.05)


def zygotes(path: Path) -> list[int]:
    """The pids of the live warm servers in runtime folder `path`."""
    folder = path / "adk-acp"
    if not folder.is_dir():
        return []
    keys = [name.removesuffix(".lock") for name in os.listdir(folder) if name.endswith(".lock")]
    return [pid for key in keys if (pid := place.server_pid(str(folder), key)) is not None]


def cpu_s(pid: int) -> float:
    """CPU seconds of `pid` and its reaped children (a zygote: the warm agents' too)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def stop(timeout_s: float = 30.0) -> float | None:
    """Stop this process' zygotes and remove its runtime folder (the session's end);
    the CPU seconds the zygotes and their agents used (None: no zygote ran)."""
    global _runtime
    if _runtime is None:
        return None
    pids = zygotes(_runtime)
    used = sum(cpu_s(pid) for pid in pids)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    while zygotes(_runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in zygotes(_runtime):
        os.kill(pid, signal.SIGKILL)
    worker_children.cancel_on_death(_watch_key(_runtime))
    shutil.rmtree(_runtime, ignore_errors=True)
    _runtime = None
    return used if pids else None
