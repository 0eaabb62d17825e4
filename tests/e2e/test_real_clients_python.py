"""The official ACP Python SDK client (`agent-client-protocol`, pinned) driving the
real `adk-acp` (issue #8): a new session, a read, a new file created with its
diff and approval, an edit, a terminal command, and a cancel during a command.

The client is written as SDK users write one: its fs handlers read and write the
disk and let exceptions through, so a missing file is answered by the SDK with
-32603 "Internal error" (ENOENT in the details), as the official clients do. The
SDK validates every message it receives against its schema models; the agent
validates what the client sends.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import schema
from acp.stdio import spawn_agent_process

from tests.e2e.acp_client import CLEARED_ENV
from tests.e2e.model_script import call, text
from tests.fakes.gemini_server import FakeGeminiServer

pytestmark = pytest.mark.e2e


class SdkClient:
    """A client as the SDK's users write it: real disk, real processes."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[schema.RequestPermissionRequest] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.terminals: dict[str, asyncio.subprocess.Process] = {}
        self.outputs: dict[str, bytes] = {}
        self.terminal_started = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[schema.PermissionOption], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.permissions.append(
            schema.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=options
            )
        )
        allow = next(o for o in options if o.kind == "allow_once")
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        return schema.ReadTextFileResponse(content=Path(path).read_text())  # ENOENT → -32603

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse:
        self.writes.append(path)
        Path(path).write_text(content)
        return schema.WriteTextFileResponse()  # `{}`: the schema wants an object, not null

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> schema.CreateTerminalResponse:
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"t{len(self.terminals) + 1}"
        self.terminals[terminal_id] = process
        self.outputs[terminal_id] = b""
        self.terminal_started.set()
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    async def _drain(self, terminal_id: str) -> None:
        process = self.terminals[terminal_id]
        assert process.stdout is not None
        self.outputs[terminal_id] += await process.stdout.read()
        await process.wait()

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self._drain(terminal_id)
        code = self.terminals[terminal_id].returncode
        if code is not None and code < 0:
            return schema.WaitForTerminalExitResponse(signal="SIGKILL")
        return schema.WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        process = self.terminals[terminal_id]
        status = None
        if process.returncode is not None:
            status = schema.TerminalExitStatus(exit_code=max(process.returncode, 0))
        return schema.TerminalOutputResponse(
            output=self.outputs[terminal_id].decode(errors="replace"),
            truncated=False,
            exit_status=status,
        )

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        process = self.terminals[terminal_id]
        if process.returncode is None:
            os.killpg(process.pid, 9)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        await self.kill_terminal(session_id, terminal_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    def text(self) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if isinstance(u, schema.AgentMessageChunk)
            and isinstance(u.content, schema.TextContentBlock)
        )


def agent_process(client: SdkClient, script: Path, env: dict[str, str], workspace: Path) -> Any:
    """The SDK's `spawn_agent_process` on the agent, scripted by `script`."""
    return spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "acp_server.cli",
        "--fake-responses",
        str(script),
        env=env,
        cwd=str(workspace),
    )


async def test_the_official_python_client_reads_creates_edits_runs_and_cancels(
    tmp_path: Path,
) -> None:
    home, workspace = tmp_path / "home", (tmp_path / "ws").resolve()
    home.mkdir()
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    script = tmp_path / "model.jsonl"
    script.write_text(
        "\n".join(
            [
                call("read_file", {"file_path": "a.txt"}),
                text("read it"),
                call("write_file", {"file_path": "new.txt", "content": "fresh\n"}),
                text("created"),
                call(
                    "replace",
                    {
                        "file_path": "a.txt",
                        "instruction": "beta",
                        "old_string": "alpha",
                        "new_string": "beta",
                    },
                ),
                text("edited"),
                call("run_shell_command", {"command": "echo from-the-terminal"}),
                text("ran"),
                call("run_shell_command", {"command": "sleep 60"}),
                text("never"),
            ]
        )
        + "\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    client = SdkClient()
    async with agent_process(client, script, env, workspace) as (conn, _process):
        caps = schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
        )
        init = await conn.initialize(protocol_version=1, client_capabilities=caps)
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id

        async def prompt(text: str) -> str:
            block = schema.TextContentBlock(type="text", text=text)
            answer = await conn.prompt(session_id=sid, prompt=[block])
            return answer.stop_reason

        assert await prompt("read a.txt") == "end_turn"
        assert client.reads == [str(workspace / "a.txt")]

        assert await prompt("create new.txt") == "end_turn"
        (asked,) = client.permissions
        (diff,) = asked.tool_call.content or []
        assert isinstance(diff, schema.FileEditToolCallContent)
        assert diff.path == str(workspace / "new.txt") and diff.old_text is None
        assert diff.new_text == "fresh\n"
        assert (workspace / "new.txt").read_text() == "fresh\n"
        assert client.reads == [str(workspace / "a.txt")]  # never asked for the missing file

        assert await prompt("edit a.txt") == "end_turn"
        assert (workspace / "a.txt").read_text() == "beta\n"
        assert client.writes == [str(workspace / "new.txt"), str(workspace / "a.txt")]

        assert await prompt("run a command") == "end_turn"
        assert b"from-the-terminal" in client.outputs["t1"]

        client.terminal_started.clear()
        running = asyncio.create_task(prompt("run a long command"))
        await asyncio.wait_for(client.terminal_started.wait(), 20)
        await conn.cancel(session_id=sid)
        assert await asyncio.wait_for(running, 20) == "cancelled"
        # killed, not left running (reaped a moment after the kill: waited for, not raced)
        assert await asyncio.wait_for(client.terminals["t2"].wait(), 20) < 0
        assert "read it" in client.text() and "ran" in client.text()

    # The editor is reopened: a new process lists the thread and loads it back.
    client = SdkClient()
    async with agent_process(client, script, env, workspace) as (conn, _process):
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "read a.txt"
        loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None
        users = [
            u.content.text
            for u in client.updates
            if isinstance(u, schema.UserMessageChunk)
            and isinstance(u.content, schema.TextContentBlock)
        ]
        assert users[:4] == ["read a.txt", "create new.txt", "edit a.txt", "run a command"]
        starts = [u for u in client.updates if isinstance(u, schema.ToolCallStart)]
        assert [s.status for s in starts][:4] == ["completed"] * 4
        assert "read it" in client.text() and "edited" in client.text()
        closed = await conn.close_session(session_id=sid)
        assert closed is not None


async def test_the_official_python_client_on_todays_features(tmp_path: Path) -> None:
    """The pinned SDK's client on today's ACP (issue 22): it opts in to notices and
    compaction (through its raw connection: its models predate them) and takes the
    updates off the wire; auth methods, tool-call names, a turn's usage (its own
    `PromptResponse.usage`), a client-set title, and a load cancelled by
    `$/cancel_request`."""
    from acp.connection import StreamDirection, StreamEvent
    from acp.exceptions import RequestError

    from tests.e2e.test_real_clients_node import features_script

    home, workspace = tmp_path / "home", (tmp_path / "ws").resolve()
    home.mkdir()
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    script, armed, marker = features_script(tmp_path, home)
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env["GEMINI_API_KEY"] = "from-the-environment"
    wire: list[StreamEvent] = []
    client = SdkClient()
    async with agent_process(client, script, env, workspace) as (conn, _process):
        raw = conn._conn  # the SDK's JSON-RPC connection, for what its models predate
        raw.add_observer(wire.append)
        caps = {
            "fs": {"readTextFile": True, "writeTextFile": False},
            "auth": {"terminal": True},
            "session": {"notices": {}, "compaction": {}},
        }
        init = await raw.send_request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": caps}
        )
        types = sorted(m.get("type", "agent") for m in init["authMethods"])
        assert types == ["agent", "agent", "terminal"]
        with pytest.raises(RequestError) as refused:
            await conn.authenticate(method_id="login")
        assert refused.value.code == -32602
        assert await conn.authenticate(method_id="gemini-api-key") is not None

        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        titled = await raw.send_request(
            "session/set_title", {"sessionId": sid, "title": "From Python"}
        )
        assert titled == {"title": "From Python"}

        def prompt(text: str) -> Any:
            return conn.prompt(
                session_id=sid, prompt=[schema.TextContentBlock(type="text", text=text)]
            )

        answer = await prompt("read a.txt")
        assert answer.stop_reason == "end_turn"
        assert answer.usage is not None and answer.usage.total_tokens == 108
        assert (await prompt("/compress")).stop_reason == "end_turn"

        def updates() -> list[dict[str, Any]]:
            return [
                e.message["params"]["update"]
                for e in wire
                if e.direction == StreamDirection.INCOMING
                and e.message.get("method") == "session/update"
            ]

        names = [u.get("name") for u in updates() if u["sessionUpdate"] == "tool_call"]
        assert names == ["read_file"]
        notices = [u["title"] for u in updates() if u["sessionUpdate"] == "notice"]
        assert notices == ["Reads are logged."]
        assert [u["status"] for u in updates() if u["sessionUpdate"] == "compaction_update"][
            -1
        ] == "completed"

        await conn.close_session(session_id=sid)
        armed.write_text("")
        loading = asyncio.create_task(
            conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        )
        for _ in range(3000):
            if marker.exists():
                break
            await asyncio.sleep(0.02)
        assert marker.exists(), "the load's SessionStart hook never started"
        (load_id,) = [
            e.message["id"]
            for e in wire
            if e.direction == StreamDirection.OUTGOING and e.message.get("method") == "session/load"
        ]
        await raw.send_notification("$/cancel_request", {"requestId": load_id})
        with pytest.raises(RequestError) as cancelled:
            await asyncio.wait_for(loading, 30)
        assert cancelled.value.code == -32800
        loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None
        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.title for s in listed.sessions] == ["From Python"]


def schema_problems(wire: list[Any]) -> list[str]:
    """Every message of a raw connection's observed `wire` (its `StreamEvent`s, in
    order), both ways, checked against the official ACP schema (`official_schema`:
    skipped, with its warning, where npm cannot install it)."""
    from acp.connection import StreamDirection

    from tests.e2e.official_schema import TrafficCheck, official_schema

    schema = official_schema()
    if schema is None:
        return []
    check, sent, problems = TrafficCheck(schema), {}, []
    for event in wire:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                sent[message["id"]] = message["method"]
            check.client_message(message)
            continue
        answered = None if "method" in message else sent.get(message.get("id"))
        if problem := check.agent_message(message, answered):
            problems.append(problem)
    return problems + [f"client: {p}" for p in check.client_problems]


async def test_the_official_python_client_on_subagents_plans_and_system_prompts(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    """The pinned SDK's client opts in to subagent sessions and plan operations and sends
    `systemPrompt` through its raw connection (its models predate them), answers the
    child session's permission request through its own handler, and takes the updates
    off the wire (its models know `plan_update` and `plan_removed`, not `subagent_update`:
    it logs those as invalid and drops them); every message, both ways, checked against
    the official schema."""
    from acp.connection import StreamDirection, StreamEvent

    from tests.e2e.test_real_clients_node import check_subplan, subplan_setting

    home, workspace = tmp_path / "home", (tmp_path / "ws").resolve()
    home.mkdir()
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    subplan_setting(fake_gemini_thread, workspace, env)
    wire: list[StreamEvent] = []
    client = SdkClient()
    spawned = spawn_agent_process(
        client, sys.executable, "-m", "acp_server.cli", env=env, cwd=str(workspace)
    )
    async with spawned as (conn, _process):
        raw = conn._conn  # the SDK's JSON-RPC connection, for what its models predate
        raw.add_observer(wire.append)
        caps = {"fs": {"readTextFile": True, "writeTextFile": True}, "subagents": {}, "plan": {}}
        init = await raw.send_request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": caps}
        )
        assert init["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {
            "mode": {"override": {}}
        }

        async def open_session(method: str, mode: str, text: str, **more: Any) -> Any:
            prompt = {"mode": mode, "content": [{"type": "text", "text": text}]}
            params = {"cwd": str(workspace), "mcpServers": [], "systemPrompt": prompt, **more}
            return await raw.send_request(method, params)

        async def prompt(session_id: str, text: str) -> str:
            block = schema.TextContentBlock(type="text", text=text)
            answer = await conn.prompt(session_id=session_id, prompt=[block])
            return answer.stop_reason

        def updates() -> list[tuple[str, dict[str, Any]]]:
            return [
                (e.message["params"]["sessionId"], e.message["params"]["update"])
                for e in wire
                if e.direction == StreamDirection.INCOMING
                and e.message.get("method") == "session/update"
            ]

        sid = (await open_session("session/new", "append", "Answer in French."))["sessionId"]
        assert await prompt(sid, "get a.py reviewed") == "end_turn"
        assert await prompt(sid, "plan it") == "end_turn"
        live = updates()
        poet = await open_session("session/new", "override", "Be a poet.")
        assert await prompt(poet["sessionId"], "hi") == "end_turn"
        await conn.close_session(session_id=sid)
        seen = len(updates())
        await open_session("session/load", "override", "Be terse.", sessionId=sid)
        replayed = updates()[seen:]
        assert await prompt(sid, "again") == "end_turn"

    asked = [p.session_id for p in client.permissions]  # answered by the SDK's handler
    check_subplan(fake_gemini_thread, sid, live, replayed, asked)
    assert (workspace / "review.md").read_text() == "ok\n"
    assert schema_problems(wire) == []
