"""Quota fallback over ACP (issue #4): the editor chooses, and each answer does what it says.

A per-day 429 on gemini-2.5-pro is a terminal quota error; its policy asks the
user. The agent asks through `session/request_permission` (a tool call of kind
`switch_mode`) or, when the client advertises `elicitation`, a form. The tests
check the question, then what each answer does to the requests that follow
(the model in the request URL) and to the session's model config option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpError, JsonObject, cancel_every_permission, selected
from tests.e2e.resilience_harness import (
    FLASH,
    PRO,
    MakeAgent,
    function_calls,
    function_responses,
    model_option,
    start,
)
from tests.fakes import gemini_errors as ge
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    Reply,
    function_call_response,
    per_day_quota_429,
    text_response,
)

pytestmark = pytest.mark.e2e

TITLE = f"{PRO} is out of quota — switch to {FLASH}?"
EXPECTED_OPTIONS = [
    {"optionId": "retry_once", "name": "Switch for this request", "kind": "allow_once"},
    {
        "optionId": "retry_always",
        "name": "Switch for the rest of the session",
        "kind": "allow_always",
    },
    {"optionId": "stop", "name": "Stop", "kind": "reject_once"},
]


def choose(option_id: str) -> Any:
    def policy(params: JsonObject) -> JsonObject:
        return selected(option_id)

    return policy


def config_updates(agent: Any) -> list[JsonObject]:
    return agent.updates("config_option_update")


async def test_per_day_quota_asks_the_editor_and_retry_once_switches_this_request_only(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        per_day_quota_429(PRO),
        text_response("answer from flash"),
        text_response("answer from pro again"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy="queue")
    assert model_option(agent.session["configOptions"])["currentValue"] == PRO

    pending = agent.client.start_prompt(agent.session_id, "hello")
    question = await agent.client.next_permission_request()
    tool_call = question.tool_call
    assert tool_call["kind"] == "switch_mode"
    assert tool_call["title"] == TITLE
    assert tool_call["status"] == "pending"
    assert question.options == EXPECTED_OPTIONS
    shown = " ".join(
        c["content"]["text"] for c in tool_call.get("content", []) if c.get("type") == "content"
    )
    assert "daily quota" in shown and "PerDay" in shown
    question.select("retry_once")

    assert await pending.result() == {"stopReason": "end_turn"}
    assert "answer from flash" in agent.text()
    assert fake_gemini.models_called == [PRO, FLASH]
    # the retry carries the same request (the user's prompt), only the model differs
    first, retry = fake_gemini.generate_requests
    assert retry.contents == first.contents
    assert retry.last_user_text == "hello"

    # "for this request": the next prompt is served by pro again, without a question
    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == [PRO, FLASH, PRO]
    assert "answer from pro again" in agent.text()
    assert len(agent.client.permission_requests) == 1
    assert config_updates(agent) == []
    options = await agent.client.set_config_option(agent.session_id, "model", PRO)
    assert model_option(options["configOptions"])["currentValue"] == PRO


async def test_retry_always_switches_the_session_model_and_tells_the_editor(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        per_day_quota_429(PRO), text_response("flash answers"), text_response("flash again")
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=choose("retry_always"))

    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    assert "flash answers" in agent.text()
    assert fake_gemini.models_called == [PRO, FLASH]
    updates = config_updates(agent)
    assert updates, "the model change must reach the editor as config_option_update"
    assert model_option(updates[-1]["configOptions"])["currentValue"] == FLASH
    # the full option list, mode included
    assert {o["id"] for o in updates[-1]["configOptions"]} >= {"mode", "model"}

    assert await agent.prompt("next") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == [PRO, FLASH, FLASH]
    assert len(agent.client.permission_requests) == 1


def _per_day_with_reset(model: str, delay: str) -> Reply:
    body = ge.per_day_quota_body(model)
    body["error"]["details"].append(ge.retry_info(delay))
    return Reply(status=429, error_body=body)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(choose("stop"), id="stop"),
        pytest.param(cancel_every_permission, id="cancelled"),
    ],
)
async def test_stop_or_cancelled_ends_the_turn_with_a_clear_error_and_the_session_stays_usable(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer, answer: Any
) -> None:
    fake_gemini.add(_per_day_with_reset(PRO, "7200s"), text_response("back on pro"))
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=answer)

    with pytest.raises(AcpError) as failure:
        await agent.prompt("hello")
    error = failure.value
    assert error.code == -32003  # model error, from the one table in acp_server/errors.py
    assert PRO in error.message
    assert "quota" in error.message
    assert "2h" in error.message  # the reset time the server gave
    assert "Traceback" not in error.message and 'File "' not in error.message
    assert error.data["model"] == PRO
    assert error.data["status"] == "RESOURCE_EXHAUSTED"
    assert error.data["code"] == "QUOTA_EXHAUSTED"
    assert fake_gemini.models_called == [PRO]  # nothing was retried on another model
    assert config_updates(agent) == []
    assert "Traceback" not in agent.client.stderr_text  # an expected failure, not a crash

    # the session stays usable, still on pro (the user did not agree to a switch)
    assert await agent.prompt("and now?") == {"stopReason": "end_turn"}
    assert "back on pro" in agent.text()
    assert fake_gemini.models_called == [PRO, PRO]


def _answer_forms(*choices: str | None) -> Any:
    """Answer successive forms: a choice, or None to decline."""
    answers = list(choices)

    def policy(params: JsonObject) -> JsonObject:
        choice = answers.pop(0)
        if choice is None:
            return {"action": "decline"}
        return {"action": "accept", "content": {"choice": choice}}

    return policy


async def test_a_client_with_elicitation_is_asked_with_a_form_and_the_answer_is_honoured(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        per_day_quota_429(PRO),
        per_day_quota_429(PRO),
        text_response("flash by form"),
        text_response("still flash"),
    )
    agent = await start(
        make_agent, tmp_path, fake_gemini, elicitation_policy=_answer_forms(None, "retry_always")
    )

    # a declined form means stop
    with pytest.raises(AcpError) as failure:
        await agent.prompt("hello")
    assert failure.value.code == -32003 and PRO in failure.value.message
    assert fake_gemini.models_called == [PRO]

    assert await agent.prompt("hello again") == {"stopReason": "end_turn"}
    assert agent.client.permission_requests == []  # asked by form, not by permission
    first, form = agent.client.elicitations
    assert first == form
    assert form["sessionId"] == agent.session_id
    assert form["mode"] == "form"
    assert TITLE in form["message"]
    choice = form["requestedSchema"]["properties"]["choice"]
    assert [o["const"] for o in choice["oneOf"]] == ["retry_once", "retry_always", "stop"]
    assert fake_gemini.models_called == [PRO, PRO, FLASH]
    assert "flash by form" in agent.text()
    assert model_option(config_updates(agent)[-1]["configOptions"])["currentValue"] == FLASH

    assert await agent.prompt("next") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == [PRO, PRO, FLASH, FLASH]


async def test_a_fallback_in_the_middle_of_a_tool_loop_carries_the_tool_result_to_flash(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "todo.txt"}),
        per_day_quota_429(PRO),
        text_response("flash read the todo list"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy=choose("retry_once"))
    (agent.workspace / "todo.txt").write_text("1. write tests\n")

    assert await agent.prompt("what is on my todo list?") == {"stopReason": "end_turn"}
    assert fake_gemini.models_called == [PRO, PRO, FLASH]
    _, failed, retry = fake_gemini.generate_requests
    assert retry.body == failed.body  # the very same request, only the URL's model differs
    (call,) = function_calls(retry)
    assert call == {"name": "read_file", "args": {"file_path": "todo.txt"}}
    (result,) = function_responses(retry)
    assert result["name"] == "read_file" and "1. write tests" in str(result["response"])
    assert "read_file" in retry.function_declaration_names
    assert [u["status"] for u in agent.updates("tool_call_update")][-1] == "completed"
    assert "flash read the todo list" in agent.text()


async def test_session_cancel_while_the_fallback_question_is_open_ends_the_turn_cancelled(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(per_day_quota_429(PRO), text_response("after the cancel"))
    agent = await start(make_agent, tmp_path, fake_gemini, permission_policy="queue")

    pending = agent.client.start_prompt(agent.session_id, "hello")
    question = await agent.client.next_permission_request()
    assert question.tool_call["kind"] == "switch_mode"
    await agent.client.cancel(agent.session_id)  # answers the open question `cancelled`

    assert await pending.result() == {"stopReason": "cancelled"}
    assert fake_gemini.models_called == [PRO]
    assert agent.updates("config_option_update") == []
    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("after the cancel")
