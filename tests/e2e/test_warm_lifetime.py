"""Issue 32.3: one warm server per user and installation, and it lives as long as it says.

- 50 spawns at once, each with its own TMPDIR and no XDG_RUNTIME_DIR, leave at most one
  server, which serves the next spawn (another TMPDIR again). They run in a mount
  namespace of their own (`unshare`), with fresh, empty /tmp and /run/user, so the
  per-user folder they share is the test's own: never a real user's server, nor this
  worker's zygote (where the system forbids the namespace, in this user's real folder).
- The idle clock runs from the last child's exit; a server whose socket is removed or
  replaced exits at once; its lock holds no pid once it has exited (nor one a SIGKILLed
  server left, once a spawn looked); `adk-acp warm status|stop` sees and stops it.

Each server here has its own private runtime folder (`XDG_RUNTIME_DIR`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_server.warm import place
from tests.e2e.spine import MakeAgent, dirs, start_session
from tests.e2e.test_warm_server import READY_S, WARM, _alive
from tests.e2e.tools_harness import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.cold, pytest.mark.timeout(600)]

REPO = Path(__file__).parents[2]
SPAWNS = 50

# Runs inside the mount namespace (its /tmp and /run/user empty tmpfs): starts SPAWNS
# spawns at once, each in its own TMPDIR under BASE, each answering `initialize` and
# closing; then counts the warm servers of this namespace and folder; one more spawn;
# stops the server; prints what it saw as one JSON line.
_DRIVER = r"""
import json, os, signal, subprocess, sys, time
from acp_server.warm import place

spawns, base = int(sys.argv[1]), sys.argv[2]
me = os.readlink("/proc/self/ns/mnt")
home = os.path.join(base, "home")
os.makedirs(home)
env = {"PATH": os.environ["PATH"], "HOME": home, place.IDLE_ENV: "120"}
folder = place.folder(env)
key = place.install_key()
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}
line = (json.dumps(init) + "\n").encode()

def servers():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            ns = os.readlink(f"/proc/{pid}/ns/mnt")
        except OSError:
            continue
        ours = b"-m\0acp_server.warm.server\0" in cmd and folder.encode() in cmd
        if ours and ns == me and state != "Z":
            found.append(int(pid))
    return sorted(found)

def spawn(i):
    tmp = os.path.join(base, f"t{i}")
    os.makedirs(tmp)
    return subprocess.Popen(
        [sys.executable, "-m", "acp_server.cli"], env={**env, "TMPDIR": tmp}, cwd=home,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

started = time.monotonic()
procs = [spawn(i) for i in range(spawns)]
answers, errors = 0, []
for p in procs:
    out, err = p.communicate(line, timeout=600)
    answers += b'"result"' in out
    if p.returncode != 0:
        errors.append(err.decode(errors="replace")[-500:])
print("spawns done", time.monotonic() - started, file=sys.stderr, flush=True)
deadline = time.monotonic() + 240
while (len(servers()) > 1 or not place.ready(folder, key)) and time.monotonic() < deadline:
    time.sleep(0.1)
after = servers()
print("servers settled", time.monotonic() - started, file=sys.stderr, flush=True)
late = spawn(spawns)
out, err = late.communicate(line, timeout=600)
late_how = [l for l in err.decode(errors="replace").splitlines() if "served" in l or "cold:" in l]
holder = place.server_pid(folder, key)
for pid in servers():
    os.kill(pid, signal.SIGTERM)
deadline = time.monotonic() + 60
while servers() and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({
    "answers": answers, "errors": errors, "servers": after, "holder": holder,
    "folder": folder, "late": late_how, "left": servers(),
}), flush=True)
"""


def _namespace_argv() -> list[str]:
    """`unshare` into a private mount namespace (mapping root when not root) whose /tmp and
    /run/user are fresh tmpfs, then the driver."""
    unshare = shutil.which("unshare")
    assert unshare, "the test needs util-linux's unshare"
    mounts = (
        "mount -t tmpfs tmpfs /tmp && { [ ! -d /run/user ] || mount -t tmpfs tmpfs /run/user; }"
    )
    # a checkout or virtual environment under /tmp (a CI clone there) stays visible: the
    # real /tmp is kept at /mnt (in this namespace only) and each one bound back
    kept = sorted(
        {p.relative_to("/tmp").parts[0] for p in (REPO, Path(sys.prefix)) if _under_tmp(p)}
    )
    if kept:
        binds = " && ".join(f"mkdir -p /tmp/{k} && mount --bind /mnt/{k} /tmp/{k}" for k in kept)
        mounts = f"mount --bind /tmp /mnt && {mounts} && {binds}"
    as_root = [] if os.getuid() == 0 else ["--map-root-user"]
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        *as_root,
        "/bin/sh",
        "-c",
        f'{mounts} && exec "$0" -c "$1" "$2" "$3"',
        sys.executable,
        _DRIVER,
        str(SPAWNS),
        "/tmp",
    ]


def _under_tmp(path: Path) -> bool:
    resolved = path.resolve()
    return resolved != Path("/tmp") and resolved.is_relative_to("/tmp")


def _namespaces_allowed() -> bool:
    unshare = shutil.which("unshare")
    as_root = [] if os.getuid() == 0 else ["--map-root-user"]
    if unshare is None:
        return False
    probe = [unshare, "--mount", *as_root, "true"]
    return subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode == 0


def test_fifty_spawns_with_fifty_tmpdirs_leave_one_server(tmp_path: Path) -> None:
    """In a private mount namespace where the system allows one; else (a container that
    forbids it) in this user's real folder, whose server of this checkout it stops."""
    if _namespaces_allowed():
        argv, folder = _namespace_argv(), "/tmp/adk-acp-0"  # root inside (or mapped)
    else:
        argv = [sys.executable, "-c", _DRIVER, str(SPAWNS), str(tmp_path)]
        folder = place.folder({"PATH": os.environ["PATH"]})
    run = subprocess.run(
        argv,
        cwd=REPO,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        timeout=580,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    seen = json.loads(run.stdout.decode().strip().splitlines()[-1])
    assert seen["answers"] == SPAWNS and not seen["errors"], seen["errors"][:3]
    assert seen["folder"] == folder  # not any of the fifty TMPDIRs
    assert len(seen["servers"]) == 1, f"servers after {SPAWNS} spawns: {seen['servers']}"
    assert seen["holder"] == seen["servers"][0]
    assert any(f"of the warm server {seen['holder']}" in line for line in seen["late"]), seen
    assert seen["left"] == []


# ------------------------------------------------------------------ one server's life


def _server(runtime: Path, idle_s: str) -> tuple[subprocess.Popen[bytes], str, str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), place.IDLE_ENV: idle_s}
    env.pop(place.NO_WARM_ENV, None)
    folder, key = place.folder(env), place.install_key()
    server = subprocess.Popen(
        [sys.executable, "-P", "-m", "acp_server.warm.server", folder],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + READY_S
    while not place.ready(folder, key):
        assert server.poll() is None, "the server exited before it was ready"
        assert time.monotonic() < deadline, "no warm server"
        time.sleep(0.05)
    return server, folder, key


@pytest.fixture
def runtime() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="aw", dir="/tmp"))  # short: a socket path ≤ 107
    try:
        yield path
    finally:
        folder = path / "adk-acp"
        for pid in place.servers(str(folder)).values() if folder.is_dir() else []:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(path, ignore_errors=True)


def _env(runtime: Path, idle_s: str) -> dict[str, str | None]:
    return {
        "XDG_RUNTIME_DIR": str(runtime),
        place.NO_WARM_ENV: None,
        place.IDLE_ENV: idle_s,
        "GEMINI_API_KEY": "x",
    }


async def test_the_idle_clock_runs_from_the_last_child_exit(
    runtime: Path, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """Idle 5 s, a child that lives 7 s: the server lives ~5 s after that child ends
    (it used to exit at once), then exits with its lock emptied."""
    server, folder, key = _server(runtime, "5")
    client, _ = await start_session(make_agent, dirs(tmp_path), env=_env(runtime, "5"))
    await wait_until(lambda: WARM.search(client.stderr_text) is not None, 60, "served warm")
    time.sleep(7)  # the child lives past the idle time
    assert server.poll() is None, "the server exited while its child ran"
    assert await client.close() == 0
    ended = time.monotonic()
    server.wait(timeout=120)
    lived = time.monotonic() - ended
    # ~5 s (minus how late we saw the spawn exit); it used to be ~0.1 s
    assert lived > 2.0, f"the server exited {lived:.1f} s after its last child (idle: 5 s)"
    assert server.returncode == 0
    assert Path(place.lock_path(folder, key)).read_text() == ""
    assert place.server_pid(folder, key) is None


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_server_whose_socket_goes_exits_at_once(runtime: Path, how: str) -> None:
    server, folder, key = _server(runtime, "600")
    path = place.socket_path(folder, key)
    if how == "removed":
        os.unlink(path)
    else:
        other = Path(folder, "other.sock")
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as impostor:
            impostor.bind(str(other))
            os.rename(other, path)
    gone = time.monotonic()
    server.wait(timeout=60)
    assert time.monotonic() - gone < 30  # checked every second; not the idle time (600 s)
    assert Path(place.lock_path(folder, key)).read_text() == ""
    assert (how == "replaced") == os.path.exists(path)  # a socket not its own: left alone


async def test_a_killed_server_pid_is_never_offered(
    runtime: Path, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """SIGKILLed, a server cannot empty its lock: its pid is not trusted (it holds no lock)
    and the next spawn that looks empties the file."""
    server, folder, key = _server(runtime, "600")
    lock = Path(place.lock_path(folder, key))
    assert lock.read_text().strip() == str(server.pid) == str(place.server_pid(folder, key))
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    assert place.server_pid(folder, key) is None and place.servers(folder) == {}
    client, _ = await start_session(make_agent, dirs(tmp_path), env=_env(runtime, "600"))
    await wait_until(lambda: "cold: no warm server" in client.stderr_text, 60, "served cold")
    assert await client.close() == 0  # starts a server as it exits: the lock is its own
    await wait_until(lambda: place.server_pid(folder, key) is not None, 60, "a new server")
    assert lock.read_text().strip() == str(place.server_pid(folder, key))
    assert _alive(int(lock.read_text()))


def test_warm_status_and_stop(runtime: Path) -> None:
    server, folder, key = _server(runtime, "600")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}

    def warm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acp_server.cli", "warm", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    status = warm("status")
    assert status.returncode == 0
    assert f"folder: {folder}" in status.stdout
    assert f"server {server.pid}: this installation (key {key})" in status.stdout
    stop = warm("stop")
    assert (stop.returncode, stop.stdout.strip()) == (0, f"server {server.pid}: stopped")
    server.wait(timeout=30)
    assert "no warm server runs" in warm("status").stdout
