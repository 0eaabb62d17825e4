"""The fallback-model choice asked in the editor, against a fake connection."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException

from acp_server.host import AcpHost
from runtime.host import FallbackChoice
from tests.unit.acp_server.fake_conn import FakeConn

CHOICE = FallbackChoice(
    failed_model="gemini-2.5-pro",
    fallback_model="gemini-2.5-flash",
    failure_kind="terminal",
    message="You exceeded your quota.",
    quota="requests per day",
    reset_after_seconds=3600,
)


def _host(conn: FakeConn, caps: dict[str, Any] | None = None) -> AcpHost:
    return AcpHost(conn, "s1", caps or {})  # type: ignore[arg-type]


def _picked(option: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


async def test_the_choice_is_a_switch_mode_permission_request() -> None:
    conn = FakeConn({"session/request_permission": [_picked("retry_always")]})
    assert await _host(conn).choose_fallback(CHOICE) == "retry_always"
    (sent,) = conn.requests("session/request_permission")
    call = sent["toolCall"]
    assert call["title"] == "gemini-2.5-pro is out of quota — switch to gemini-2.5-flash?"
    assert call["kind"] == "switch_mode"
    assert call["rawInput"] == {
        "failedModel": "gemini-2.5-pro",
        "fallbackModel": "gemini-2.5-flash",
    }
    text = call["content"][0]["content"]["text"]
    assert "Quota: requests per day" in text and "Resets in about 1h." in text
    assert [o["optionId"] for o in sent["options"]] == ["retry_once", "retry_always", "stop"]


async def test_a_cancelled_or_stop_answer_stops() -> None:
    conn = FakeConn(
        {"session/request_permission": [{"outcome": {"outcome": "cancelled"}}, _picked("stop")]}
    )
    host = _host(conn)
    assert await host.choose_fallback(CHOICE) == "stop"
    assert await host.choose_fallback(CHOICE) == "stop"


async def test_with_elicitation_the_choice_is_a_form() -> None:
    conn = FakeConn(
        {
            "elicitation/create": [
                {"action": "accept", "content": {"choice": "retry_once"}},
                {"action": "decline"},
                {"action": "accept", "content": {"choice": "something else"}},
            ]
        }
    )
    host = _host(conn, {"elicitation": True})
    assert await host.choose_fallback(CHOICE) == "retry_once"
    assert await host.choose_fallback(CHOICE) == "stop"
    assert await host.choose_fallback(CHOICE) == "stop"
    form = conn.requests("elicitation/create")[0]
    assert form["sessionId"] == "s1" and form["mode"] == "form"
    choices = form["requestedSchema"]["properties"]["choice"]["oneOf"]
    assert [c["const"] for c in choices] == ["retry_once", "retry_always", "stop"]
    assert conn.requests("session/request_permission") == []


async def test_a_failed_form_falls_back_to_a_permission_request() -> None:
    conn = FakeConn(
        {
            "elicitation/create": [JsonRpcException(code=-32601, message="no forms")],
            "session/request_permission": [_picked("retry_once")],
        }
    )
    assert await _host(conn, {"elicitation": True}).choose_fallback(CHOICE) == "retry_once"
    assert [m for m, _ in conn.sent] == ["elicitation/create", "session/request_permission"]
