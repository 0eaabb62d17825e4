"""The spawn's side of the warm server (standard library only: it runs before any import).

`serve_warm(argv)` connects to this installation's server, checks it runs as this user,
hands over stdin, stdout, stderr, the working folder, argv, the environment and what the
kernel attached to it (`context.gather`: the child takes it or refuses), and waits:
signals are forwarded to the child, the child's exit code becomes this process' own.
It returns None when this spawn must serve cold (no server: one is started for the
next spawns once this one has answered its first prompt; refused; the folder not
safe), with `how_served` saying why.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from acp_server.warm import context, place, wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

how_served = ""
"""One line for the log: how this spawn is served (warm child or cold, and why)."""
spawn_context: dict[str, object] = {}
"""What the kernel attached to this spawn (`context.gather`), for a DEBUG log."""

REPLY_TIMEOUT_S = 30.0
"""How long a spawn waits for the child's first word before it serves cold instead."""
FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGWINCH,
)
_SERVER_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "TZ", "PYTHONPATH", "VIRTUAL_ENV", place.IDLE_ENV)
"""All the server's own environment keeps: no credential ever reaches the zygote."""


def serve_warm(argv: list[str]) -> int | None:
    """Serve this spawn through the warm server: the child's exit code, or None (cold;
    also when opted out: `--no-warm`, `ADK_ACP_NO_WARM`)."""
    global how_served
    if not place.wanted(argv, os.environ):
        return None
    try:
        folder = place.folder(os.environ)
    except place.PlaceError as exc:
        how_served = f"cold: no warm server ({exc})"
        return None
    key = place.install_key()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(place.socket_path(folder, key))
    except OSError:
        sock.close()
        global _pending
        _pending = (folder, key)  # started once this spawn has answered and is idle
        how_served = "cold: no warm server; one starts after this spawn's first answer"
        return None
    try:
        return _served(sock, key, argv)
    finally:
        sock.close()


def _served(sock: socket.socket, key: str, argv: list[str]) -> int | None:
    global how_served, spawn_context
    if wire.peer_uid(sock) != os.getuid():
        how_served = "cold: the warm server's socket belongs to another user"
        return None
    try:  # O_PATH: a folder we may enter but not list is handed over too
        cwd = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
    except OSError as exc:
        how_served = f"cold: the working folder cannot be handed over ({exc})"
        return None
    spawn_context = context.gather()  # the child takes it, or refuses: served cold
    request = {"key": key, "argv": argv, "env": dict(os.environ), "context": spawn_context}
    sock.settimeout(REPLY_TIMEOUT_S)
    try:
        wire.send_request(sock, request, [0, 1, 2, cwd])
        reader = wire.LineReader(sock)
        first = reader.next()
    except OSError as exc:
        how_served = f"cold: the warm server did not answer ({exc})"
        return None
    finally:
        os.close(cwd)
    child = first.get("ok") if first else None
    if not isinstance(child, int):
        reason = (first or {}).get("refused") or f"no child started: {first or 'closed'}"
        how_served = f"cold: the warm server refused ({reason})"
        return None
    try:
        sock.sendall(wire.GO)
    except OSError as exc:
        how_served = f"cold: the warm child went away ({exc})"
        return None
    sock.settimeout(None)
    _forward_signals(child)
    while True:
        message = reader.next()
        if message is None:
            return 1  # child and server both gone without a word: a crash
        code = message.get("exit")
        if isinstance(code, int):
            return code


def _forward_signals(child: int) -> None:
    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass  # the child has exited; its code is on the way

    for signum in FORWARDED:
        signal.signal(signum, forward)


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in env.items()
        if k in _SERVER_ENV or k.startswith("LC_") or context.server_env_value(k, v)
    }


_pending: tuple[str, str] | None = None
"""(folder, key) of the server this cold spawn starts after its first answer."""


def pending() -> tuple[str, str] | None:
    """(folder, key) of the server this spawn will start, if any."""
    return _pending


def start_pending() -> None:
    """Start the server this cold spawn found missing, now that it has answered a prompt
    and is idle (`handlers/prompt.py`), or is exiting: its own first answer never shares
    the CPU with the server's warm-up. Once; nothing for a spawn that was served warm or
    opted out."""
    global _pending
    if _pending is not None:
        folder, key = _pending
        _pending = None
        start_server(folder, key)


def start_server(folder: str, key: str) -> bool:
    """Start this installation's server, detached, unless one holds the lock already.

    Safe with threads (no fork of this process: a `subprocess` starts the server,
    which detaches itself); returns once the server's first process is started."""
    import fcntl
    import subprocess
    import threading

    fd = os.open(place.lock_path(folder, key), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)  # no server: a pid left by a killed one goes
    except OSError:
        return False  # a server runs or is warming up
    finally:
        os.close(fd)  # released: the server takes it for itself
    argv = [sys.executable, "-P", "-m", "acp_server.warm.server", "--detach", folder]
    try:
        first = subprocess.Popen(  # its log: `<key>.log`, opened once it holds the lock
            argv,
            env=server_env(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # out of this spawn's group and session
        )
    except OSError:
        return False
    # It forks the server and exits at once: reaped here, so it leaves no zombie.
    threading.Thread(target=first.wait, name="warm-start", daemon=True).start()
    return True


def log_how_served() -> None:
    """Log `how_served` (called once logging is set up)."""
    if how_served:
        import logging

        logger = logging.getLogger("acp_server.warm")
        logger.info("%s", how_served)
        if spawn_context:
            logger.debug("the spawn's context: %s", context.describe(spawn_context))
