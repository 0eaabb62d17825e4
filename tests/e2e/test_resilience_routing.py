"""Model routing over ACP (issue #4): the model option offers `auto`; with it, a
classifier call (generateContent to flash-lite, answering JSON) picks flash or pro
for a prompt, and that model serves every model call of the prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.resilience_harness import FLASH, FLASH_LITE, PRO, MakeAgent, model_option, start
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    Reply,
    function_call_response,
    text_response,
)

pytestmark = pytest.mark.e2e

CLASSIFY = (FLASH_LITE, "generateContent")


def stream(model: str) -> tuple[str, str]:
    return (model, "streamGenerateContent")


def classifier_says(choice: str) -> Reply:
    return text_response(json.dumps({"reasoning": "why not", "model_choice": choice}))


async def test_auto_is_offered_and_routes_each_prompt_by_the_classifier(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        classifier_says("flash"),
        function_call_response("list_directory", {"dir_path": "."}),
        text_response("one file"),
        classifier_says("pro"),
        text_response("deep thoughts"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    option = model_option(agent.session["configOptions"])
    assert "auto" in [o["value"] for o in option["options"]]

    result = await agent.client.set_config_option(agent.session_id, "model", "auto")
    assert model_option(result["configOptions"])["currentValue"] == "auto"

    assert await agent.prompt("what is in this folder?") == {"stopReason": "end_turn"}
    assert agent.text() == "one file"
    calls = [(r.model, r.action) for r in fake_gemini.generate_requests]
    # classified once; flash for the tool call and for the answer after it
    assert calls == [CLASSIFY, stream(FLASH), stream(FLASH)]
    assert "what is in this folder?" in fake_gemini.generate_requests[0].last_user_text

    assert await agent.prompt("design a plugin architecture") == {"stopReason": "end_turn"}
    calls = [(r.model, r.action) for r in fake_gemini.generate_requests]
    assert calls[3:] == [CLASSIFY, stream(PRO)]
    assert agent.text().endswith("deep thoughts")
    # routing never changes the user's choice
    assert agent.updates("config_option_update") == []
    assert agent.client.permission_requests == []
