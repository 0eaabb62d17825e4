"""MCP beyond tools (issue 11): servers from Gemini CLI's `mcpServers` settings merged
with the editor's, trust, include/exclude, "Allow all tools of this server", a
restart after a crash, `tools/list_changed`, prompts as slash commands, resources
mentioned with `@<uri>`; plan mode offers and runs only read-only tools, trust or not
(issue 18)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpTestClient
from tests.e2e.test_mcp import commands_offered, stdio_entry
from tests.e2e.tools_harness import (
    AGENT,
    CLEARED_ENV,
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response
from tests.fakes.mcp_server import SCRIPT as SERVER

pytestmark = pytest.mark.e2e


async def start(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    *,
    settings: dict[str, Any] | str,
    editor_servers: list[dict[str, Any]] = (),  # type: ignore[assignment]
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> tuple[AcpTestClient, str, Path]:
    """An agent whose workspace settings are `settings` (as JSON, or the file's text),
    with `env` added to its environment, and a session."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (workspace / ".gemini").mkdir(parents=True)
    home.mkdir()
    text = settings if isinstance(settings, str) else json.dumps(settings)
    (workspace / ".gemini" / "settings.json").write_text(text)
    full: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    full |= {"HOME": str(home), "GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": fake.base_url}
    env = full | (env or {})
    client = await make_agent([*AGENT, *args], env, cwd=workspace, permission_policy="queue")
    await client.initialize(EDITOR)
    new = await client.new_session(workspace.resolve(), mcp_servers=list(editor_servers))
    return client, new["sessionId"], workspace.resolve()


def server_settings(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [SERVER], **extra}


async def test_settings_servers_trust_filters_and_the_editor_winning_a_clash(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings = {
        "mcpServers": {
            "team": server_settings(trust=True, excludeTools=["crash", "fail"], timeout=5000),
            "demo": server_settings(env={"WHO": "settings"}),
        }
    }
    fake_gemini.add(
        function_call_response("mcp_team_echo", {"text": "hi"}),
        function_call_response("mcp_demo_env_value", {"name": "WHO"}),
        text_response("done"),
    )
    client, sid, _ = await start(
        make_agent,
        tmp_path,
        fake_gemini,
        settings=settings,
        editor_servers=[stdio_entry("demo", env={"WHO": "editor"})],
    )
    await commands_offered(client, sid, "team:review", "demo:review")
    pending = client.start_prompt(sid, "use the servers")
    # the trusted server's call is not asked; the editor's demo is
    request = await client.next_permission_request()
    assert request.tool_call["title"] == "demo: env_value"
    options = {o["optionId"]: o["name"] for o in request.options}
    assert options["proceed_always_server"] == "Allow all tools of this server"
    request.select("proceed_once")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    first, second, third = fake_gemini.generate_requests
    names = first.function_declaration_names
    assert "mcp_team_echo" in names and "mcp_team_crash" not in names
    assert "mcp_team_fail" not in names
    assert response_text(function_responses(second)[0]) == "hi"
    assert response_text(function_responses(third)[0]) == "editor"  # the editor's server won


async def test_allow_all_tools_of_a_server_restart_list_changed_prompts_and_resources(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    client, sid, _ = await start(
        make_agent, tmp_path, fake_gemini, settings={"mcpServers": {"demo": server_settings()}}
    )
    # the server's prompt is offered as a command once the server is up
    await commands_offered(client, sid, "demo:review")

    # "Allow all tools of this server": later calls of its other tools are not asked
    fake_gemini.add(
        function_call_response("mcp_demo_echo", {"text": "a"}),
        function_call_response("mcp_demo_grow", {}),
        text_response("ok"),
    )
    pending = client.start_prompt(sid, "echo then grow")
    (await client.next_permission_request()).select("proceed_always_server")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert len(client.permission_requests) == 1

    # the tool list changed: the next request offers the new tool
    fake_gemini.add(text_response("seen"))
    assert await client.prompt(sid, "what tools now?") == {"stopReason": "end_turn"}
    assert "mcp_demo_extra" in fake_gemini.generate_requests[-1].function_declaration_names
    assert "changed its tools" in client.text_of(sid)

    # an MCP prompt as a slash command: its text goes to the model as the user's message
    fake_gemini.add(text_response("reviewed"))
    assert await client.prompt(sid, "/demo:review a.py focus=style") == {"stopReason": "end_turn"}
    assert (
        fake_gemini.generate_requests[-1].last_user_text == "Please review a.py, looking for style."
    )

    # a resource mentioned as @<uri> is read into the prompt
    before = len(client.text_of(sid))
    await client.prompt(sid, "/mcp")
    assert "@notes://team/guidelines" in client.text_of(sid)[before:]
    fake_gemini.add(text_response("will do"))
    await client.prompt(sid, "follow @notes://team/guidelines please")
    contents = json.dumps(fake_gemini.generate_requests[-1].contents)
    assert "every function has a docstring" in contents

    # a crash: told, restarted once, and its tools work again
    fake_gemini.add(
        function_call_response("mcp_demo_crash", {}),
        text_response("it crashed"),
    )
    await client.prompt(sid, "crash it")
    for _ in range(40):  # /mcp shows the server's state without a model call
        before = len(client.text_of(sid))
        await client.prompt(sid, "/mcp")
        if "**demo** (settings): ready" in client.text_of(sid)[before:]:
            break
        await asyncio.sleep(0.5)
    fake_gemini.add(
        function_call_response("mcp_demo_echo", {"text": "back"}),
        text_response("echoed"),
    )
    assert await client.prompt(sid, "echo again") == {"stopReason": "end_turn"}
    assert response_text(function_responses(fake_gemini.generate_requests[-1])[0]) == "back"
    text = client.text_of(sid)
    assert "stopped (exited with code 7); restarting it." in text
    assert "MCP server 'demo' was restarted." in text


async def test_an_image_from_a_tool_reaches_the_model_as_media(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings = {"mcpServers": {"demo": server_settings(trust=True)}}
    fake_gemini.add(function_call_response("mcp_demo_picture", {}), text_response("a PNG"))
    client, sid, _ = await start(make_agent, tmp_path, fake_gemini, settings=settings)
    await commands_offered(client, sid, "demo:review")
    assert await client.prompt(sid, "show me") == {"stopReason": "end_turn"}
    last = fake_gemini.generate_requests[-1].contents[-1]
    response = next(p["functionResponse"] for p in last["parts"] if "functionResponse" in p)
    assert "_media" not in response["response"]
    assert "attached" in response["response"]["output"]
    [blob] = [p["inlineData"] for p in last["parts"] if "inlineData" in p]
    assert blob.get("mimeType", blob.get("mime_type")) == "image/png" and blob["data"]
    # and again at the next call of the session: moved once, kept
    fake_gemini.add(text_response("still a PNG"))
    await client.prompt(sid, "and?")
    history = fake_gemini.generate_requests[-1].contents
    assert sum("inlineData" in p for c in history for p in c["parts"]) == 1


async def test_http_and_sse_servers_from_settings_with_headers_url_tries_http_then_sse(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    from tests.fakes.mcp_server import http_servers

    with http_servers("http", "sse") as (http_port, sse_port):
        settings = {
            "mcpServers": {
                "web": {
                    "httpUrl": f"http://127.0.0.1:{http_port}/mcp",
                    "headers": {"X-Token": "h-token"},
                    "trust": True,
                },
                # `url` without `type`: streamable HTTP first, then SSE (as Gemini CLI)
                "events": {
                    "url": f"http://127.0.0.1:{sse_port}/sse",
                    "headers": {"X-Token": "s-token"},
                    "trust": True,
                },
                "auto": {
                    "url": f"http://127.0.0.1:{http_port}/mcp",
                    "headers": {"X-Token": "a-token"},
                    "trust": True,
                },
            }
        }
        fake_gemini.add(
            function_call_response("mcp_web_header", {"name": "X-Token"}),
            function_call_response("mcp_events_header", {"name": "X-Token"}),
            function_call_response("mcp_auto_header", {"name": "X-Token"}),
            text_response("all three"),
        )
        client, sid, _ = await start(make_agent, tmp_path, fake_gemini, settings=settings)
        await commands_offered(client, sid, "web:review", "events:review", "auto:review")
        assert await client.prompt(sid, "headers?") == {"stopReason": "end_turn"}
        _, second, third, fourth = fake_gemini.generate_requests
        assert response_text(function_responses(second)[0]) == "h-token"
        assert response_text(function_responses(third)[0]) == "s-token"
        assert response_text(function_responses(fourth)[0]) == "a-token"
        assert "could not be" not in client.text_of(sid)
        await client.close()


async def test_plan_mode_offers_and_runs_only_read_only_tools_of_a_trusted_server(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    # `echo` is marked readOnlyHint by the server, `env_value` is not
    settings = {
        "mcpServers": {"team": server_settings(trust=True, includeTools=["echo", "env_value"])}
    }
    fake_gemini.add(
        function_call_response("mcp_team_env_value", {"name": "HOME"}),
        function_call_response("mcp_team_echo", {"text": "read-only"}),
        text_response("planned"),
        text_response("both offered again"),
    )
    client, sid, _ = await start(
        make_agent, tmp_path, fake_gemini, settings=settings, args=["--approval-mode", "plan"]
    )
    assert await client.prompt(sid, "plan with the server", timeout=90) == {
        "stopReason": "end_turn"
    }
    first, second, third = fake_gemini.generate_requests
    offered = set(first.function_declaration_names)
    assert "mcp_team_echo" in offered and "mcp_team_env_value" not in offered
    (refused,) = function_responses(second)  # not offered, so not run
    assert "no tool with that name" in refused["response"]["error"]
    assert response_text(function_responses(third)[0]) == "read-only"  # trusted: not asked
    assert client.permission_requests == []

    # out of plan mode the trusted server's other tool is offered again
    await client.set_mode(sid, "default")
    assert await client.prompt(sid, "and now?", timeout=60) == {"stopReason": "end_turn"}
    assert "mcp_team_env_value" in fake_gemini.generate_requests[-1].function_declaration_names


async def test_settings_with_comments_and_env_references_start_the_server(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings = """{
  /* a team server: its script and its token come from the environment */
  "mcpServers": {
    "demo": {
      "command": "$PYTHON_BIN",
      "args": ["${FAKE_SERVER_SCRIPT}"],  // Gemini CLI expands both forms
      "env": {"WHO": "team-${TEAM_NAME}", "KEEP": "$NOT_SET_ANYWHERE"},
      "trust": true
    }
  }
}"""
    env = {"PYTHON_BIN": sys.executable, "FAKE_SERVER_SCRIPT": SERVER, "TEAM_NAME": "blue"}
    fake_gemini.add(
        function_call_response("mcp_demo_env_value", {"name": "WHO"}),
        function_call_response("mcp_demo_env_value", {"name": "KEEP"}),
        text_response("done"),
    )
    client, sid, _ = await start(make_agent, tmp_path, fake_gemini, settings=settings, env=env)
    await commands_offered(client, sid, "demo:review")
    assert await client.prompt(sid, "who?", timeout=60) == {"stopReason": "end_turn"}
    _, second, third = fake_gemini.generate_requests
    assert response_text(function_responses(second)[0]) == "team-blue"
    assert response_text(function_responses(third)[0]) == "$NOT_SET_ANYWHERE"
    assert "could not be" not in client.text_of(sid)
