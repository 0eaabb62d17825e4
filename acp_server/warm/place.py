"""Where the warm server lives and which installation it serves (standard library only).

The folder: `$XDG_RUNTIME_DIR/adk-acp` when that is a folder of ours, else
`/run/user/<uid>/adk-acp` when systemd made that folder, else `/tmp/adk-acp-<uid>`
(never `$TMPDIR`); created 0700 and refused (no warm server) unless it is ours with no
access for others. In it, per installation key: `<key>.sock` (the 0600 socket),
`<key>.lock` (flock'ed by the server for its life; it holds the server's pid while the
server runs, and is emptied as it exits) and `<key>.log`.
The key is the version, the interpreter and the stat of every installed source file:
a new version, another checkout or an edited install never reaches an old server.
"""

from __future__ import annotations

import os
import sys

from acp_server import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

NO_WARM_ENV = "ADK_ACP_NO_WARM"
"""Set (to anything but '', '0') to serve every spawn cold and start no server."""
NO_WARM_FLAG = "--no-warm"
IDLE_ENV = "ADK_ACP_WARM_IDLE_S"
"""Seconds the server waits with no child before it exits (default `IDLE_S`)."""
IDLE_S = 1800.0
_PACKAGES = ("acp_server", "runtime")


class PlaceError(Exception):
    """The warm server's folder cannot be used safely (not ours, open to others)."""


def wanted(argv: list[str], env: Mapping[str, str]) -> bool:
    """Whether this spawn may use (and start) a warm server: not opted out."""
    if env.get(NO_WARM_ENV, "") not in ("", "0"):
        return False
    options = argv[: argv.index("--")] if "--" in argv else argv
    return NO_WARM_FLAG not in options


def folder(env: Mapping[str, str]) -> str:
    """The per-user folder (created 0700 if missing); PlaceError if it is not safe.

    It depends on the user and `XDG_RUNTIME_DIR` only, never on `TMPDIR`: one server
    per user and installation, whatever temporary folder each spawn is given."""
    uid = os.getuid()
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and _private_dir(runtime, uid):
        path = os.path.join(runtime, "adk-acp")
    elif _private_dir(f"{RUN_USER}/{uid}", uid):
        path = f"{RUN_USER}/{uid}/adk-acp"
    else:
        path = os.path.join(FALLBACK_ROOT, f"adk-acp-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PlaceError(f"cannot create {path}: {exc}") from exc
    st = os.lstat(path)  # not followed: a symbolic link planted there is refused
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise PlaceError(f"{path} is not a private folder of uid {uid}")
    return path


RUN_USER = "/run/user"
"""systemd's per-user runtime folders (`/run/user/<uid>`), used when XDG_RUNTIME_DIR is
not set but the folder is there."""
FALLBACK_ROOT = "/tmp"
"""Without a runtime folder: `/tmp/adk-acp-<uid>` (not `$TMPDIR`, which may differ for
every spawn; /tmp's sticky bit keeps others from replacing our folder)."""


def _private_dir(path: str, uid: int) -> bool:
    """A folder of `uid` that nobody else may write into."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o022


def install_key() -> str:
    """16 hex digits naming this installation (version, interpreter, installed files)."""
    import hashlib

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parts = [__version__, os.path.realpath(sys.executable), sys.version, root]
    for package in _PACKAGES:
        parts += _file_stats(os.path.join(root, package))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _file_stats(top: str) -> list[str]:
    """`path mtime size` of every `.py` file under `top`, sorted."""
    found: list[str] = []
    stack = [top]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.endswith(".py"):
                st = entry.stat()
                found.append(f"{entry.path} {st.st_mtime_ns} {st.st_size}")
            elif name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    found.sort()
    return found


def socket_path(place: str, key: str) -> str:
    return os.path.join(place, f"{key}.sock")


def lock_path(place: str, key: str) -> str:
    return os.path.join(place, f"{key}.lock")


def server_pid(place: str, key: str) -> int | None:
    """The pid of this key's live server: the process that holds its lock now (None: no
    server). A pid left in the file by a killed server is never returned."""
    path = lock_path(place, key)
    try:
        st = os.stat(path)
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text.isdigit() or int(text) not in lock_holders(st.st_dev, st.st_ino):
        return None
    try:
        with open(f"/proc/{text}/cmdline", "rb") as f:
            alive = b"acp_server.warm.server" in f.read()
    except OSError:
        return None
    return int(text) if alive else None


def lock_holders(dev: int, ino: int) -> set[int]:
    """The pids holding a flock on the file (device, inode), from /proc/locks."""
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    holders = set()
    try:
        with open("/proc/locks", encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if "->" in fields:  # a waiter, not a holder
                    continue
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == want:
                    holders.add(int(fields[4]))
    except (OSError, ValueError):
        return set()
    return holders


def servers(place: str) -> dict[str, int]:
    """The live servers in this folder: installation key → pid."""
    try:
        names = os.listdir(place)
    except OSError:
        return {}
    keys = sorted(n.removesuffix(".lock") for n in names if n.endswith(".lock"))
    return {key: pid for key in keys if (pid := server_pid(place, key)) is not None}


def idle_s(env: Mapping[str, str]) -> float:
    try:
        return float(env.get(IDLE_ENV, "") or IDLE_S)
    except ValueError:
        return IDLE_S


def ready(folder: str, key: str) -> bool:
    """Whether a server of this key accepts connections now."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(socket_path(folder, key))
        except OSError:
            return False
    return True


def stop_server(folder: str, key: str) -> int | None:
    """SIGTERM this key's server (tests, benchmarks); its pid, or None if none ran."""
    import signal

    pid = server_pid(folder, key)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    return pid


SWEEP_AGE_S = 300.0


def sweep(folder: str, keep: str, min_age_s: float = SWEEP_AGE_S) -> list[str]:
    """Remove the files of other installations' servers that are gone (a socket, lock and
    log per key, left by upgrades and edits), older than `min_age_s`; the names removed."""
    import time

    now = time.time()
    removed = []
    for name in sorted(os.listdir(folder)):
        key, dot, suffix = name.partition(".")
        if not dot or key == keep or suffix not in ("sock", "lock", "log"):
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.lstat(path).st_mtime < min_age_s or server_pid(folder, key):
                continue
            os.unlink(path)
        except OSError:
            continue  # gone meanwhile
        removed.append(name)
    return removed
