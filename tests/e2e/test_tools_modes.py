"""Issue #3 end to end: approval modes and config options through the real agent process.

`session/new` offers modes and config options (mode; model) in sync; set_mode,
set_config_option and the old set_model change the same state; yolo runs an edit
without asking, plan refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.tools_harness import (
    EDITOR,
    MakeAgent,
    function_responses,
    start_agent,
)
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

MODE_IDS = ["default", "autoEdit", "yolo", "plan"]


def by_id(options: list[dict]) -> dict[str, dict]:
    return {o["id"]: o for o in options}


async def test_modes_and_config_options_stay_in_sync(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(text_response("hi"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    sid, client = agent.session_id, agent.client

    modes = agent.new_session["modes"]
    assert modes["currentModeId"] == "default"
    assert [m["id"] for m in modes["availableModes"]] == MODE_IDS
    options = by_id(agent.new_session["configOptions"])
    assert list(options) == ["mode", "model"]
    mode, model = options["mode"], options["model"]
    assert mode["category"] == "mode" and mode["type"] == "select"
    assert mode["currentValue"] == "default"
    assert [o["value"] for o in mode["options"]] == MODE_IDS
    assert model["category"] == "model" and model["type"] == "select"
    assert model["currentValue"] in [o["value"] for o in model["options"]]
    assert "gemini-2.5-flash" in [o["value"] for o in model["options"]]

    # session/set_mode: the option list follows
    seen = len(agent.updates())
    assert await client.set_mode(sid, "plan") == {}
    update = await client.wait_for_update(
        lambda u: u["sessionUpdate"] == "config_option_update", session_id=sid, since=seen
    )
    assert by_id(update["configOptions"])["mode"]["currentValue"] == "plan"

    # session/set_config_option: the complete list back, the mode announced
    seen = len(agent.updates())
    result = await client.set_config_option(sid, "mode", "autoEdit")
    options = by_id(result["configOptions"])
    assert list(options) == ["mode", "model"]
    assert options["mode"]["currentValue"] == "autoEdit"
    update = await client.wait_for_update(
        lambda u: u["sessionUpdate"] == "current_mode_update", session_id=sid, since=seen
    )
    assert update["currentModeId"] == "autoEdit"

    result = await client.set_config_option(sid, "model", "gemini-2.5-flash")
    options = by_id(result["configOptions"])
    assert options["model"]["currentValue"] == "gemini-2.5-flash"
    assert options["mode"]["currentValue"] == "autoEdit"

    # the old session/set_model is still accepted, and reported as a config option
    seen = len(agent.updates())
    await client.set_model(sid, "gemini-2.5-flash-lite")
    update = await client.wait_for_update(
        lambda u: u["sessionUpdate"] == "config_option_update", session_id=sid, since=seen
    )
    options = by_id(update["configOptions"])
    assert options["model"]["currentValue"] == "gemini-2.5-flash-lite"
    assert options["mode"]["currentValue"] == "autoEdit"

    # the chosen model is the one called
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == ["gemini-2.5-flash-lite"]

    for bad in (client.set_mode(sid, "reckless"), client.set_config_option(sid, "colour", "red")):
        with pytest.raises(AcpError) as raised:
            await bad
        assert raised.value.code == -32602
    with pytest.raises(AcpError):
        await client.set_config_option(sid, "mode", "reckless")
    result = await client.set_config_option(sid, "model", "gemini-2.5-flash-lite")
    assert by_id(result["configOptions"])["mode"]["currentValue"] == "autoEdit"


async def test_yolo_writes_without_asking_and_plan_refuses_to_write(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "a.txt", "content": "yolo\n"}),
        text_response("written"),
        function_call_response("write_file", {"file_path": "b.txt", "content": "plan\n"}),
        text_response("I may not write in plan mode."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "yolo"],
        permission_policy="queue",
    )
    assert agent.new_session["modes"]["currentModeId"] == "yolo"
    assert by_id(agent.new_session["configOptions"])["mode"]["currentValue"] == "yolo"

    assert await agent.prompt("write a.txt") == {"stopReason": "end_turn"}
    assert (agent.workspace / "a.txt").read_text() == "yolo\n"
    assert agent.client.permission_requests == []

    await agent.client.set_mode(agent.session_id, "plan")
    assert await agent.prompt("write b.txt") == {"stopReason": "end_turn"}
    assert not (agent.workspace / "b.txt").exists()
    assert agent.client.permission_requests == []
    assert agent.client.files.writes == [str(agent.workspace / "a.txt")]
    refused = agent.tool_calls()[-1]
    assert agent.final(refused["toolCallId"])["status"] == "failed"
    (response,) = function_responses(fake_gemini.generate_requests[3])
    assert "Plan mode is read-only" in response["response"]["error"]
    assert agent.text().endswith("I may not write in plan mode.")
