"""MCP servers of every shape, and a server that is late (issues 18.6 and 19.2), through
the real agent: a server that hangs at start does not hold the first prompt (the user
hears it is late; its tools join once it is ready); a server with only resources or
only prompts is a working server, used by what its `initialize` declares, and the
model reaches resources through `list_mcp_resources` / `read_mcp_resource`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_mcp import commands_offered, start, stdio_entry
from tests.e2e.tools_harness import MakeAgent, function_responses, response_text
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


async def test_a_server_that_hangs_at_start_does_not_hold_the_prompt_and_joins_later(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    servers = [
        stdio_entry("good"),
        stdio_entry("slow", "--mode", "gated", env={"FAKE_MCP_GATE": str(gate)}),
    ]
    # the default wait (the harness sets a long one for every other test)
    client, sid = await start(
        make_agent, tmp_path, fake_gemini, servers, env={"ADK_ACP_MCP_PROMPT_WAIT_S": None}
    )
    await commands_offered(client, sid, "good:review")

    # 'slow' answers nothing until the gate opens, which happens only after this prompt
    fake_gemini.add(text_response("without slow"))
    assert await client.prompt(sid, "hello", timeout=60) == {"stopReason": "end_turn"}
    first = fake_gemini.generate_requests[-1].function_declaration_names
    assert "mcp_good_echo" in first and "mcp_slow_echo" not in first
    assert (
        "MCP server 'slow' is still starting; this prompt goes on without its tools, "
        "which join when it is ready." in client.text_of(sid)
    )
    assert "could not be started" not in client.text_of(sid)

    gate.touch()
    await commands_offered(client, sid, "good:review", "slow:review")
    fake_gemini.add(function_call_response("mcp_slow_echo", {"text": "late"}), text_response("ok"))
    pending = client.start_prompt(sid, "now use slow")
    (await client.next_permission_request()).select("proceed_once")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert "mcp_slow_echo" in fake_gemini.generate_requests[-2].function_declaration_names
    [response] = function_responses(fake_gemini.generate_requests[-1])
    assert response_text(response) == "late"
    text = client.text_of(sid)
    assert text.count("MCP server 'slow' is ready; its tools join now.") == 1
    assert text.count("is still starting") == 1


async def test_servers_of_only_resources_or_only_prompts_work(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    servers = [
        stdio_entry("docs", "--mode", "resources-only"),
        stdio_entry("greeter", "--mode", "prompts-only"),
        stdio_entry("demo"),
    ]
    fake_gemini.add(
        function_call_response("list_mcp_resources", {}),
        function_call_response("read_mcp_resource", {"uri": "docs://only/readme"}),
        text_response("read it"),
    )
    client, sid = await start(make_agent, tmp_path, fake_gemini, servers)
    # the resource tools are read-only: allowed without asking
    assert await client.prompt(sid, "what resources are there?", timeout=60) == {
        "stopReason": "end_turn"
    }
    assert client.permission_requests == []
    assert "could not be" not in client.text_of(sid)
    names = fake_gemini.generate_requests[0].function_declaration_names
    assert {"list_mcp_resources", "read_mcp_resource", "mcp_demo_echo"} <= set(names)
    assert not any(n.startswith(("mcp_docs_", "mcp_greeter_")) for n in names)
    listed = response_text(function_responses(fake_gemini.generate_requests[1])[0])
    assert "docs: docs://only/readme | readme" in listed
    assert "demo: notes://team/guidelines | guidelines" in listed
    read = response_text(function_responses(fake_gemini.generate_requests[2])[0])
    assert read == "Only resources here: the readme."

    # a resource of the resources-only server mentioned as @<uri>
    fake_gemini.add(text_response("noted"))
    await client.prompt(sid, "see @docs://only/readme", timeout=60)
    assert "Only resources here" in json.dumps(fake_gemini.generate_requests[-1].contents)

    # the prompts-only server's prompt is a command
    await commands_offered(client, sid, "greeter:greet")
    fake_gemini.add(text_response("Hello, Ada!"))
    assert await client.prompt(sid, "/greeter:greet Ada", timeout=60) == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests[-1].last_user_text == "Say hello to Ada."
