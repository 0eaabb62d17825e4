"""acp_server/replay.py: a recorded conversation → the session updates that show it
again, by plain calls (no process)."""

from __future__ import annotations

from typing import Any

from acp_server.replay import message_updates, replay_updates
from acp_server.updates import ClientUpdates, notice_meta
from runtime.services.record import (
    CompressionMessage,
    GeminiMessage,
    Message,
    NoticeMessage,
    UserMessage,
)


def wire(messages: list[Message], client: ClientUpdates | None = None) -> list[dict[str, Any]]:
    return [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for m in messages
        for u in message_updates(m, client)
    ]


def test_a_typed_prompt_shows_what_was_typed_and_its_images() -> None:
    prompt: UserMessage = {
        "id": "u1",
        "type": "user",
        "content": [
            {"text": "expanded @file text"},
            {"inlineData": {"mimeType": "image/png", "data": "aGk="}},
        ],
        "displayContent": "look at @file",
    }
    assert wire([prompt]) == [
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "look at @file"},
        },
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        },
    ]
    old_style: UserMessage = {"type": "user", "content": "plain string prompt"}
    assert wire([old_style])[0]["content"]["text"] == "plain string prompt"


def test_a_synthetic_prompt_is_not_shown() -> None:
    nudge: UserMessage = {"id": "u2", "type": "user", "content": "loop!", "synthetic": True}
    assert wire([nudge]) == []


def test_an_answer_shows_thoughts_text_and_each_tool_call_with_its_final_state() -> None:
    answer: GeminiMessage = {
        "id": "g1",
        "type": "gemini",
        "content": "Done.",
        "thoughts": [{"subject": "", "description": "thinking"}],
        "toolCalls": [
            {
                "id": "c1",
                "name": "replace",
                "displayName": "Edit a.py",
                "kind": "edit",
                "status": "success",
                "args": {"file_path": "a.py"},
                "locations": [{"path": "/w/a.py"}],
                "display": [
                    {"type": "diff", "path": "/w/a.py", "before_text": "a", "after_text": "b"}
                ],
                "permission": {"title": "Edit?", "options": [], "answer": "allow"},
            },
            {
                "id": "c2",
                "name": "run_shell_command",
                "status": "cancelled",
                "kind": "not-a-kind",
                "resultDisplay": "stopped",
            },
        ],
    }
    updates = wire([answer])
    assert [u["sessionUpdate"] for u in updates] == [
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call",
    ]
    assert updates[2] == {
        "sessionUpdate": "tool_call",
        "_meta": {"adkAcp": {"permission": {"title": "Edit?", "options": [], "answer": "allow"}}},
        "toolCallId": "c1",
        "name": "replace",
        "title": "Edit a.py",
        "kind": "edit",
        "status": "completed",
        "locations": [{"path": "/w/a.py"}],
        "rawInput": {"file_path": "a.py"},
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}],
    }
    assert updates[3] == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c2",
        "name": "run_shell_command",
        "title": "run_shell_command",
        "kind": "other",
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "stopped"}}],
    }


def test_notices_warnings_and_errors_are_marked_agent_text() -> None:
    info: NoticeMessage = {"type": "info", "content": "Switched."}
    warning: NoticeMessage = {"type": "warning", "content": "Loop detected."}
    updates = wire([info, warning])
    assert updates[0]["content"]["text"] == "\n\nSwitched.\n\n"
    assert updates[0]["_meta"] == notice_meta("info", "Switched.")
    assert updates[1]["content"]["text"] == "\n\n**Loop detected.**\n"
    assert updates[1]["_meta"] == notice_meta("warning", "Loop detected.")


def test_a_client_that_takes_notices_gets_them_again_as_notices() -> None:
    info: NoticeMessage = {"type": "info", "content": "Switched.\nFor this request."}
    error: NoticeMessage = {"type": "error", "content": "Quota."}
    assert wire([info, error], ClientUpdates(notices=True)) == [
        {
            "sessionUpdate": "notice",
            "severity": "info",
            "title": "Switched.",
            "description": "For this request.",
        },
        {"sessionUpdate": "notice", "severity": "error", "title": "Quota."},
    ]


def test_a_compression_shows_nothing_but_to_a_client_that_takes_compactions() -> None:
    compressed: CompressionMessage = {
        "id": "m7",
        "type": "compression",
        "summary": "s",
        "keptFrom": None,
    }
    assert wire([compressed]) == []
    assert wire([compressed], ClientUpdates(notices=True)) == []
    assert wire([compressed], ClientUpdates(compaction=True)) == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "m7",
            "status": "completed",
            "summary": [{"type": "text", "text": "s"}],
        }
    ]


def test_after_the_messages_come_the_plan_title_mode_and_options() -> None:
    options: list[dict[str, Any]] = []
    metadata = {
        "plan": [{"content": "read", "status": "completed", "priority": "medium"}, "junk"],
        "title": "Fix it",
    }
    updates = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for u in replay_updates([], metadata, mode="plan", config_options=options)
    ]
    assert updates == [
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "read", "priority": "medium", "status": "completed"}],
        },
        {"sessionUpdate": "session_info_update", "title": "Fix it"},
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
        {"sessionUpdate": "config_option_update", "configOptions": []},
    ]


def test_a_subagent_run_is_replayed_as_a_child_session_to_a_client_that_follows_them() -> None:
    from acp_server.replay import ChildUpdate

    run = {"subagentSessionId": "child-1", "endReason": "max_turns", "title": "Reviewer"}
    answer: GeminiMessage = {
        "id": "g1",
        "type": "gemini",
        "content": "",
        "toolCalls": [{"id": "c1", "name": "reviewer", "status": "success", "subagent": run}],
    }
    child: GeminiMessage = {"id": "g2", "type": "gemini", "content": "Reading."}
    asked: list[str] = []

    def children(session_id: str) -> tuple[Message, ...]:
        asked.append(session_id)
        return (child,)

    def replayed(client: ClientUpdates) -> list[tuple[str, str]]:
        out = []
        for u in replay_updates(
            [answer], {}, mode="default", config_options=[], client=client, children=children
        ):
            sid, update = (u.session_id, u.update) if isinstance(u, ChildUpdate) else ("parent", u)
            out.append((sid, update.model_dump(by_alias=True, exclude_none=True)["sessionUpdate"]))
        return out[:5]

    assert replayed(ClientUpdates(subagents=True)) == [
        ("parent", "tool_call"),
        ("parent", "subagent_update"),
        ("child-1", "agent_message_chunk"),
        ("parent", "subagent_update"),
        ("parent", "current_mode_update"),
    ]
    assert asked == ["child-1"]
    assert ("parent", "subagent_update") not in replayed(ClientUpdates())
