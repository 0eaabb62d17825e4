"""The warm server: a zygote that forks one ready agent per spawn.

`python -P -m acp_server.warm.server FOLDER` (started detached by `client.start_server`):
takes `<key>.lock` (or exits: another server has it), imports the serving path and runs
ADK's first scripted turn (`runtime.warmup`) with no credentials in its environment,
checks that no thread is left, then listens on `<key>.sock` (0600). Each connection:
the peer must be this uid (SO_PEERCRED) and this installation's key, else it is refused
and served by nobody; otherwise the server forks and the child becomes that spawn's
agent (`child.become`). The loop is single-threaded (`selectors`, SIGCHLD through a
wake-up pipe): the server reaps children and tells a client when its child died without
a word (killed by a signal), and exits after `ADK_ACP_WARM_IDLE_S` with no child.
"""

from __future__ import annotations

import atexit
import fcntl
import gc
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from typing import Any

from acp_server.warm import place, wire

logger = logging.getLogger("acp_server.warm.server")  # also when run as __main__

HANDSHAKE_TIMEOUT_S = 5.0
STALE_CHECK_S = 60.0
"""With no child, how often the server checks that its installation is still the same."""
SOCKET_CHECK_S = 1.0
"""How often the server checks that its socket is still there and its own."""
LOCK_TRIES_S = 0.5
"""How long a new server retries the lock (a spawn checking it holds it for an instant)."""


def warm_zygote() -> None:
    """Everything a child needs imported and run once, in this (single) thread."""
    import acp_server.early  # noqa: F401 - the early session/new path
    import acp_server.serve  # noqa: F401 - pygls, the handlers, the session layer
    from runtime.adk.compat import use_httpx_for_genai
    from runtime.warmup import warm_up

    use_httpx_for_genai()
    warm_up()  # imports, one scripted turn, gc.freeze(); no credentials here
    from acp_server.warm.rehearsal import rehearse

    rehearse()
    import acp_server.warm.child  # noqa: F401 - what each fork runs (context, kernel, ctypes)

    gc.collect()
    gc.freeze()  # what the rehearsal left, out of the collector's sight as well


def stray_threads() -> list[str]:
    """Threads alive besides this one (a fork must not copy a lock some thread holds)."""
    names = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    try:
        tasks = len(os.listdir("/proc/self/task"))
    except OSError:
        tasks = 1
    if tasks > 1 + len(names):
        names.append(f"{tasks - 1 - len(names)} native thread(s)")
    return names


class Server:
    """The accept-and-fork loop over one listening socket."""

    def __init__(
        self, listener: socket.socket, path: str, key: str, idle_s: float, lock_fd: int
    ) -> None:
        self.listener = listener
        self.path = path
        st = os.stat(path)
        self.inode = (st.st_dev, st.st_ino)
        self.idle_since = time.monotonic()
        """When the last child exited (or the server started): the idle clock's start."""
        self.key = key
        self.idle_s = idle_s
        self.lock_fd = lock_fd
        self.children: dict[int, socket.socket] = {}
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "reap")

    def run(self) -> None:
        """Serve until idle for `idle_s` after the last child's exit; exit at once when
        the socket is removed or replaced; with no child, also when the installation
        changed."""
        self.idle_since = time.monotonic()
        next_stale = self.idle_since + STALE_CHECK_S
        while True:
            timeout = SOCKET_CHECK_S
            if not self.children:
                left = self.idle_since + self.idle_s - time.monotonic()
                timeout = max(0.0, min(left, timeout))
            for ready, _ in self.selector.select(timeout):
                if ready.data == "accept":
                    self._accept()
                else:
                    self._reap()
            now = time.monotonic()
            if not self.socket_is_ours():
                logger.info("the socket was removed or replaced: exiting")
                return
            if self.children:
                continue
            if now - self.idle_since >= self.idle_s:
                logger.info("no child for %.0f s: exiting", self.idle_s)
                return
            if now >= next_stale:
                next_stale = now + STALE_CHECK_S
                if place.install_key() != self.key:
                    logger.info("the installation has changed: exiting")
                    return

    def socket_is_ours(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.inode

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        conn.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            request = read_request(conn, self.key)
        except wire.NoRequest:
            conn.close()  # a probe (`place.ready`): connected, sent nothing
            return
        except (wire.WireError, OSError) as exc:
            logger.warning("refused a spawn: %s", exc)
            wire.send_line(conn, {"refused": str(exc)})
            conn.close()
            return
        argv, env, fds, spawn_context = request
        try:
            pid = os.fork()
        except OSError as exc:
            wire.send_line(conn, {"refused": f"fork failed: {exc}"})
            conn.close()
            _close(fds)
            return
        if pid == 0:
            from acp_server.warm.child import become

            self._leave()
            become(conn, fds, argv, env, spawn_context)
        _close(fds)
        self.children[pid] = conn
        logger.info("child %d serves a spawn (%d live)", pid, len(self.children))

    def _leave(self) -> None:
        """In a forked child: close what is the server's (its socket, pipe, lock and the
        connections of the other children), so only the server holds them."""
        signal.set_wakeup_fd(-1)
        self.selector.close()
        self.listener.close()
        for other in self.children.values():
            other.close()
        for fd in (self.wake_r, self.wake_w, self.lock_fd):
            os.close(fd)

    def _reap(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass  # drained
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self.idle_since = time.monotonic()
            code = os.waitstatus_to_exitcode(status)
            logger.info("child %d exited (%d); %d live", pid, code, len(self.children))
            if conn is not None:
                wire.send_line(conn, {"exit": 128 - code if code < 0 else code})
                conn.close()


def read_request(
    conn: socket.socket, key: str
) -> tuple[list[str], dict[str, str], list[int], dict[str, Any]]:
    """A spawn's argv, environment, descriptors and kernel context (`context.gather`; the
    child takes it or refuses the spawn); WireError when it is not served: not
    this uid (SO_PEERCRED, checked before anything is read), another installation, or a
    malformed request."""
    uid = wire.peer_uid(conn)
    if uid != os.getuid():
        raise wire.WireError(f"a process of uid {uid} is not served by uid {os.getuid()}")
    request, fds = wire.recv_request(conn)
    argv, env = request.get("argv"), request.get("env")
    problem = ""
    if request.get("key") != key:
        problem = f"installation {request.get('key')!r} is not this server's {key!r}"
    elif not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        problem = "argv is not a list of strings"
    elif not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        problem = "env is not an object of strings"
    if problem:
        _close(fds)
        raise wire.WireError(problem)
    assert isinstance(argv, list) and isinstance(env, dict)
    spawn_context = request.get("context")
    return argv, env, fds, spawn_context if isinstance(spawn_context, dict) else {}


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _listen(path: str) -> socket.socket:
    try:
        os.unlink(path)  # a dead server's socket: the lock says none is alive
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def _take_lock(folder: str, key: str) -> int | None:
    """The lock, with this pid in it (emptied by `_drop_lock`); None when another server
    holds it."""
    fd = os.open(place.lock_path(folder, key), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + LOCK_TRIES_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _drop_lock(fd: int) -> None:
    """Empty the lock (no pid of a dead process left in it), then release it."""
    os.ftruncate(fd, 0)
    os.close(fd)


def _log_to(path: str) -> None:
    """This server's stdout and stderr: its log, emptied (it holds the lock)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _stop(*_: Any) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    detach = args[:1] == ["--detach"]
    if detach:  # started by a spawn: detach from it (its child exits at once)
        args = args[1:]
        if os.fork():
            os._exit(0)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("acp_server").setLevel(logging.INFO)
    folder = place.folder(os.environ) if not args else args[0]
    key = place.install_key()
    lock_fd = _take_lock(folder, key)
    if lock_fd is None:
        logger.info("another server holds %s", place.lock_path(folder, key))
        return 0
    atexit.register(_drop_lock, lock_fd)  # the server's exit only: children `os._exit`
    if detach:
        _log_to(os.path.join(folder, f"{key}.log"))
    swept = place.sweep(folder, key)
    if swept:
        logger.info("removed what servers of other installations left: %s", swept)
    signal.signal(signal.SIGTERM, _stop)
    started = time.monotonic()
    warm_zygote()
    stray = stray_threads()
    if stray:
        logger.error("threads alive after the warm-up (%s): a fork is not safe; exiting", stray)
        return 1
    path = place.socket_path(folder, key)
    listener = _listen(path)
    server = Server(listener, path, key, place.idle_s(os.environ), lock_fd)
    logger.info("ready in %.2f s: %s", time.monotonic() - started, path)
    try:
        server.run()
    finally:
        if server.socket_is_ours():  # not a newer server's socket
            try:
                os.unlink(path)
            except OSError:
                pass  # gone already
    return 0


if __name__ == "__main__":
    sys.exit(main())
