"""The warm server's few messages (standard library only).

Client → server, once: a 4-byte big-endian length, then a JSON object (`key`, `argv`,
`env`, `context`: the spawn's kernel context, `context.gather`), with the client's
stdin, stdout, stderr and working folder as SCM_RIGHTS on its first bytes. Server or
child → client: JSON lines: `{"ok": pid}` (sent by the child itself before it reads
stdin: only then does a spawn count as served), `{"refused": reason}` (the server, or a
child that cannot be faithful to the spawn's context, serves nobody for this request),
`{"exit": code}` (the child's exit code, from the child as it exits or from the server
that reaped it).
The client answers `ok` with `go\n`; a child that gets EOF instead (the spawn gave up
waiting and serves cold) exits without touching stdin.
"""

from __future__ import annotations

import array
import json
import socket
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_REQUEST = 4 << 20
"""A request larger than this (argv and environment) is refused."""
FDS = 4  # stdin, stdout, stderr, the working folder
_LENGTH = struct.Struct(">I")
GO = b"go\n"
"""The spawn's answer to the child's `ok`: only then does the child read stdin."""
GO_TIMEOUT_S = 60.0


class WireError(Exception):
    """A malformed or incomplete message."""


class NoRequest(WireError):
    """The connection closed before any byte (a readiness probe)."""


def send_request(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    body = json.dumps(request, separators=(",", ":")).encode("utf-8")
    data = _LENGTH.pack(len(body)) + body
    sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    if sent < len(data):
        sock.sendall(data[sent:])


def recv_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Read one request (blocking: the socket's timeout bounds it) and the fds it carried.

    The caller owns the returned fds, also when this raises (they are closed then)."""
    fds = array.array("i")
    data, ancdata, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(FDS * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % fds.itemsize
            fds.frombytes(payload[:usable])
    received = list(fds)
    try:
        if not data:
            raise NoRequest("closed before a request")
        request = _read_body(sock, data)
        if len(received) != FDS:
            raise WireError(f"expected {FDS} file descriptors, got {len(received)}")
    except Exception:
        _close_all(received)
        raise
    return request, received


def _read_body(sock: socket.socket, data: bytes) -> dict[str, Any]:
    while len(data) < _LENGTH.size:
        data += _recv_some(sock)
    (length,) = _LENGTH.unpack_from(data)
    if length > MAX_REQUEST:
        raise WireError(f"request of {length} bytes is too large")
    while len(data) < _LENGTH.size + length:
        data += _recv_some(sock)
    try:
        request = json.loads(data[_LENGTH.size : _LENGTH.size + length])
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"request is not JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise WireError("request is not an object")
    return request


def _recv_some(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise WireError("connection closed mid-request")
    return chunk


def _close_all(fds: list[int]) -> None:
    import os

    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass  # already closed: nothing left to release


def send_line(sock: socket.socket, message: dict[str, Any]) -> bool:
    """Send one JSON line; False when the peer has gone."""
    try:
        sock.sendall(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
    except OSError:
        return False
    return True


class LineReader:
    """JSON lines from the server or the child, one at a time (None at EOF)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def next(self) -> dict[str, Any] | None:
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(4096)
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a UNIX socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def peer_pid(sock: socket.socket) -> int:
    """The pid of the process that connected, as this process' pid namespace sees it
    (SO_PEERCRED; 0 when that process is in no namespace visible from here)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, _uid, _gid = struct.unpack("3i", creds)
    return int(pid)
