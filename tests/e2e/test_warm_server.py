"""The warm per-user server (issue 23.2) through real processes.

One server per module, in a short private runtime folder of its own (`XDG_RUNTIME_DIR`),
started in the foreground and stopped at the end, with any server a test restarted.
Every other test runs with `ADK_ACP_NO_WARM=1` (tests/conftest.py). A spawn says how
it is served in its log: "warm: served by child N" or "cold: ...".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_server.warm import place
from tests.e2e.acp_client import AcpTestClient
from tests.e2e.spine import MakeAgent, agent_env, dirs, start_session
from tests.e2e.tools_harness import wait_until
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = [
    pytest.mark.timeout(300),  # the server's warm-up: seconds alone, more beside others
    pytest.mark.cold,  # its own server and folder; the spawns it wants warm say so
]

READY_S = 240.0
WARM = re.compile(r"warm: served by child (\d+) of the warm server (\d+)")


@dataclass
class WarmPlace:
    runtime: Path
    folder: str
    key: str
    server: subprocess.Popen[bytes]

    def env(self, **extra: str | None) -> dict[str, str | None]:
        return {
            "XDG_RUNTIME_DIR": str(self.runtime),
            "ADK_ACP_NO_WARM": None,
            place.IDLE_ENV: "600",
            **extra,
        }

    def pid(self) -> int | None:
        return place.server_pid(self.folder, self.key)


def _wait_ready(folder: str, key: str, what: str) -> None:
    deadline = time.monotonic() + READY_S
    while not place.ready(folder, key):
        if time.monotonic() > deadline:
            log = Path(folder, f"{key}.log")
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise AssertionError(f"{what}: no warm server within {READY_S} s\n{tail}")
        time.sleep(0.05)


@contextlib.contextmanager
def foreground_server(prefix: str, what: str) -> Iterator[WarmPlace]:
    """A warm server of this installation in a private runtime folder of its own (its log
    in the folder), started in the foreground and stopped (a restarted one too) at the end."""
    runtime = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # short: a socket path ≤ 107
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), place.IDLE_ENV: "600"}
    env.pop(place.NO_WARM_ENV, None)
    folder = place.folder(env)
    key = place.install_key()
    log = open(Path(folder, f"{key}.log"), "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "-P", "-m", "acp_server.warm.server", folder],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_ready(folder, key, what)
        yield WarmPlace(runtime, folder, key, server)
    finally:
        place.stop_server(folder, key)
        server.terminate()
        server.wait(timeout=30)
        log.close()
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmPlace]:
    with foreground_server("aw", "the module's server") as started:
        yield started


def _how(client: AcpTestClient) -> tuple[int, int] | None:
    """(child pid, server pid) when the spawn was served warm, else None."""
    found = WARM.search(client.stderr_text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _served(client: AcpTestClient, what: str) -> tuple[int, int]:
    await wait_until(lambda: _how(client) is not None, 60, f"{what} says it is served warm")
    how = _how(client)
    assert how is not None
    return how


async def test_spawns_are_served_warm_each_with_its_own_environment(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """Two spawns, two keys: each child uses its own; the socket and folder are private;
    one child killed leaves the other and the server serving."""
    folder_mode = stat.S_IMODE(os.stat(warm.folder).st_mode)
    socket_mode = stat.S_IMODE(os.stat(place.socket_path(warm.folder, warm.key)).st_mode)
    assert (folder_mode, socket_mode) == (0o700, 0o600)
    fake_gemini.add(*(text_response(f"answer {i}") for i in range(4)))
    d = dirs(tmp_path)
    first, s1 = await start_session(make_agent, d, fake_gemini, env=warm.env(), api_key="key-one")
    second, s2 = await start_session(make_agent, d, fake_gemini, env=warm.env(), api_key="key-two")
    (child1, server1), (child2, server2) = await _served(first, "1st"), await _served(second, "2nd")
    assert server1 == server2 == warm.pid() and child1 != child2
    assert first.process is not None and child1 != first.process.pid
    for client, session in ((first, s1), (second, s2)):
        assert (await client.prompt(session, "hello"))["stopReason"] == "end_turn"
    keys = [r.headers.get("x-goog-api-key") for r in fake_gemini.generate_requests]
    assert keys == ["key-one", "key-two"]

    os.kill(child1, signal.SIGKILL)
    await wait_until(lambda: first.returncode is not None, 30, "the killed child's spawn exits")
    assert first.returncode == 128 + signal.SIGKILL
    await first.close(expect_exit_code=None, check=False)
    assert (await second.prompt(s2, "still there?"))["stopReason"] == "end_turn"
    (tmp_path / "other").mkdir()
    other = dirs(tmp_path / "other")  # another user folder and workspace: its own records
    third, s3 = await start_session(make_agent, other, fake_gemini, env=warm.env(), api_key="key-3")
    assert (await _served(third, "3rd"))[1] == warm.pid()
    assert (await third.prompt(s3, "and you?"))["stopReason"] == "end_turn"
    assert fake_gemini.generate_requests[-1].headers.get("x-goog-api-key") == "key-3"
    await third.close()

    def records_of(home: Path) -> list[Path]:
        return list(home.rglob(f"{s3}.jsonl"))

    assert records_of(other.home) and not records_of(d.home)


async def test_the_child_ends_with_its_spawn(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """The editor closing stdin ends child and spawn (code 0); the spawn SIGKILLed (Zed
    kills the process group; the child is not in it) ends the child too; a SIGTERM to
    the spawn is forwarded to the child, whose death is the spawn's exit code."""
    d = dirs(tmp_path)
    closing, _ = await start_session(make_agent, d, env=warm.env(GEMINI_API_KEY="x"))
    killed, _ = await start_session(make_agent, d, env=warm.env(GEMINI_API_KEY="x"))
    (closing_child, _), (killed_child, _) = (
        await _served(closing, "1st"),
        await _served(killed, "2nd"),
    )
    assert await closing.close() == 0
    await wait_until(lambda: not _alive(closing_child), 30, "the child ends after stdin closed")
    assert killed.process is not None
    os.kill(killed.process.pid, signal.SIGKILL)
    await wait_until(lambda: not _alive(killed_child), 30, "the child ends with its spawn")
    await killed.close(expect_exit_code=None, check=False)
    assert warm.pid() is not None
    stopped, _ = await start_session(make_agent, d, env=warm.env(GEMINI_API_KEY="x"))
    stopped_child, _ = await _served(stopped, "3rd")
    assert stopped.process is not None
    os.kill(stopped.process.pid, signal.SIGTERM)  # forwarded: the child dies of it
    await wait_until(lambda: stopped.returncode is not None, 30, "the stopped spawn exits")
    assert stopped.returncode == 128 + signal.SIGTERM and not _alive(stopped_child)
    await stopped.close(expect_exit_code=None, check=False)


_FOREIGN_SPAWN = """\
import sys
from acp_server.warm import place
real = place.install_key()
place.socket_path = lambda folder, key: f"{folder}/{real}.sock"
place.install_key = lambda: "0ther1nstall4tion"
from acp_server.cli import main
sys.exit(main())
"""


async def test_another_installation_is_not_served(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """A spawn whose installation key differs reaches the socket, is refused, serves cold."""
    d = dirs(tmp_path)
    argv = [sys.executable, "-c", _FOREIGN_SPAWN]
    env = {**agent_env(d), **warm.env(GEMINI_API_KEY="x")}
    client = await make_agent(argv, env, cwd=str(d.workspace))
    await client.initialize()
    session = (await client.new_session(d.workspace))["sessionId"]
    assert session
    assert _how(client) is None
    assert "cold: the warm server refused (installation '0ther1nstall4tion'" in client.stderr_text
    assert warm.pid() is not None


_OTHER_UID_CLIENT = """\
import array, json, os, socket, struct
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["WARM_SOCKET"])
body = json.dumps({"key": os.environ["WARM_KEY"], "argv": [], "env": {}}).encode()
fds = array.array("i", [0, 1, 2, os.open("/", os.O_RDONLY)])
try:
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
    sock.sendmsg([struct.pack(">I", len(body)) + body], rights)
except OSError:
    pass  # refused before reading: the answer is still there
print(sock.makefile("rb").readline().decode(), end="")
"""


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root")
def test_another_user_is_refused(warm: WarmPlace) -> None:
    """uid 65534 given access to the socket (the folder opened for the test) is refused by
    the server's SO_PEERCRED check, and no child is started for it."""
    sock = place.socket_path(warm.folder, warm.key)
    os.chmod(warm.runtime, 0o711)
    os.chmod(warm.folder, 0o711)
    os.chmod(sock, 0o666)
    try:
        run = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3"],
            input=textwrap.dedent(_OTHER_UID_CLIENT).encode(),
            env={"WARM_SOCKET": sock, "WARM_KEY": warm.key, "PATH": os.environ["PATH"]},
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        os.chmod(sock, 0o600)
        os.chmod(warm.folder, 0o700)
        os.chmod(warm.runtime, 0o700)
    assert run.returncode == 0, run.stderr.decode()
    answer = json.loads(run.stdout)
    assert "uid 65534 is not served" in answer["refused"]
    assert warm.pid() is not None


def test_a_refused_request_starts_no_child(warm: WarmPlace) -> None:
    """A malformed request (no descriptors) is refused on the spot."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(place.socket_path(warm.folder, warm.key))
        body = json.dumps({"key": warm.key, "argv": [], "env": {}}).encode()
        sock.sendall(len(body).to_bytes(4, "big") + body)
        answer = json.loads(sock.makefile("rb").readline())
    assert "file descriptors" in answer["refused"]


async def test_server_killed_next_spawn_serves_cold_and_restarts_it(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """Last in the module: the server SIGKILLed; a spawn serves cold and starts a server
    (detached, stopped by the fixture); the spawn after it is served warm by that one."""
    old = warm.pid()
    assert old is not None
    os.kill(old, signal.SIGKILL)
    await wait_until(lambda: warm.pid() is None, 30, "the server is gone")
    d = dirs(tmp_path)
    cold, _ = await start_session(make_agent, d, env=warm.env(GEMINI_API_KEY="x"))
    await wait_until(lambda: "cold: no warm server; one starts after" in cold.stderr_text, 60, "")
    assert await cold.close() == 0  # no prompt answered: the server starts as it exits
    await wait_until(lambda: warm.pid() not in (None, old), 60, "a new server holds the lock")
    await wait_until(lambda: place.ready(warm.folder, warm.key), READY_S, "the new server")
    again, _ = await start_session(make_agent, d, env=warm.env(GEMINI_API_KEY="x"))
    assert (await _served(again, "the spawn after"))[1] not in (None, old)
