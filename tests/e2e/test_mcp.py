"""Client-provided MCP servers end to end: the real agent, a real stdio MCP server
(`tests/fakes/mcp_server.py`) and the fake Gemini API as the model.

An MCP tool call goes through the scheduler like any tool: the editor is asked
(title `<server>: <tool>`, kind from the tool's annotations), the result reaches the
next model request; servers that cannot start never fail `session/new`, and the next
prompt tells the user; no server process outlives the agent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpTestClient, JsonObject
from tests.e2e.tools_harness import (
    AGENT,
    CLEARED_ENV,
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
    wait_until,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    function_calls_response,
    text_response,
)
from tests.fakes.mcp_server import SCRIPT as SERVER
from tests.fakes.mcp_server import http_servers

pytestmark = pytest.mark.e2e


def stdio_entry(name: str, *args: str, env: dict[str, str] | None = None) -> JsonObject:
    return {
        "name": name,
        "command": sys.executable,
        "args": [SERVER, *args],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }


async def start(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    servers: list[JsonObject],
    env: dict[str, str | None] | None = None,
) -> tuple[AcpTestClient, str]:
    """An agent (with `env` over the test environment) and a session with `servers`."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    full: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    full |= {"HOME": str(home), "GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": fake.base_url}
    env = full | (env or {})
    client = await make_agent(AGENT, env, cwd=workspace, permission_policy="queue")
    await client.initialize(EDITOR)
    new = await client.new_session(workspace.resolve(), mcp_servers=servers)
    return client, new["sessionId"]


async def commands_offered(client: AcpTestClient, sid: str, *names: str) -> None:
    """Waits until the editor is offered the commands `names` (a server's prompts: it is
    ready)."""
    await client.wait_for_update(
        lambda u: (
            u["sessionUpdate"] == "available_commands_update"
            and set(names) <= {c["name"] for c in u["availableCommands"]}
        ),
        session_id=sid,
        timeout=60,
    )


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def test_an_mcp_call_is_approved_in_the_editor_and_a_server_that_dies_is_reported(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("mcp_demo_echo", {"text": "hi", "times": 2}),
        text_response("the server said hihi"),
    )
    client, session_id = await start(make_agent, tmp_path, fake_gemini, [stdio_entry("demo")])
    await commands_offered(client, session_id, "demo:review")  # the server is up

    pending = client.start_prompt(session_id, "echo hi twice")
    request = await client.next_permission_request()
    call = request.tool_call
    assert call["title"] == "demo: echo"
    assert call["kind"] == "read"  # the tool declares readOnlyHint
    assert call["rawInput"] == {"text": "hi", "times": 2}
    assert "proceed_once" in {o["optionId"] for o in request.options}
    request.select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}

    first, second = fake_gemini.generate_requests[:2]
    assert "mcp_demo_echo" in first.function_declaration_names
    assert "read_file" in first.function_declaration_names
    [response] = function_responses(second)
    assert response["name"] == "mcp_demo_echo"
    assert response_text(response) == "hihi"
    finals = [u for u in client.updates(session_id, "tool_call_update") if u.get("status")]
    assert finals[-1]["status"] == "completed"

    # The server dies in the middle of a call: the call fails, and the user is told.
    fake_gemini.add(
        function_call_response("mcp_demo_crash", {}),
        text_response("it crashed"),
        text_response("ok"),
    )
    pending = client.start_prompt(session_id, "crash it")
    (await client.next_permission_request()).select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    [response] = function_responses(fake_gemini.generate_requests[3])
    assert "Connection closed" in response["response"]["error"]
    # The notice comes once: within that turn if the exit is known in time, else at the next.
    assert await client.prompt(session_id, "and now?", timeout=30) == {"stopReason": "end_turn"}
    assert client.text_of(session_id).count("MCP server 'demo' stopped (exited with code 7)") == 1


async def test_servers_that_cannot_start_do_not_fail_the_session_and_the_next_prompt_says_so(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    fake_gemini.add(
        function_call_response("mcp_good_env_value", {"name": "FROM_EDITOR"}),
        text_response("done"),
    )
    servers = [
        {"name": "missing", "command": str(tmp_path / "no-such-server"), "args": [], "env": []},
        stdio_entry("quitter", "--mode", "exit"),
        stdio_entry(
            "good", env={"FROM_EDITOR": "editor value", "FAKE_MCP_PID_FILE": str(pid_file)}
        ),
    ]
    client, session_id = await start(make_agent, tmp_path, fake_gemini, servers)
    await commands_offered(client, session_id, "good:review")

    pending = client.start_prompt(session_id, "go")
    request = await client.next_permission_request()
    assert request.tool_call["title"] == "good: env_value"
    assert request.tool_call["kind"] == "other"
    request.select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}

    text = client.text_of(session_id)
    assert "MCP server 'missing' could not be started (command not found" in text
    assert "MCP server 'quitter' could not be started (exited with code 3" in text
    assert "refusing to start" in text
    assert "MCP server 'good'" not in text
    [response] = function_responses(fake_gemini.generate_requests[1])
    assert response_text(response) == "editor value"

    # Each notice is shown once: the next prompt has none.
    fake_gemini.add(text_response("again"))
    before = len(client.text_of(session_id))
    assert await client.prompt(session_id, "again", timeout=30) == {"stopReason": "end_turn"}
    assert "MCP server" not in client.text_of(session_id)[before:]

    # No server process outlives the agent.
    pid = int(pid_file.read_text())
    assert alive(pid)
    await client.close()
    await wait_until(lambda: not alive(pid), 5.0, "the MCP server to be stopped with the agent")


async def test_http_and_sse_servers_from_session_new_get_their_headers(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_calls_response(
            [("mcp_web_header", {"name": "X-Token"}), ("mcp_events_header", {"name": "X-Token"})]
        ),
        text_response("done"),
    )
    with http_servers("http", "sse") as (http_port, sse_port):
        servers = [
            {"type": "http", "name": "web", "url": f"http://127.0.0.1:{http_port}/mcp",
             "headers": [{"name": "X-Token", "value": "h-token"}]},
            {"type": "sse", "name": "events", "url": f"http://127.0.0.1:{sse_port}/sse",
             "headers": [{"name": "X-Token", "value": "s-token"}]},
        ]  # fmt: skip
        client, session_id = await start(make_agent, tmp_path, fake_gemini, servers)
        init = next(
            m["result"]
            for side, m in client.transcript
            if side == "agent" and "agentCapabilities" in (m.get("result") or {})
        )
        assert init["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
        await commands_offered(client, session_id, "web:review", "events:review")
        pending = client.start_prompt(session_id, "tokens?")
        for _ in range(2):
            (await client.next_permission_request()).select("proceed_once")
        assert await pending.result(30) == {"stopReason": "end_turn"}
    answers = {
        r["name"]: response_text(r) for r in function_responses(fake_gemini.generate_requests[1])
    }
    assert answers == {"mcp_web_header": "h-token", "mcp_events_header": "s-token"}
