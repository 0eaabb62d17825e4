"""`adk-acp warm [status|stop]`: see or stop this user's warm servers (standard library only).

`status` prints the folder and, for each live server in it, its pid, whether it serves
this installation, its served children and its log; `stop` sends each a SIGTERM and
waits for it to go (its children, the agents of running spawns, are not touched).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TextIO

from acp_server.warm import place

USAGE = "usage: adk-acp warm [status|stop]"
STOP_WAIT_S = 10.0


def main(argv: list[str]) -> int:
    action = argv[0] if argv else "status"
    if action in ("-h", "--help"):
        _say(USAGE)
        _say(__doc__.split("\n\n", 1)[1].strip())
        return 0
    if action not in ("status", "stop") or len(argv) > 1:
        _say(USAGE, sys.stderr)
        return 2
    try:
        folder = place.folder(os.environ)
    except place.PlaceError as exc:
        _say(f"no warm server folder: {exc}", sys.stderr)
        return 1
    servers = place.servers(folder)
    if action == "stop":
        return _stop(servers)
    this = place.install_key()
    _say(f"folder: {folder}")
    if not servers:
        _say("no warm server runs")
    for key, pid in servers.items():
        which = "this installation" if key == this else "another installation"
        children = len(_children(pid))
        _say(f"server {pid}: {which} (key {key}), {children} served agent(s)")
        _say(f"  log: {os.path.join(folder, key + '.log')}")
    return 0


def _stop(servers: dict[str, int]) -> int:
    for pid in servers.values():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # gone meanwhile
    deadline = time.monotonic() + STOP_WAIT_S
    left = set(servers.values())
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {pid for pid in left if _alive(pid)}
    for pid in servers.values():
        _say(f"server {pid}: {'still running' if pid in left else 'stopped'}")
    return 1 if left else 0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _say(line: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(line + "\n")
