"""The sandbox with the real bubblewrap, through `CommandRunner` (issue 35): what a
command can write, reach and read, and that stopping it stops everything it started.

The workspace and home live under /var/tmp, outside the private /tmp the sandbox
mounts, so hiding them is the sandbox's doing and not the private /tmp's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.tools.io.commands import CommandRunner
from runtime.tools.io.process_group import live_group_members
from runtime.tools.io.sandbox import Sandbox, SandboxSettings
from runtime.tools.io.sandbox.secrets import HOME_SECRETS
from tests.bubblewrap import ensure_bwrap
from tests.unit.runtime.tools.fakes import ProgressLog
from tests.unit.runtime.tools.io.test_commands import wait_for_pid

SECRET = "TOP-SECRET-7f3a"


@dataclass
class Box:
    base: Path
    ws: Path
    home: Path

    def runner(self, mode: str = "workspace-write", network: bool = False) -> CommandRunner:
        settings = SandboxSettings(mode, network=network)  # type: ignore[arg-type]
        env = {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config")}
        sandbox = Sandbox.for_session(settings, roots=(self.ws,), home=self.home, env=env)
        assert sandbox.active, sandbox.problem
        return CommandRunner(sandbox=sandbox, kill_grace_s=0.5)


@pytest.fixture
def box() -> Iterator[Box]:
    ensure_bwrap()
    base = Path(tempfile.mkdtemp(prefix="adk-acp-sandbox-test-", dir="/var/tmp")).resolve()
    (base / "ws").mkdir()
    (base / "home").mkdir()
    try:
        yield Box(base, base / "ws", base / "home")
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_a_write_inside_lands_byte_exact_and_outside_fails(box: Box) -> None:
    result = await box.runner().run(
        r"printf 'a\r\nb\x00\xff\n' > in.bin && mkdir -p sub && printf x > sub/y; "
        f"echo no > {box.base}/outside.txt",
        box.ws,
        30,
    )
    assert (box.ws / "in.bin").read_bytes() == b"a\r\nb\x00\xff\n"
    assert (box.ws / "sub" / "y").read_bytes() == b"x"
    assert not (box.base / "outside.txt").exists()
    assert "Read-only file system" in result.output
    assert result.sandboxed and result.sandbox_denial is not None
    assert "outside the workspace" in result.sandbox_denial


async def test_read_only_writes_nowhere_but_its_private_tmp(box: Box) -> None:
    probe = f"{tempfile.gettempdir()}/adk-acp-sandbox-{os.getpid()}-{id(box)}"
    result = await box.runner("read-only").run(
        f"echo t > {probe} && cat {probe} && echo x > in.txt", box.ws, 30
    )
    assert result.output.startswith("t\n") and "Read-only file system" in result.output
    assert not os.path.exists(probe)  # the sandbox's /tmp is its own
    assert not (box.ws / "in.txt").exists()
    assert result.sandbox_denial is not None and "read-only" in result.sandbox_denial


async def test_even_root_cannot_remount_the_file_system(box: Box) -> None:
    result = await box.runner().run(
        "mount -o remount,rw / 2>&1; touch /etc/adk-acp-sandbox-probe", box.ws, 30
    )
    assert not os.path.exists("/etc/adk-acp-sandbox-probe"), result.output


@pytest.fixture
async def listener() -> AsyncIterator[int]:
    """A TCP listener on 127.0.0.1 outside the sandbox that answers `pong`."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"pong\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def connect(port: int) -> str:
    code = (
        f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
        "print(s.recv(10).decode().strip())"
    )
    return f'python3 -c "{code}"'


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_no_network_means_no_connection_to_a_listener_outside(
    box: Box, listener: int, mode: str
) -> None:
    result = await box.runner(mode, network=True if mode == "read-only" else False).run(
        connect(listener), box.ws, 30
    )
    assert "pong" not in result.output and result.exit_code != 0
    assert "Connection refused" in result.output
    assert result.sandbox_denial is not None and "network" in result.sandbox_denial


async def test_the_network_allowed_reaches_the_listener(box: Box, listener: int) -> None:
    result = await box.runner(network=True).run(connect(listener), box.ws, 30)
    assert (result.output, result.exit_code, result.sandbox_denial) == ("pong\n", 0, None)


async def test_each_hidden_secret_reads_as_absent(box: Box) -> None:
    files = [name for name in HOME_SECRETS if "." in Path(name).name[1:] or name == ".netrc"]
    folders = [name for name in HOME_SECRETS if name not in files]
    for name in folders:
        (box.home / name).mkdir(parents=True)
        (box.home / name / "key").write_text(SECRET)
    for name in [*files, ".config/adk-acp/credentials.json"]:
        (box.home / name).parent.mkdir(parents=True, exist_ok=True)
        (box.home / name).write_text(SECRET)
    (box.ws / ".env").write_text(f"TOKEN={SECRET}\n")
    (box.ws / ".env.local").write_text(f"TOKEN={SECRET}\n")
    (box.ws / "services" / "api").mkdir(parents=True)
    (box.ws / "services" / "api" / ".env").write_text(f"TOKEN={SECRET}\n")  # nested too
    (box.ws / "visible.txt").write_text("seen\n")
    every = [*(f"{n}/key" for n in folders), *files, ".config/adk-acp/credentials.json"]
    reads = " ".join(f"cat {box.home}/{name};" for name in every)
    lists = " ".join(f"ls -A {box.home}/{name};" for name in folders)
    result = await box.runner().run(
        f"{reads} {lists} cat .env .env.local services/api/.env visible.txt; "
        f"grep -rs {SECRET} {box.home} . ; true",
        box.ws,
        30,
    )
    assert SECRET not in result.output, result.output
    assert "seen" in result.output
    for name in folders:
        assert f"{box.home}/{name}/key: No such file or directory" in result.output
    assert (box.ws / ".env").read_text() == f"TOKEN={SECRET}\n"  # hidden, not touched
    outside = await CommandRunner().run(f"cat {box.home}/.ssh/key", box.ws, 30)
    assert outside.output == SECRET  # without the sandbox, the same read sees it


async def test_no_other_process_is_visible(box: Box) -> None:
    result = await box.runner().run(
        f"cat /proc/{os.getpid()}/cmdline; ls /proc | grep -c '^[0-9]'", box.ws, 30
    )
    assert "pytest" not in result.output
    assert int(result.output.split()[-1]) < 10  # bwrap, the shell, ls and grep


async def test_a_cancel_kills_everything_the_command_started(box: Box) -> None:
    marker = f"sleep 3{os.getpid() % 1000}.5"
    log = ProgressLog()
    runner = box.runner()
    task = asyncio.create_task(
        runner.run(f"{marker} & {marker} & {marker}", box.ws, 60, on_output=log)
    )
    pid = await wait_for_pid(log)
    await wait_sleepers(marker, 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_sleepers(marker, 0)
    assert not live_group_members(pid)


async def test_a_background_command_runs_in_the_sandbox(box: Box) -> None:
    runner = box.runner()
    started = await runner.start_background(
        f"echo in > bg.txt; echo out > {box.base}/bg.txt; sleep 60", box.ws, box.base / "bg.log"
    )
    try:
        for _ in range(500):
            if "Read-only" in (box.base / "bg.log").read_text():
                break
            await asyncio.sleep(0.02)
        assert (box.ws / "bg.txt").read_text() == "in\n"
        assert not (box.base / "bg.txt").exists()
    finally:
        os.killpg(started.pid, 9)


async def wait_sleepers(marker: str, count: int, timeout_s: float = 20.0) -> None:
    """Wait until exactly `count` processes run `marker` (read from /proc)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        found = 0
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    line = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
                with open(f"/proc/{name}/stat", "rb") as handle:
                    state = handle.read().decode().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            found += line == marker and state not in ("Z", "X")
        if found == count:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{found} processes run {marker!r}, not {count}")
        await asyncio.sleep(0.05)


def test_the_bench_measures_the_cost_beside_the_unsandboxed_command() -> None:
    from bench.sandbox_bench import measure_sandbox

    ensure_bwrap()
    command, cost = measure_sandbox(3)
    assert (command.key, cost.key) == ("sandbox_command", "sandbox_cost")
    assert len(command.samples) == len(command.baseline) == len(cost.samples) == 3
    assert command.ratio is not None and cost.target == 0.020


async def test_a_user_without_privileges_gets_the_same_sandbox(box: Box) -> None:
    """CI runs as root; a normal user needs unprivileged user namespaces, which this
    machine has when the command line runs as `nobody` too."""
    if os.geteuid() != 0:  # already unprivileged: the tests above ran as such a user
        return
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "util-linux's setpriv"
    box.base.chmod(0o755)
    box.ws.chmod(0o777)
    sandbox = box.runner().sandbox
    assert sandbox is not None
    argv = sandbox.wrap(["sh", "-c", f"id -u; echo x > in.txt; echo y > {box.base}/out"], box.ws)
    process = await asyncio.create_subprocess_exec(
        setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=box.ws,
    )  # fmt: skip
    output = (await process.communicate())[0].decode()
    assert output.startswith("65534\n"), output
    assert "Read-only file system" in output
    assert (box.ws / "in.txt").read_text() == "x\n" and not (box.base / "out").exists()
