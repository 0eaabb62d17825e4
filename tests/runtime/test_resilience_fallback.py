"""Quota fallback inside the model (issue #4), in-process: a real ADK Runner, the fake
Gemini server, and a scripted Host answering the fallback question.

The retry + fallback loop lives in `GcliAgentModel` (`GcliResilience`): a
fallback re-dispatches the same request with the fallback model, so these tests
look at the requests the server received (the model in the URL, the history and
the tool declarations in the body) and at the session's model afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.host import FallbackIntent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    per_day_quota_429,
    text_response,
)
from tests.runtime.resilience_harness import (
    FLASH,
    PRO,
    agent_text,
    announced_models,
    config_changes,
    end_of,
    errors,
    harness,
    notices,
)


@pytest.mark.parametrize("intent", ["retry_once", "retry_always"])
async def test_a_fallback_in_the_middle_of_a_tool_loop_continues_on_flash_with_the_tool_result(
    tmp_path: Path, fake_gemini: FakeGeminiServer, intent: FallbackIntent
) -> None:
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "notes.txt"}),
        per_day_quota_429(PRO),
        text_response("notes say hello"),
        text_response("next prompt"),
    )
    async with harness(tmp_path, fake_gemini, intents=[intent]) as h:
        (h.workspace / "notes.txt").write_text("hello from the notes file\n")
        events = await h.prompt("summarize notes.txt")

        assert end_of(events).reason == "completed"
        assert agent_text(events) == "notes say hello"
        assert fake_gemini.models_called == [PRO, PRO, FLASH]
        (choice,) = h.host.choices
        assert (choice.failed_model, choice.fallback_model) == (PRO, FLASH)
        assert choice.failure_kind == "terminal"
        assert choice.quota and "PerDay" in choice.quota

        first, failed, retry = h.requests
        # the continuation went to flash with the tool call and its result in its history
        assert retry.contents == failed.contents
        roles = [c.get("role") for c in retry.contents]
        assert roles == ["user", "model", "user"]
        call = retry.contents[1]["parts"][-1]["functionCall"]
        assert call["name"] == "read_file" and call["args"] == {"file_path": "notes.txt"}
        response = retry.contents[2]["parts"][0]["functionResponse"]
        assert response["name"] == "read_file"
        assert "hello from the notes file" in str(response["response"])
        # ... and with the same tools and settings: nothing stale from the pro request
        assert "read_file" in retry.function_declaration_names
        assert retry.function_declaration_names == first.function_declaration_names
        assert retry.system_instruction_text == first.system_instruction_text
        assert retry.body.get("generationConfig") == failed.body.get("generationConfig")
        assert announced_models(events) == [PRO, FLASH]

        after = await h.prompt("and now?")
        assert end_of(after).reason == "completed"
        if intent == "retry_once":
            # "for this request": the session's model is unchanged, the next prompt is on pro
            assert fake_gemini.models_called[-1] == PRO
            assert h.session.model_choice == PRO
            assert config_changes(h.events) == []
            assert announced_models(after) == [PRO]
        else:
            assert fake_gemini.models_called[-1] == FLASH
            assert h.session.model_choice == FLASH
            assert config_changes(h.events) == [{"model": FLASH}]
            assert announced_models(after) == [FLASH]
        assert len(h.host.choices) == 1


async def test_retry_once_keeps_flash_for_the_rest_of_that_prompt_only(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """After "switch for this request" the tool loop of that prompt stays on flash
    (no second question); the next prompt starts on pro again."""
    fake_gemini.add(
        per_day_quota_429(PRO),
        function_call_response("list_directory", {"dir_path": "."}),
        text_response("listed"),
        text_response("pro again"),
    )
    async with harness(tmp_path, fake_gemini, intents=["retry_once"]) as h:
        events = await h.prompt("list the files")
        assert end_of(events).reason == "completed"
        assert fake_gemini.models_called == [PRO, FLASH, FLASH]
        after = await h.prompt("thanks")
        assert agent_text(after) == "pro again"
        assert fake_gemini.models_called == [PRO, FLASH, FLASH, PRO]
        assert len(h.host.choices) == 1


async def test_stop_fails_the_turn_with_the_quota_error_and_the_session_recovers(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_day_quota_429(PRO), text_response("recovered"))
    async with harness(tmp_path, fake_gemini, intents=["stop"]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "failed"
        (error,) = errors(events)
        assert error.fatal and error.status == "RESOURCE_EXHAUSTED"
        assert error.meta == {"code": "QUOTA_EXHAUSTED", "model": PRO}
        assert PRO in error.message and "daily quota" in error.message
        assert fake_gemini.models_called == [PRO]

        after = await h.prompt("again")
        assert end_of(after).reason == "completed" and agent_text(after) == "recovered"
        assert fake_gemini.models_called == [PRO, PRO]


async def test_a_failing_fallback_handler_counts_as_stop(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_day_quota_429(PRO))
    async with harness(tmp_path, fake_gemini, intents=[RuntimeError("editor went away")]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "failed"
        assert errors(events)[0].status == "RESOURCE_EXHAUSTED"
        assert fake_gemini.models_called == [PRO]
        assert h.session.model_choice == PRO


async def test_the_chain_wraps_around_flash_out_of_quota_offers_pro(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_day_quota_429(FLASH), text_response("pro helps out"))
    async with harness(tmp_path, fake_gemini, model=FLASH, intents=["retry_once"]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        (choice,) = h.host.choices
        assert (choice.failed_model, choice.fallback_model) == (FLASH, PRO)
        assert fake_gemini.models_called == [FLASH, PRO]
        assert agent_text(events) == "pro helps out"
        assert h.session.model_choice == FLASH


async def test_in_plan_mode_the_fallback_is_silent_and_the_user_is_told(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_day_quota_429(PRO), text_response("planned on flash"))
    async with harness(tmp_path, fake_gemini, intents=["stop"]) as h:
        h.session.set_mode("plan")
        events = await h.prompt("plan it")
        assert end_of(events).reason == "completed"
        assert h.host.choices == []  # nobody was asked
        assert fake_gemini.models_called == [PRO, FLASH]
        (notice,) = notices(events)
        assert f"Switched to {FLASH}" in notice and PRO in notice
        assert config_changes(events) == [{"model": FLASH}]
        assert agent_text(events).endswith("planned on flash")
