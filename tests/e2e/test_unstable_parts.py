"""The unstable parts of ACP the agent honours (issue 22), through the real process, each
advertised as `schema.unstable.json` says: a turn's token usage in the prompt answer
(no capability), titles set by the client (`sessionCapabilities.title`,
`session/set_title`), and `$/cancel_request` of a long request (a load)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.spine import MakeAgent, dirs, start_agent, start_session
from tests.e2e.tools_harness import wait_until
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    text_response,
    usage,
)

pytestmark = pytest.mark.e2e


async def test_a_turn_answers_with_its_token_usage(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """The sum over the turn's model calls; a turn whose model said nothing of usage
    answers without it."""
    d = dirs(tmp_path)
    (d.workspace / "notes.txt").write_text("hello\n")
    fake_gemini.add(
        function_call_response(
            "read_file", {"file_path": "notes.txt"}, usage=usage(100, 7, cached=40)
        ),
        text_response("It says hello.", usage=usage(130, 5, thoughts=3)),
        text_response("no usage here"),
    )
    client, sid = await start_session(make_agent, d, fake_gemini)
    assert await client.prompt(sid, "what is in notes.txt?") == {"stopReason": "end_turn"}
    assert client.turn_usages[-1] == {
        "totalTokens": 245,
        "inputTokens": 230,
        "outputTokens": 15,
        "cachedReadTokens": 40,
    }
    assert await client.prompt(sid, "and now?") == {"stopReason": "end_turn"}
    assert client.turn_usages[-1] is None


async def test_titles_set_by_the_client(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini.add(text_response("sure"))
    client = await start_agent(make_agent, d, fake_gemini)
    init = await client.initialize()
    assert init["agentCapabilities"]["sessionCapabilities"]["title"] == {}
    sid = (await client.new_session(d.workspace))["sessionId"]

    answer = await client.request(
        "session/set_title", {"sessionId": sid, "title": " Fix\n the  bug "}
    )
    assert answer == {"title": "Fix the bug"}
    info = await client.wait_for_update(
        lambda u: u["sessionUpdate"] == "session_info_update", session_id=sid
    )
    assert info["title"] == "Fix the bug"
    # the first prompt does not replace a title the client set
    assert await client.prompt(sid, "please refactor everything") == {"stopReason": "end_turn"}
    listed = await client.request("session/list", {"cwd": str(d.workspace)})
    assert [s["title"] for s in listed["sessions"]] == ["Fix the bug"]

    for bad, code in ((" \n", -32602), (None, -32602)):
        with pytest.raises(AcpError) as info_error:
            await client.request("session/set_title", {"sessionId": sid, "title": bad})
        assert info_error.value.code == code
    with pytest.raises(AcpError) as info_error:
        await client.request("session/set_title", {"sessionId": "nope", "title": "x"})
    assert info_error.value.code == -32002
    await client.close()

    # kept in the record: another process lists and loads it with its title
    again = await start_agent(make_agent, d, fake_gemini)
    listed = await again.request("session/list", {"cwd": str(d.workspace)})
    assert [s["title"] for s in listed["sessions"]] == ["Fix the bug"]


def blocking_start_hook(home: Path, armed: Path, marker: Path) -> None:
    """A SessionStart hook that blocks (until killed) once, when `armed` exists."""
    script = home / "slow_start.py"
    script.write_text(
        "import pathlib, sys, time\n"
        f"armed, marker = pathlib.Path({str(armed)!r}), pathlib.Path({str(marker)!r})\n"
        "if armed.exists() and not marker.exists():\n"
        "    marker.write_text('started')\n"
        "    time.sleep(300)\n"
        "sys.stdout.write('{}')\n"
    )
    hooks = {"SessionStart": [{"hooks": [{"type": "command", "command": f"python3 {script}"}]}]}
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}))


async def test_cancel_request_stops_a_long_load_and_the_session_loads_later(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    armed, marker = tmp_path / "armed", tmp_path / "hook-started"
    blocking_start_hook(d.home, armed, marker)
    fake_gemini.add(text_response("recorded answer"))
    client, sid = await start_session(make_agent, d, fake_gemini)
    assert await client.prompt(sid, "remember me") == {"stopReason": "end_turn"}
    assert await client.request("session/close", {"sessionId": sid}) == {}
    armed.write_text("")

    params = {"sessionId": sid, "cwd": str(d.workspace), "mcpServers": []}
    load = client.begin("session/load", params)
    await wait_until(marker.exists, 45, "the load's SessionStart hook")
    assert not load.done()
    await client.cancel_request(load.id)
    with pytest.raises(AcpError) as info:
        await load.result(timeout=30)
    assert info.value.code == -32800

    # nothing was lost and the agent keeps serving: the session loads, with its history
    seen = len(client.updates(sid))
    assert await client.load_session(sid, d.workspace) is not None
    texts = [
        u["content"]["text"]
        for u in client.updates(sid)[seen:]
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
    ]
    assert texts == ["remember me", "recorded answer"]
    # a cancel that arrives after its request was answered changes nothing
    listing = client.begin("session/list", {})
    listed = await listing.result(timeout=30)
    await client.cancel_request(listing.id)
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert (await client.request("session/list", {}))["sessions"][0]["sessionId"] == sid
