"""Issue 32.2: a command the agent started never outlives the agent's SIGKILL, from its
first instant, warm or cold.

The spawn (the process the editor started, and SIGKILLs as Zed does) is killed the
moment its command shows a sign of life: the first line the command runs creates a
marker file, watched by a thread that kills at once. Then every process of the
command (its shell, a background child, a foreground child; each named by a token
of this test in its command line) must be gone. Warm: the spawn is served by this
worker's zygote (its log says so); cold: `ADK_ACP_NO_WARM=1`. The same for a command
started in the background (`is_background`), and for a kill as soon as the tool call
is announced (the command may not have started: it must then never run).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from acp_server.warm import place
from tests.e2e import warm_tier
from tests.e2e.tools_harness import Agent, MakeAgent, start_agent, wait_until
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

WARM = re.compile(r"warm: served by child (\d+)")
SERVED = ["warm", pytest.param("cold", marks=pytest.mark.cold)]


def _matching(token: str) -> list[int]:
    """Live (not zombie) processes with `token` in their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


class _KillOnSight:
    """SIGKILLs `pid` the moment `marker` exists (a thread polling every millisecond)."""

    def __init__(self, marker: Path, pid: int) -> None:
        self.marker, self.pid = marker, pid
        self.killed_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            if self.marker.exists():
                os.kill(self.pid, signal.SIGKILL)
                self.killed_at = time.monotonic()
                return
            time.sleep(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


async def _agent(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    served: str,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Agent, int]:
    if served == "warm":  # this worker's zygote, even when the tier runs cold
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(warm_tier.runtime()))
        monkeypatch.delenv(place.NO_WARM_ENV, raising=False)
        monkeypatch.setenv(place.IDLE_ENV, warm_tier.IDLE_S)
        warm_tier.ready_zygote()
    agent = await start_agent(make_agent, tmp_path, fake, {}, args=["--approval-mode", "yolo"])
    if served == "warm":
        assert WARM.search(agent.client.stderr_text), agent.client.stderr_text[-2000:]
    process = agent.client.process
    assert process is not None
    return agent, process.pid


def _command(tmp_path: Path, token: str) -> tuple[str, Path]:
    marker = tmp_path / f"started-{token}"
    # the marker first; then a background child and a foreground one, both named
    return f"touch {marker}; sleep 300.{token} & sleep 301.{token}; echo {token}", marker


async def _all_gone(token: str, what: str) -> None:
    await wait_until(lambda: not _matching(token), 60, f"{what}: the command's processes end")
    await asyncio.sleep(1.0)  # a command held back must not start late either
    assert not _matching(token), f"{what}: a process of the command started after the kill"


@pytest.mark.parametrize("served", SERVED)
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_command_killed_with_its_agent_from_its_first_instant(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    tmp_path: Path,
    served: str,
    background: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = str(uuid.uuid4().int % 10**9)
    command, marker = _command(tmp_path, token)
    args = {"command": command, "is_background": True} if background else {"command": command}
    fake_gemini.add(function_call_response("run_shell_command", args))
    agent, spawn = await _agent(make_agent, tmp_path, fake_gemini, served, monkeypatch)
    killer = _KillOnSight(marker, spawn)
    try:
        agent.client.start_prompt(agent.session_id, "run it")
        await wait_until(lambda: killer.killed_at is not None, 60, "the command starts")
    finally:
        killer.stop()
    await agent.client.close(expect_exit_code=None, check=False)
    await _all_gone(token, f"{served}, killed as the command started")


@pytest.mark.parametrize("served", SERVED)
async def test_a_command_announced_but_not_started_never_runs_after_the_kill(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    tmp_path: Path,
    served: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = str(uuid.uuid4().int % 10**9)
    command, marker = _command(tmp_path, token)
    fake_gemini.add(function_call_response("run_shell_command", {"command": command}))
    agent, spawn = await _agent(make_agent, tmp_path, fake_gemini, served, monkeypatch)
    client = agent.client
    client.start_prompt(agent.session_id, "run it")
    await client.wait_for_update(
        lambda u: u.get("sessionUpdate") == "tool_call",
        session_id=agent.session_id,
        timeout=60,
    )
    os.kill(spawn, signal.SIGKILL)
    await client.close(expect_exit_code=None, check=False)
    await _all_gone(token, f"{served}, killed as the tool call was announced")
