"""Issue 35 end to end: commands in the sandbox, through the real agent, its shell tool
and the real bubblewrap, locally and in the editor's terminal.

Each test's workspace and home live under /var/tmp (`base`): the sandbox's private
/tmp would hide pytest's own temp folders, and what it hides must be its own doing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.bubblewrap import ensure_bwrap
from tests.e2e.tools_harness import (
    BARE,
    CAPS,
    EDITOR,
    Agent,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
    uses_editor,
    wait_until,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response
from tests.unit.runtime.tools.io.test_sandbox_bwrap import SECRET, connect, wait_sleepers

pytestmark = pytest.mark.e2e

SHELL = "run_shell_command"


@pytest.fixture
def base() -> Iterator[Path]:
    ensure_bwrap()
    folder = Path(tempfile.mkdtemp(prefix="adk-acp-sandbox-e2e-", dir="/var/tmp")).resolve()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def listener() -> AsyncIterator[int]:
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


def outputs(fake: FakeGeminiServer) -> list[str]:
    """What the model got from each tool call, in order."""
    texts: list[str] = []
    for request in fake.generate_requests:
        texts += [response_text(r) for r in function_responses(request)]
    return texts


async def sandboxed_agent(
    make_agent: MakeAgent,
    base: Path,
    fake: FakeGeminiServer,
    caps: dict,
    mode: str,
    *,
    sandbox: str = "workspace-write",
    env_extra: dict[str, str] | None = None,
) -> Agent:
    return await start_agent(
        make_agent,
        base,
        fake,
        caps,
        args=["--approval-mode", mode, "--sandbox", sandbox],
        env_extra=env_extra,
        permission_policy="queue",
    )


WRITE_INSIDE = "python3 -c \"open('made.bin', 'wb').write(bytes([0, 255, 13, 10, 97]))\""


@pytest.mark.parametrize("caps", CAPS)
async def test_auto_edit_runs_unasked_inside_and_asks_to_escalate_a_write_outside(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path, caps: dict
) -> None:
    outside = base / "outside.txt"
    write_outside = f"echo escaped > {outside}"
    fake_gemini.add(
        function_call_response(SHELL, {"command": WRITE_INSIDE}),
        function_call_response(SHELL, {"command": write_outside}),
        function_call_response(SHELL, {"command": write_outside}),
        text_response("done"),
    )
    agent = await sandboxed_agent(make_agent, base, fake_gemini, caps, "autoEdit")
    pending = agent.client.start_prompt(agent.session_id, "go")

    # the write outside: the sandbox stopped it, and the user is asked why, to run it outside
    asked = await agent.client.next_permission_request(timeout=90)
    assert asked.tool_call["title"].startswith("Outside the sandbox: Run `echo escaped")
    why = json.dumps(asked.tool_call["content"])
    assert "The sandbox stopped this command" in why and "outside the workspace" in why
    assert [o["optionId"] for o in asked.options] == ["proceed_once", "cancel"]
    assert not outside.exists()
    asked.select("cancel")  # kept: the model hears that the sandbox stopped it
    asked = await agent.client.next_permission_request(timeout=60)
    asked.select("proceed_once")  # the second time: run it outside
    assert await pending.result(60) == {"stopReason": "end_turn"}

    assert len(agent.client.permission_requests) == 2  # the write inside was not asked
    assert (agent.workspace / "made.bin").read_bytes() == bytes([0, 255, 13, 10, 97])
    assert outside.read_text() == "escaped\n"
    first, kept, escalated = outputs(fake_gemini)
    assert "Read-only file system" in kept and "ran in a sandbox, which probably stopped it" in kept
    assert "Read-only file system" not in escalated
    if uses_editor(caps):  # the editor's terminal got the wrapped command line
        created = [params for method, params in agent.client.terminals.calls if method == "create"]
        assert len(created) == 4  # inside, outside, outside, outside again (escalated)
        assert [Path(c["command"]).name for c in created] == ["bwrap", "bwrap", "bwrap", "bash"]
        assert "--new-session" in created[0]["args"]


async def test_default_mode_asks_then_runs_in_the_sandbox(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path
) -> None:
    outside = base / "outside.txt"
    fake_gemini.add(
        function_call_response(SHELL, {"command": f"touch in.txt {outside}"}),
        text_response("done"),
    )
    agent = await sandboxed_agent(make_agent, base, fake_gemini, BARE, "default")
    pending = agent.client.start_prompt(agent.session_id, "go")
    asked = await agent.client.next_permission_request(timeout=90)
    assert asked.tool_call["title"].startswith("Run `touch")  # asked as without a sandbox
    asked.select("proceed_once")
    asked = await agent.client.next_permission_request(timeout=60)  # then confined
    assert asked.tool_call["title"].startswith("Outside the sandbox:")
    asked.select("cancel")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert (agent.workspace / "in.txt").exists() and not outside.exists()


@pytest.mark.parametrize("caps", CAPS)
async def test_yolo_stays_confined_without_asking_and_the_network_is_off(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    base: Path,
    caps: dict,
    listener: int,
) -> None:
    fake_gemini.add(
        function_call_response(SHELL, {"command": f"echo x > {base}/outside.txt"}),
        function_call_response(SHELL, {"command": connect(listener)}),
        text_response("done"),
    )
    agent = await sandboxed_agent(make_agent, base, fake_gemini, caps, "yolo")
    assert await agent.prompt("go", timeout=90) == {"stopReason": "end_turn"}
    assert not agent.client.permission_requests
    assert not (base / "outside.txt").exists()
    wrote, connected = outputs(fake_gemini)
    assert "Read-only file system" in wrote
    assert "Connection refused" in connected and "pong" not in connected


async def test_the_network_allowed_reaches_a_listener_outside(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path, listener: int
) -> None:
    fake_gemini.add(
        function_call_response(SHELL, {"command": connect(listener)}),
        function_call_response(SHELL, {"command": f"echo x > {base}/outside.txt"}),
        text_response("done"),
    )
    agent = await sandboxed_agent(
        make_agent, base, fake_gemini, EDITOR, "yolo", env_extra={"ADK_ACP_SANDBOX_NETWORK": "1"}
    )
    assert await agent.prompt("go", timeout=90) == {"stopReason": "end_turn"}
    connected, wrote = outputs(fake_gemini)
    assert "Output: pong" in connected
    assert "Read-only file system" in wrote  # the network, not the file system, is open


@pytest.mark.parametrize("caps", CAPS)
async def test_each_hidden_secret_reads_as_absent(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path, caps: dict
) -> None:
    home = base / "home"
    folders = (".ssh", ".aws", ".config/gcloud", ".config/gh")
    files = (".netrc", ".docker/config.json", ".config/adk-acp/credentials.json")
    for name in folders:
        (home / name).mkdir(parents=True)
        (home / name / "key").write_text(SECRET)
    for name in files:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(SECRET)
    reads = " ".join(f"cat {home}/{n}/key;" for n in folders) + " ".join(
        f"cat {home}/{n};" for n in files
    )
    fake_gemini.add(
        function_call_response(
            SHELL, {"command": f"{reads} cat .env; grep -rs {SECRET[:-1]}[{SECRET[-1]}] {home}"}
        ),
        text_response("done"),
    )
    # the sandbox chosen in the user's settings (Gemini CLI's key), YOLO: nothing asked
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text('{"tools": {"sandbox": true}}')
    agent = await start_agent(
        make_agent,
        base,
        fake_gemini,
        caps,
        args=["--approval-mode", "yolo"],
        files={".env": f"TOKEN={SECRET}\n", "seen.txt": "seen\n"},
    )
    assert await agent.prompt("go", timeout=90) == {"stopReason": "end_turn"}
    (read,) = outputs(fake_gemini)
    assert SECRET not in read
    assert read.count("No such file or directory") == len(folders)
    assert SECRET in (home / ".ssh" / "key").read_text()  # hidden, not touched


@pytest.mark.parametrize("caps", CAPS)
async def test_a_cancel_kills_everything_the_sandboxed_command_started(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path, caps: dict
) -> None:
    marker = f"sleep 4{os.getpid() % 1000}.5"
    command = f"trap '' TERM; {marker} & {marker} & echo started-marker; {marker}"
    fake_gemini.add(function_call_response(SHELL, {"command": command}), text_response("never"))
    agent = await sandboxed_agent(make_agent, base, fake_gemini, caps, "yolo")
    pending = agent.client.start_prompt(agent.session_id, "go")
    await wait_sleepers(marker, 3, timeout_s=60)
    await agent.client.cancel(agent.session_id)
    assert await pending.result(20) == {"stopReason": "cancelled"}
    await wait_sleepers(marker, 0)


async def test_a_sandbox_that_cannot_run_is_told_and_claims_nothing(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path
) -> None:
    fake_bin = base / "bin"
    fake_bin.mkdir()
    bwrap = fake_bin / "bwrap"  # as where user namespaces are forbidden
    bwrap.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    bwrap.chmod(0o755)
    fake_gemini.add(
        function_call_response(SHELL, {"command": "touch made.txt"}), text_response("done")
    )
    agent = await sandboxed_agent(
        make_agent,
        base,
        fake_gemini,
        BARE,
        "autoEdit",
        env_extra={"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"},
    )
    pending = agent.client.start_prompt(agent.session_id, "go")
    asked = await agent.client.next_permission_request(timeout=90)  # asked, as without one
    assert asked.tool_call["title"] == "Run `touch made.txt`"
    asked.select("proceed_once")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert (agent.workspace / "made.txt").exists()
    told = agent.text()
    assert "The workspace-write sandbox cannot run here" in told
    assert "No permissions to create new namespace" in told


@pytest.mark.parametrize("confined", [True, False], ids=["hooksConfig-sandbox", "hooks-as-before"])
async def test_hooks_run_in_the_sandbox_only_when_the_settings_ask(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path, confined: bool
) -> None:
    ws = base / "ws"
    command = f"echo in > {ws}/hook-in.txt; echo out > {base}/hook-out.txt; true"
    settings: dict[str, object] = {
        "tools": {"sandbox": True},
        "hooks": {
            "BeforeTool": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        },
    }
    if confined:
        settings["hooksConfig"] = {"sandbox": True}
    (base / "home" / ".gemini").mkdir(parents=True)
    (base / "home" / ".gemini" / "settings.json").write_text(json.dumps(settings))
    fake_gemini.add(function_call_response(SHELL, {"command": "echo ran"}), text_response("done"))
    agent = await start_agent(make_agent, base, fake_gemini, BARE, args=["--approval-mode", "yolo"])
    assert await agent.prompt("go", timeout=90) == {"stopReason": "end_turn"}
    assert (ws / "hook-in.txt").read_text() == "in\n"
    assert (base / "hook-out.txt").exists() is not confined


async def test_a_stdio_mcp_server_runs_in_the_sandbox_when_its_entry_asks(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path
) -> None:
    from tests.fakes.mcp_server import SCRIPT

    ws = base / "ws"

    def server(name: str, **extra: object) -> dict[str, object]:
        pid_file = str(ws / f"{name}.pid")
        return {
            "command": sys.executable,
            "args": [SCRIPT],
            "env": {"FAKE_MCP_PID_FILE": pid_file},
            **extra,
        }

    settings = {"mcpServers": {"boxed": server("boxed", sandbox=True), "free": server("free")}}
    (base / "home" / ".gemini").mkdir(parents=True)
    (base / "home" / ".gemini" / "settings.json").write_text(json.dumps(settings))
    fake_gemini.add(
        function_call_response("mcp_boxed_echo", {"text": "from the box"}), text_response("done")
    )
    agent = await sandboxed_agent(make_agent, base, fake_gemini, BARE, "yolo")
    assert await agent.prompt("go", timeout=120) == {"stopReason": "end_turn"}
    (echoed,) = outputs(fake_gemini)
    assert echoed == "from the box"  # the sandboxed server serves
    await wait_until(lambda: (ws / "free.pid").exists(), 60, "the free server's pid file")
    # in its own PID namespace the server is process 2 (bwrap's init is 1); the other is not
    assert (ws / "boxed.pid").read_text() == "2"
    assert int((ws / "free.pid").read_text()) > 2


RUNNER = """---
name: runner
description: Runs commands.
tools: [run_shell_command]
---
You run the command you are given and report with complete_task.
"""


@pytest.mark.timeout(240)  # two sessions in one prompt
async def test_a_subagents_commands_are_confined_as_the_main_agents(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path
) -> None:
    command = f"echo in > in.txt; echo out > {base}/outside.txt"
    fake_gemini.add(
        function_call_response("runner", {"task": "run it"}),  # the main agent
        function_call_response(SHELL, {"command": command}),  # the subagent
        function_call_response("complete_task", {"result": "ran"}),
        text_response("done"),
    )
    agent = await start_agent(
        make_agent,
        base,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "yolo", "--sandbox"],
        files={".gemini/agents/runner.md": RUNNER},
    )
    assert await agent.prompt("go", timeout=180) == {"stopReason": "end_turn"}
    assert (agent.workspace / "in.txt").read_text() == "in\n"
    assert not (base / "outside.txt").exists()
    ran = [o for o in outputs(fake_gemini) if "Read-only file system" in o]
    assert len(ran) == 1  # the subagent's command, told that the sandbox stopped its write


@pytest.mark.timeout(180)
async def test_serve_confines_its_sessions_commands(
    fake_gemini: FakeGeminiServer, base: Path
) -> None:
    from tests.e2e.remote_client import remote, start_serve

    ws = base / "ws"
    ws.mkdir()
    command = f"echo in > in.txt; echo out > {base}/outside.txt"
    fake_gemini.add(function_call_response(SHELL, {"command": command}), text_response("done"))
    served = await start_serve(
        base / "home", fake_gemini.base_url, "--sandbox", "--approval-mode", "yolo"
    )
    try:
        async with remote("ws", served) as client:
            session_id = await client.new_session(ws)
            answer = await client.request("session/prompt", client.prompt_params(session_id, "go"))
            assert answer == {"stopReason": "end_turn"}
    finally:
        assert await served.stop() == 0, served.log()
    assert (ws / "in.txt").read_text() == "in\n"
    assert not (base / "outside.txt").exists()
    (ran,) = outputs(fake_gemini)
    assert "Read-only file system" in ran


async def test_auto_edit_runs_a_projects_tests_without_asking(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, base: Path
) -> None:
    test_file = (
        "import pathlib, unittest\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_writes_its_report(self):\n"
        "        pathlib.Path('report.txt').write_text('passed')\n"
    )
    fake_gemini.add(
        function_call_response(SHELL, {"command": "python3 -m unittest test_x"}),
        text_response("done"),
    )
    agent = await start_agent(
        make_agent,
        base,
        fake_gemini,
        BARE,
        args=["--approval-mode", "autoEdit", "--sandbox"],
        files={"test_x.py": test_file},
    )
    assert await agent.prompt("run the tests", timeout=90) == {"stopReason": "end_turn"}
    assert not agent.client.permission_requests
    (ran,) = outputs(fake_gemini)
    assert "OK" in ran and "Exit Code" not in ran
    assert (agent.workspace / "report.txt").read_text() == "passed"
