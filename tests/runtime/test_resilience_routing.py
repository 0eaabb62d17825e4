"""Model routing (issue #4), in-process: with `auto` the classifier (one generateContent
call to flash-lite answering JSON) picks flash or pro; the first routed model of a
prompt is kept for every model call of that prompt (the tool loop) and routing starts
afresh at the next prompt. Explicit models are never classified."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.gemini_server import (
    FakeGeminiServer,
    Reply,
    function_call_response,
    server_error_500,
    text_response,
)
from tests.runtime.resilience_harness import (
    FLASH,
    FLASH_LITE,
    PRO,
    agent_text,
    announced_models,
    end_of,
    harness,
)


def classifier_says(choice: str, reasoning: str = "because") -> Reply:
    return text_response(json.dumps({"reasoning": reasoning, "model_choice": choice}))


def calls(server: FakeGeminiServer) -> list[tuple[str | None, str | None]]:
    return [(r.model, r.action) for r in server.generate_requests]


CLASSIFY = (FLASH_LITE, "generateContent")


def main_call(model: str) -> tuple[str, str]:
    return (model, "streamGenerateContent")


async def test_auto_routes_by_the_classifier_and_keeps_the_model_for_the_whole_tool_loop(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        classifier_says("flash", "a simple listing"),
        function_call_response("list_directory", {"dir_path": "."}),
        function_call_response("read_file", {"file_path": "a.txt"}),
        text_response("listed and read"),
        classifier_says("pro", "needs a design"),
        text_response("a careful design"),
    )
    async with harness(tmp_path, fake_gemini, model="auto") as h:
        (h.workspace / "a.txt").write_text("alpha\n")
        first = await h.prompt("list the files and read a.txt")
        assert end_of(first).reason == "completed"
        assert agent_text(first) == "listed and read"
        # one classification, then flash for all three model calls of the prompt
        assert calls(fake_gemini) == [CLASSIFY, *[main_call(FLASH)] * 3]
        assert announced_models(first)[-1] == FLASH
        assert announced_models(first).count(FLASH) == 1  # announced once per sequence

        second = await h.prompt("now design a plugin system")
        assert agent_text(second) == "a careful design"
        # a new prompt is routed afresh
        assert calls(fake_gemini)[4:] == [CLASSIFY, main_call(PRO)]
        assert announced_models(second)[-1] == PRO
        assert h.session.model_choice == "auto"

        classifier = fake_gemini.generate_requests[0]
        assert "model_choice" in classifier.system_instruction_text
        config = classifier.body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["temperature"] == 0
        assert "list the files and read a.txt" in classifier.last_user_text
        # the second classification sees the conversation so far, without tool calls
        second_classifier = fake_gemini.generate_requests[4]
        assert "now design a plugin system" in second_classifier.last_user_text
        for content in second_classifier.contents:
            assert all(
                "functionCall" not in p and "functionResponse" not in p for p in content["parts"]
            )


async def test_a_failing_classifier_is_skipped_and_auto_falls_back_to_pro(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(server_error_500(), text_response("pro by default"))
    async with harness(tmp_path, fake_gemini, model="auto") as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        assert agent_text(events) == "pro by default"
        assert calls(fake_gemini) == [CLASSIFY, main_call(PRO)]


async def test_an_explicit_model_is_never_classified(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("flash here"))
    async with harness(tmp_path, fake_gemini, model=FLASH) as h:
        events = await h.prompt("hello")
        assert agent_text(events) == "flash here"
        assert calls(fake_gemini) == [main_call(FLASH)]
        assert announced_models(events) == [FLASH]


async def test_plan_mode_with_auto_uses_pro_without_asking_the_classifier(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("a plan"))
    async with harness(tmp_path, fake_gemini, model="auto") as h:
        h.session.set_mode("plan")
        events = await h.prompt("plan a refactor")
        assert agent_text(events) == "a plan"
        assert calls(fake_gemini) == [main_call(PRO)]


async def test_choosing_auto_mid_session_starts_routing_at_the_next_prompt(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("pro answer"), classifier_says("flash"), text_response("quick"))
    async with harness(tmp_path, fake_gemini, model=PRO) as h:
        await h.prompt("first")
        h.session.choose_model("auto")
        events = await h.prompt("second")
        assert agent_text(events) == "quick"
        assert calls(fake_gemini) == [main_call(PRO), CLASSIFY, main_call(FLASH)]
