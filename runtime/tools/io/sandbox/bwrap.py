"""The bubblewrap (`bwrap`) command line of a sandboxed command, and whether bwrap can
run here at all (it needs user namespaces; some containers forbid them).

Every sandbox: a new user namespace with no capabilities (root in CI included: real
root would keep CAP_SYS_ADMIN and could remount `/` writable), new PID, IPC and UTS
namespaces with a fresh `/proc` (no other process's environment or root is
reachable), the whole file system bound read-only, a fresh `/dev` and a private `/tmp`
(tmpfs). `workspace-write` binds the session's roots writable; without the network
the command gets a namespace with only loopback. Secrets are covered last: a folder by
an empty read-only tmpfs, a file by an empty read-only file (`empty_file`).

`--die-with-parent`: when the runner's process ends the sandbox goes with it (a
background command, whose launcher exits at once, leaves it out). `--new-session`
for the editor's terminal: no `TIOCSTI` into the terminal the command runs in; a local
command has no terminal and stays in the runner's process group, which it kills.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.tools.io.sandbox.settings import SandboxSettings

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
BASE_ARGS: tuple[str, ...] = (
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
)


@dataclass(frozen=True)
class BwrapLayout:
    """What one command's sandbox sees: `roots` (writable in `workspace-write`), `cwd`,
    the secrets to cover (resolved path, is a folder) and environment variables to drop
    (the editor's terminal starts from the editor's environment, not ours)."""

    roots: tuple[Path, ...]
    cwd: Path
    secrets: tuple[tuple[Path, bool], ...] = ()
    unset_env: tuple[str, ...] = ()
    die_with_parent: bool = True
    new_session: bool = False
    installation: tuple[Path, ...] = ()
    """The agent's own installation (its interpreter's environment, its packages): kept
    visible, read-only, when it lies under the private `/tmp`."""


def bwrap_args(settings: SandboxSettings, layout: BwrapLayout) -> list[str]:
    """bwrap's options (without the program and the command) for `settings`."""
    args = list(BASE_ARGS)
    if not settings.allows_network:
        args.append("--unshare-net")
    if layout.die_with_parent:
        args.append("--die-with-parent")
    if layout.new_session:
        args.append("--new-session")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in _outermost(layout.installation):
        if path.is_relative_to("/tmp") and path != Path("/tmp"):
            args += ["--ro-bind", str(path), str(path)]
    bind = "--bind" if settings.mode == "workspace-write" else "--ro-bind"
    for root in _outermost(layout.roots):
        args += [bind, str(root), str(root)]  # after /tmp: a root under /tmp stays visible
    for path, is_dir in layout.secrets:
        if _under_private_tmp(path, (*layout.roots, *layout.installation)):
            continue  # the private /tmp hides it already
        if is_dir:
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", str(empty_file()), str(path)]
    for name in layout.unset_env:
        args += ["--unsetenv", name]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(layout.cwd)]
    return args


def _under_private_tmp(path: Path, roots: Iterable[Path]) -> bool:
    tmp = Path("/tmp")
    if not path.is_relative_to(tmp):
        return False
    return not any(path.is_relative_to(Path(root).resolve()) for root in roots)


def _outermost(roots: Iterable[Path]) -> list[Path]:
    """Resolved roots without those inside another (binding both would be redundant)."""
    resolved = sorted({Path(r).resolve() for r in roots}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for root in resolved:
        if not any(root.is_relative_to(outer) for outer in kept):
            kept.append(root)
    return kept


_empty: list[Path] = []


def empty_file() -> Path:
    """An empty read-only file of this process (what a hidden secret file reads as; a
    device such as `/dev/null` cannot be opened on the read-only bound root)."""
    with _probe_lock:
        if not _empty:
            folder = Path(tempfile.mkdtemp(prefix="adk-acp-sandbox-"))
            path = folder / "empty"
            path.touch(mode=0o444)
            atexit.register(shutil.rmtree, folder, True)
            _empty.append(path)
        return _empty[0]


@dataclass(frozen=True)
class Availability:
    """Whether bwrap runs here: `program` its path, else `problem` says why not."""

    program: str | None
    problem: str | None = None


_probed: dict[str, Availability] = {}
_probe_lock = threading.Lock()


def bwrap_availability(program: str | None = None) -> Availability:
    """Runs a minimal sandbox once per process (cached): bwrap missing, or unable to
    create its namespaces here, is a problem to tell, not a crash."""
    found = program or shutil.which("bwrap")
    if found is None:
        return Availability(
            None, "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        )
    with _probe_lock:
        known = _probed.get(found)
        if known is None:
            known = _probe(found)
            _probed[found] = known
        return known


def _probe(program: str) -> Availability:
    argv: Sequence[str] = [
        program,
        *BASE_ARGS,
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "true",
    ]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(None, f"bubblewrap could not be started ({exc})")
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        return Availability(
            None,
            f"bubblewrap cannot create its sandbox here ({detail}); it needs user namespaces "
            "(kernel.unprivileged_userns_clone=1, and no AppArmor or container policy "
            "forbidding them)",
        )
    logger.info("sandbox: %s works here", program)
    return Availability(program)
