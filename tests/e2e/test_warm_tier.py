"""The e2e tier's own warm server (tests/e2e/warm_tier.py): agents are forked by this
test process' zygote, in a private folder; a killed test process leaves no zygote."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acp_server.warm import place
from tests.e2e import warm_tier
from tests.e2e.spine import MakeAgent, dirs, start_session
from tests.e2e.test_warm_server import _alive
from tests.e2e.tools_harness import wait_until
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = pytest.mark.timeout(300)  # the zygote's warm-up when this test starts it

WARM = re.compile(r"warm: served by child (\d+) of the warm server (\d+)")


async def test_later_spawns_are_forked_by_this_process_zygote(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    runtime = warm_tier.runtime()
    assert os.environ["XDG_RUNTIME_DIR"] == str(runtime)
    assert place.NO_WARM_ENV not in os.environ
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
    folder, key = str(runtime / "adk-acp"), place.install_key()
    d = dirs(tmp_path)
    fake_gemini.add(text_response("cold hello"))
    first, opened = await start_session(make_agent, d, fake_gemini)
    assert (await first.prompt(opened, "hi"))["stopReason"] == "end_turn"  # starts it, if none
    await wait_until(lambda: place.ready(folder, key), 240, "the worker's warm server")
    assert warm_tier.zygotes(runtime) == [place.server_pid(folder, key)]
    fake_gemini.add(text_response("warm hello"))
    second, session = await start_session(make_agent, d, fake_gemini)
    await wait_until(lambda: WARM.search(second.stderr_text), 60, "the spawn is served warm")
    found = WARM.search(second.stderr_text)
    assert found is not None and int(found.group(2)) == place.server_pid(folder, key)
    assert second.process is not None and int(found.group(1)) != second.process.pid
    assert (await second.prompt(session, "hi"))["stopReason"] == "end_turn"
    await first.close()
    await second.close()


@pytest.mark.cold
def test_a_cold_marked_test_keeps_its_agents_cold() -> None:
    assert os.environ[place.NO_WARM_ENV] == "1"


_KILLED = """
import os, signal, subprocess, sys, time
from pathlib import Path
from tests.e2e import warm_tier
runtime = warm_tier.runtime()
folder = runtime / "adk-acp"
folder.mkdir(mode=0o700)
# Stands for a zygote: the same name in its command line, holding the lock, detached.
lock = folder / "k.lock"
hold = "import fcntl, os, sys, time; fcntl.flock(os.open(sys.argv[1], os.O_RDWR), fcntl.LOCK_EX)"
hold += "; print(flush=True); time.sleep(600)"
lock.write_text("")
zygote = subprocess.Popen(
    [sys.executable, "-c", hold, str(lock), "acp_server.warm.server"],
    start_new_session=True,
    stdout=subprocess.PIPE,
)
zygote.stdout.readline()  # it holds the lock
lock.write_text(str(zygote.pid))
print(runtime, zygote.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_test_process_leaves_no_zygote() -> None:
    """The watcher (`worker_children.on_death`) stops the zygote and removes the folder."""
    victim = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert victim.stdout is not None
    with victim.stdout:
        runtime, zygote = victim.stdout.readline().split()
    assert warm_tier.zygotes(Path(runtime)) == [int(zygote)]
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    deadline = time.monotonic() + 60
    while (Path(runtime).exists() or _alive(int(zygote))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(runtime).exists() and not _alive(int(zygote))
