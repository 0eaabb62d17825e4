"""The kernel calls a warm child makes to take its spawn's context (`context._adopt`).

What `os` and `resource` do not offer goes through libc (`ctypes`): capabilities
(`capset`, `prctl`), no_new_privs, the personality. Each raises OSError with the
kernel's errno when it refuses; the caller then serves the spawn cold.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import socket
import struct

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522
_LAST_CAP = 63


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    libc = _libc()
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _check(libc.prctl(option, arg2, arg3, 0, 0), f"prctl({option})")


_IOPRIO_CALLS = {"x86_64": (252, 251), "aarch64": (31, 30), "i686": (290, 289)}
"""ioprio_get and ioprio_set: glibc has no wrapper, so the system call numbers by machine."""
_IOPRIO_WHO_PROCESS = 1


def io_priority(pid: int) -> int | None:
    """The I/O priority of process `pid` (0: this one); None on a machine not in
    `_IOPRIO_CALLS` (not compared there)."""
    calls = _IOPRIO_CALLS.get(os.uname().machine)
    if calls is None:
        return None
    libc = _libc()
    result = int(libc.syscall(calls[0], _IOPRIO_WHO_PROCESS, pid))
    _check(result, "ioprio_get")
    return result


def set_io_priority(value: int) -> None:
    calls = _IOPRIO_CALLS[os.uname().machine]
    _check(_libc().syscall(calls[1], _IOPRIO_WHO_PROCESS, 0, value), "ioprio_set")


SO_PEERPIDFD = 77
"""A pidfd of the process that connected (Linux 6.5; not yet in Python's `socket`)."""


def peer_pidfd(sock: socket.socket, pid: int) -> int:
    """A pidfd of the process at the other end of `sock`: taken by the kernel as it
    connected (SO_PEERPIDFD), else opened now for `pid` (older kernels)."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD, 4)
        return int(struct.unpack("i", raw)[0])
    except OSError:
        return os.pidfd_open(pid)


def alive(pidfd: int) -> bool:
    """Whether the process of `pidfd` still runs (then its pid still names it)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return not poller.poll(0)


def set_no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_personality(persona: int) -> None:
    libc = _libc()
    libc.personality.argtypes = [ctypes.c_ulong]
    _check(libc.personality(persona), "personality")


def set_capabilities(inh: int, prm: int, eff: int, bnd: int, amb: int) -> None:
    """The spawn's five capability sets (this process' are a superset, but for `inh`):
    the bounding set dropped first (it needs CAP_SETPCAP), then the three per-thread
    sets, then the ambient set rebuilt. The process must be single-threaded."""
    own_bnd = _bounding()
    for cap in range(_LAST_CAP + 1):
        if own_bnd >> cap & 1 and not bnd >> cap & 1:
            _prctl(PR_CAPBSET_DROP, cap)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    for i in range(2):
        shift = 32 * i
        data[i].effective = eff >> shift & 0xFFFFFFFF
        data[i].permitted = prm >> shift & 0xFFFFFFFF
        data[i].inheritable = inh >> shift & 0xFFFFFFFF
    _check(_libc().capset(ctypes.byref(header), data), "capset")
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in range(_LAST_CAP + 1):
        if amb >> cap & 1:
            _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)


def _bounding() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("CapBnd:"):
                return int(line.split()[1], 16)
    return 0


def set_rlimit(name: str, limits: list[int]) -> None:
    """`limits`: soft and hard, -1 for unlimited (RLIM_INFINITY)."""
    soft, hard = (resource.RLIM_INFINITY if int(x) == -1 else int(x) for x in limits)
    resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))


def write_proc(name: str, value: str) -> None:
    with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
        f.write(value)


def set_signals(blocked: int, ignored: int) -> None:
    """The spawn's signal mask, and its ignored signals ignored (others ignored here
    return to their default; a signal this process handles keeps its handler)."""
    valid = signal.valid_signals()
    signal.pthread_sigmask(signal.SIG_SETMASK, {s for s in valid if blocked >> (s - 1) & 1})
    for signum in sorted(valid):
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        wanted = ignored >> (signum - 1) & 1
        try:
            current = signal.getsignal(signum)
        except ValueError:
            continue  # reserved by the C library
        if wanted and current != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_IGN)
        elif not wanted and current == signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


def join_cgroups(spawn: list[str], own: list[str]) -> None:
    """Move this process into each cgroup of `spawn` (lines of /proc/self/cgroup) that is
    not its own, through the hierarchy's mount (`cgroup.procs`)."""
    mine = {line.split(":", 2)[0]: line for line in own}
    for line in spawn:
        number, controllers, path = line.split(":", 2)
        if mine.get(number) == line:
            continue
        mount = _cgroup_mount(number == "0", controllers)
        if mount is None:
            raise OSError(f"no mount of the cgroup hierarchy {number}:{controllers}")
        folder, root = mount
        relative = os.path.relpath(path, root)
        if relative.startswith(".."):
            raise OSError(f"cgroup {path} is outside the mount of {root}")
        write_to = os.path.normpath(os.path.join(folder, relative, "cgroup.procs"))
        with open(write_to, "w", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")


def _cgroup_mount(unified: bool, controllers: str) -> tuple[str, str] | None:
    """(mount point, root within the hierarchy) of a cgroup hierarchy, from mountinfo."""
    wanted = set(controllers.split(",")) if controllers else set()
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields, _, tail = line.partition(" - ")
            parts, tail_parts = fields.split(), tail.split()
            if len(parts) < 5 or len(tail_parts) < 3:
                continue
            kind, options = tail_parts[0], set(tail_parts[2].split(","))
            if (
                unified
                and kind == "cgroup2"
                or not unified
                and kind == "cgroup"
                and (wanted <= options)
            ):
                return _unescape(parts[4]), _unescape(parts[3])
    return None


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape")
