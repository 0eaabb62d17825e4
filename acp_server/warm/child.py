"""A forked child of the warm server becomes one spawn's agent.

It leaves the server (its own session; the server's sockets, pipe and lock closed;
signals as a fresh interpreter has them), takes the spawn's stdin, stdout, stderr and
working folder, replaces its whole environment with the spawn's (credentials are that
spawn's own, never the zygote's or another spawn's) and runs `acp_server.cli.main`
with the spawn's argv. Its first word to the client (`{"ok": pid}`) comes before it
reads stdin; its exit code goes to the client as it exits. A thread watches the
client's end of the connection: when the client goes (the editor killed its process
group), the child kills its commands and exits at once, as a killed cold agent would.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from typing import Any, NoReturn

from acp_server.warm import client, context, kernel, wire

logger = logging.getLogger(__name__)


def become(
    conn: socket.socket,
    fds: list[int],
    argv: list[str],
    env: dict[str, str],
    spawn_context: dict[str, Any],
) -> NoReturn:
    """Run the spawn's agent in this forked process; never returns."""
    code = 1
    try:
        _leave_server()
        taken = _take_context(conn, spawn_context, env)
        _take_spawn(fds, env, argv)
        context.take_env()
        conn.settimeout(None)
        client.how_served = f"warm: served by child {os.getpid()} of the warm server {os.getppid()}"
        if taken:
            client.how_served += f"; took the spawn's {', '.join(taken)}"
        client.spawn_context = spawn_context
        if not (wire.send_line(conn, {"ok": os.getpid()}) and _go(conn)):
            os._exit(1)  # the spawn has gone (or served itself cold): stdin untouched
        threading.Thread(
            target=_watch_client, args=(conn,), name="warm-client", daemon=True
        ).start()
        from acp_server import cli

        cli.exit_hooks.append(lambda status: _report_exit(conn, status))
        code = cli.main(argv, warm=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child must report and exit, whatever happened
        logger.exception("the warm child failed")
    _report_exit(conn, code)
    os._exit(code)


def _take_context(
    conn: socket.socket, spawn_context: dict[str, Any], env: dict[str, str]
) -> list[str]:
    """The spawn's kernel context taken (what differed), or the spawn refused: it serves
    itself cold, and this child exits without touching its descriptors."""
    try:
        checked = _confirm(conn, spawn_context)
        taken = context.take(checked, env)
    except context.Unfaithful as exc:
        logger.info("child %d serves no spawn, which serves itself cold: %s", os.getpid(), exc)
        wire.send_line(conn, {"refused": str(exc)})
        os._exit(1)
    taken += [name for name in context.ADOPTED_ENV if env.get(name) != os.environ.get(name)]
    if taken:  # still the server's log
        logger.info("child %d took the spawn's %s", os.getpid(), ", ".join(taken))
    return taken


def _confirm(conn: socket.socket, spawn_context: dict[str, Any]) -> dict[str, Any]:
    """`context.confirm` of the process that connected, still alive once read (so its
    pid named it, not a process that took the pid over)."""
    pid = wire.peer_pid(conn)
    try:
        pidfd = kernel.peer_pidfd(conn, pid)
    except OSError as exc:
        raise context.Unfaithful(f"the spawn's process cannot be followed: {exc}") from exc
    try:
        checked = context.confirm(spawn_context, pid)
        if not kernel.alive(pidfd):
            raise context.Unfaithful("the spawn's process has gone")
    finally:
        os.close(pidfd)
    return checked


def _leave_server() -> None:
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()


def _take_spawn(fds: list[int], env: dict[str, str], argv: list[str]) -> None:
    stdin, stdout, stderr, cwd = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
    os.fchdir(cwd)  # the spawn's working folder: this process starts serving here
    for fd in fds:
        os.close(fd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process' own
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(  # noqa: SIM115
        2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False
    )
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["adk-acp", *argv]
    for handler in logging.getLogger().handlers:  # the zygote's log: now the spawn's stderr
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sys.stderr)


def _go(conn: socket.socket) -> bool:
    """The spawn's answer to our `ok`: `go`, or EOF when it gave up waiting for us."""
    conn.settimeout(wire.GO_TIMEOUT_S)
    data = b""
    try:
        while len(data) < len(wire.GO) and (chunk := conn.recv(len(wire.GO) - len(data))):
            data += chunk
    except OSError:
        return False
    conn.settimeout(None)
    return data == wire.GO


def _watch_client(conn: socket.socket) -> None:
    """Block on the client's end; at EOF (the client was killed) end this agent now."""
    while True:
        try:
            if not conn.recv(4096):
                break
        except OSError:
            break
    logger.info("the spawn that started this agent has gone; exiting")
    from runtime.processes import kill_all

    kill_all()
    os._exit(0)


def _report_exit(conn: socket.socket, code: int) -> None:
    wire.send_line(conn, {"exit": code})
