"""A spawn's kernel context, and a warm child that takes it or steps aside (issue 32.1).

A warm child is forked from a long-lived server, not from the spawn, so nothing the
kernel attached to the spawn reaches it by itself. `gather` reads what the kernel tells
a process about itself (standard library only, a few reads of /proc: it runs in the
spawn before any import): namespaces, root folder, cgroups, uid and gids, capabilities,
no_new_privs, seccomp, LSM label, resource limits, nice, scheduling policy and CPU
affinity, OOM score adjustment, umask, personality, blocked and ignored signals.

The child first checks that what the spawn sent is what the kernel shows of the process
at the other end of the socket (`confirm`, by its SO_PEERCRED pid): a process in a
sandbox cannot borrow the server's context by sending it. Then (`take`, before it
answers the spawn) it compares the spawn's context with its own, item by item:

- taken from the spawn, as the kernel allows (`_steps`): cgroup membership (the child
  joins the spawn's cgroups), supplementary groups, resource limits, scheduling policy,
  nice, I/O priority (read by `confirm`), CPU affinity, OOM score adjustment,
  personality, umask, signal mask and ignored signals, capabilities the spawn has not
  (dropped from every set), no_new_privs; `TZ` (`time.tzset`) and `TMPDIR` (tempfile's
  cached folder forgotten);
- to be equal, or the spawn is served cold (`Unfaithful`): every namespace, the root
  folder, uid and gid, seccomp, the LSM label, capabilities the spawn has and the child
  has not, no_new_privs set in the child but not in the spawn, and the environment read
  at import time (`import_time`: locale, `PYTHON*`, certificates, proxies).

Then it reads its own context again: any item still not the spawn's refuses the spawn
(`Unfaithful`), so a child is indistinguishable from a cold process or serves nobody.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

NAMESPACES = (
    "mnt",
    "net",
    "pid",
    "pid_for_children",
    "ipc",
    "uts",
    "user",
    "cgroup",
    "time",
    "time_for_children",
)
_LIMITS = {
    "Max cpu time": "CPU",
    "Max file size": "FSIZE",
    "Max data size": "DATA",
    "Max stack size": "STACK",
    "Max core file size": "CORE",
    "Max resident set": "RSS",
    "Max processes": "NPROC",
    "Max open files": "NOFILE",
    "Max locked memory": "MEMLOCK",
    "Max address space": "AS",
    "Max file locks": "LOCKS",
    "Max pending signals": "SIGPENDING",
    "Max msgqueue size": "MSGQUEUE",
    "Max nice priority": "NICE",
    "Max realtime priority": "RTPRIO",
    "Max realtime timeout": "RTTIME",
}
"""/proc/<pid>/limits' rows (readable by anyone, unlike prlimit) and their RLIMIT_ names."""
RLIMITS = tuple(_LIMITS.values())
_STATUS = {
    "Uid": "uid",
    "Gid": "gid",
    "Groups": "groups",
    "CapInh": "cap_inh",
    "CapPrm": "cap_prm",
    "CapEff": "cap_eff",
    "CapBnd": "cap_bnd",
    "CapAmb": "cap_amb",
    "NoNewPrivs": "no_new_privs",
    "Seccomp": "seccomp",
    "Seccomp_filters": "seccomp_filters",
    "Umask": "umask",
    "SigBlk": "sig_blocked",
    "SigIgn": "sig_ignored",
}
_IMPORT_TIME_NAMES = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
    }
)
ADOPTED_ENV = ("TZ", "TMPDIR")
"""Read by the standard library and cached; the child takes the spawn's (tzset, tempfile)."""


class Unfaithful(Exception):
    """The child cannot be what a cold process of this spawn would be: serve it cold."""


def gather(pid: int = 0) -> dict[str, Any]:
    """The kernel context of process `pid` (0: this one), as JSON-able values (cheap: a
    few reads of /proc). OSError when another process' cannot be read."""
    proc = f"/proc/{pid or 'self'}"
    context: dict[str, Any] = {}
    for name in NAMESPACES:
        try:
            context[f"ns.{name}"] = os.readlink(f"{proc}/ns/{name}")
        except FileNotFoundError:
            context[f"ns.{name}"] = ""  # not in this kernel
    root = os.stat(f"{proc}/root")
    context["root"] = f"{root.st_dev}:{root.st_ino}"
    context["cgroup"] = _read(f"{proc}/cgroup").splitlines()
    context["lsm"] = _read(f"{proc}/attr/current").rstrip("\0\n")
    for line in _read(f"{proc}/status").splitlines():
        key, _, value = line.partition(":")
        if key in _STATUS:
            context[_STATUS[key]] = " ".join(value.split())
    context["groups"] = " ".join(sorted(context.get("groups", "").split(), key=int))
    for line in _read(f"{proc}/limits").splitlines()[1:]:
        limit = _LIMITS.get(line[:26].strip())
        if limit is not None:
            soft, hard = line[26:].split()[:2]
            context[f"rlimit.{limit}"] = [_limit(soft), _limit(hard)]
    context["nice"] = os.getpriority(os.PRIO_PROCESS, pid)
    context["sched"] = [os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority]
    context["affinity"] = sorted(os.sched_getaffinity(pid))
    context["oom_score_adj"] = _read(f"{proc}/oom_score_adj").strip()
    context["personality"] = _read(f"{proc}/personality").strip()  # "": not ours to read
    return context


def _limit(text: str) -> int:
    return -1 if text == "unlimited" else int(text)  # -1: RLIM_INFINITY


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""  # no such file on this kernel, no LSM, or (personality) not ours to read


def confirm(claim: Mapping[str, Any], pid: int) -> dict[str, Any]:
    """The spawn's context to take: `claim` (what the spawn sent) once checked against
    what the kernel shows of the spawn's process `pid` (from SO_PEERCRED), so a sandboxed
    process cannot borrow the server's context by sending it, plus its I/O priority
    (which only a system call tells). Unfaithful when they differ. The personality,
    which only a tracer may read, and which is no wall, is taken as claimed."""
    from acp_server.warm import kernel

    if pid <= 0:
        raise Unfaithful("the spawn's process is not visible from the warm server")
    try:
        seen = gather(pid)
        checked = {**claim, "ioprio": kernel.io_priority(pid)}
    except OSError as exc:
        raise Unfaithful(f"the spawn's context cannot be read from /proc/{pid}: {exc}") from exc
    for key in NAMESPACES:
        if claim.get(f"ns.{key}") != seen.get(f"ns.{key}"):
            raise Unfaithful(f"the spawn's {key} namespace is not what it sent")
        if seen.get(f"ns.{key}") != _own_namespace(key):
            return checked  # refused by `take`; cgroups and ids show as seen from here
    for key in sorted({*claim, *seen}):
        if key == "personality" and not seen.get(key):
            continue
        if claim.get(key) != seen.get(key):
            raise Unfaithful(
                f"the spawn's {_label(key)} is not what it sent: {seen.get(key)!r}, "
                f"not {claim.get(key)!r}"
            )
    return checked


def _own_namespace(name: str) -> str:
    try:
        return os.readlink(f"/proc/self/ns/{name}")
    except FileNotFoundError:
        return ""


def import_time(name: str) -> bool:
    """Whether the variable is read once, at start-up or import (a warm child keeps the
    server's reading): locale, `PYTHON*`, certificate files, proxies."""
    upper = name.upper()
    return (
        name in _IMPORT_TIME_NAMES
        or upper in _IMPORT_TIME_NAMES
        or name.startswith(("LC_", "PYTHON"))
    )


def server_env_value(name: str, value: str) -> bool:
    """Whether the server keeps this import-time variable of the spawn that starts it (a
    proxy naming a user and password stays out: such spawns are served cold)."""
    return import_time(name) and not ("PROXY" in name.upper() and "@" in value)


def env_difference(spawn: Mapping[str, str], own: Mapping[str, str]) -> str | None:
    """The first import-time variable the spawn and this process do not share, as a reason
    (`HOME` too where Python put the user's site-packages, found from it, on sys.path)."""
    import site

    for name in sorted({*spawn, *own}):
        read = import_time(name) or (name == "HOME" and site.ENABLE_USER_SITE is True)
        if read and spawn.get(name) != own.get(name):
            return f"the spawn's {name} is not the warm server's (read at start-up)"
    return None


def take(spawn: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """Make this (single-threaded, forked) process the spawn's context; what it took.

    Unfaithful when an item must be equal and is not, when the kernel refuses a change,
    or when any item still differs afterwards. Call before `os.environ` is the spawn's
    (the import-time environment is compared with this process' own)."""
    if not isinstance(spawn, dict) or not spawn:
        raise Unfaithful("the spawn sent no context")
    reason = env_difference(env, os.environ)
    if reason:
        raise Unfaithful(reason)
    own = _own(spawn)
    _check_equal(spawn, own)
    taken = _adopt(spawn, own)
    after = _own(spawn)
    for key in sorted({*spawn, *after}):
        if spawn.get(key) != after.get(key):
            raise Unfaithful(f"{_label(key)} is still not the spawn's: {after.get(key)!r}")
    return taken


def _own(spawn: Mapping[str, Any]) -> dict[str, Any]:
    """This process' context, with what `confirm` added to the spawn's."""
    own = gather()
    if "ioprio" in spawn:
        from acp_server.warm import kernel

        own["ioprio"] = kernel.io_priority(0)
    return own


_MUST_EQUAL = ("root", "uid", "gid", "seccomp", "seccomp_filters", "lsm")


_LABELS = {
    "cap_inh": "inheritable capabilities",
    "cap_prm": "permitted capabilities",
    "cap_eff": "effective capabilities",
    "cap_bnd": "bounding capabilities",
    "cap_amb": "ambient capabilities",
    "lsm": "LSM label",
    "sched": "scheduling policy",
    "affinity": "CPU affinity",
    "groups": "supplementary groups",
    "sig_blocked": "blocked signals",
    "sig_ignored": "ignored signals",
    "no_new_privs": "no_new_privs",
    "oom_score_adj": "oom_score_adj",
    "seccomp_filters": "seccomp filters",
    "root": "root folder",
    "cgroup": "cgroups",
    "ioprio": "I/O priority",
}


def _label(key: str) -> str:
    if key.startswith("ns."):
        return f"{key[3:]} namespace"
    if key.startswith("rlimit."):
        return f"RLIMIT_{key[7:]}"
    return _LABELS.get(key, key)


def _check_equal(spawn: Mapping[str, Any], own: Mapping[str, Any]) -> None:
    for key in (*(k for k in own if k.startswith("ns.")), *_MUST_EQUAL):
        if spawn.get(key) != own.get(key):
            raise Unfaithful(
                f"the spawn's {_label(key)} is not the warm server's: "
                f"{spawn.get(key)!r}, not {own.get(key)!r}"
            )
    for key in ("cap_prm", "cap_eff", "cap_bnd", "cap_amb"):
        if _mask(spawn, key) & ~_mask(own, key):
            raise Unfaithful(f"the spawn has {_label(key)} the warm server has not")
    if own.get("no_new_privs") == "1" and spawn.get("no_new_privs") != "1":
        raise Unfaithful("the warm server runs with no_new_privs, the spawn without")


def _mask(context: Mapping[str, Any], key: str) -> int:
    return int(str(context.get(key) or "0"), 16)


def _adopt(spawn: Mapping[str, Any], own: Mapping[str, Any]) -> list[str]:
    """Each differing item the kernel lets a process change, in `_steps`' order."""
    taken: list[str] = []
    for keys, step in _steps():
        changed = [key for key in keys if spawn.get(key) != own.get(key)]
        if not changed:
            continue
        taken += [_label(key) for key in changed]
        try:
            step(spawn, own)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            what = ", ".join(_label(key) for key in changed)
            raise Unfaithful(f"cannot take the spawn's {what}: {exc}") from exc
    return taken


def _steps() -> list[
    tuple[tuple[str, ...], Callable[[Mapping[str, Any], Mapping[str, Any]], object]]
]:
    """Privileged steps first (cgroups, groups, limits, priority), capabilities dropped
    last but one, no_new_privs last."""
    from acp_server.warm import kernel

    def rlimit(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], object]:
        return lambda s, _: kernel.set_rlimit(name, s[f"rlimit.{name}"])

    caps = ("cap_inh", "cap_prm", "cap_eff", "cap_bnd", "cap_amb")
    return [
        (("cgroup",), lambda s, o: kernel.join_cgroups(list(s["cgroup"]), list(o["cgroup"]))),
        (("groups",), lambda s, _: os.setgroups([int(g) for g in str(s["groups"]).split()])),
        *(((f"rlimit.{name}",), rlimit(name)) for name in RLIMITS),
        (
            ("sched",),
            lambda s, _: os.sched_setscheduler(
                0, int(s["sched"][0]), os.sched_param(int(s["sched"][1]))
            ),
        ),
        (("nice",), lambda s, _: os.setpriority(os.PRIO_PROCESS, 0, int(s["nice"]))),
        (("ioprio",), lambda s, _: kernel.set_io_priority(int(s["ioprio"]))),
        (("affinity",), lambda s, _: os.sched_setaffinity(0, [int(c) for c in s["affinity"]])),
        (
            ("oom_score_adj",),
            lambda s, _: kernel.write_proc("oom_score_adj", str(s["oom_score_adj"])),
        ),
        (("personality",), lambda s, _: kernel.set_personality(int(str(s["personality"]), 16))),
        (("umask",), lambda s, _: os.umask(int(str(s["umask"]), 8))),
        (
            ("sig_blocked", "sig_ignored"),
            lambda s, _: kernel.set_signals(_mask(s, "sig_blocked"), _mask(s, "sig_ignored")),
        ),
        (caps, lambda s, _: kernel.set_capabilities(*(_mask(s, key) for key in caps))),
        (("no_new_privs",), lambda s, _: kernel.set_no_new_privs()),
    ]


def take_env() -> list[str]:
    """After `os.environ` became the spawn's: what the standard library cached from the
    server's (the time zone, the temporary folder), read again."""
    import tempfile
    import time

    time.tzset()
    tempfile.tempdir = None
    return list(ADOPTED_ENV)


def describe(context: Mapping[str, Any]) -> str:
    """One line of the context for a DEBUG log."""
    return "; ".join(f"{key}={context[key]}" for key in sorted(context))
