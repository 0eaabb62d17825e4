"""ACP v2's shapes made from the v1 updates (`acp_server/v2/updates.py`) and the
version chosen at `initialize` (`acp_server/capabilities.py`)."""

from __future__ import annotations

from acp_server.capabilities import initialize_result, negotiated_version
from acp_server.v2.dialect import _opening
from acp_server.v2.updates import V2Updates, permission_request_v2


def chunk(kind: str, text: str) -> dict[str, object]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def test_the_version_is_the_highest_we_speak_at_or_below_the_clients() -> None:
    assert [negotiated_version({"protocolVersion": v}) for v in (0, 1, 2, 3, 65535)] == [
        1,
        1,
        2,
        2,
        2,
    ]
    assert initialize_result({"protocolVersion": 1})["protocolVersion"] == 1
    v2 = initialize_result({"protocolVersion": 7, "info": {"name": "c", "version": "1"}})
    assert v2["protocolVersion"] == 2 and "session" in v2["capabilities"]
    assert "agentCapabilities" not in v2 and "authMethods" in v2


def test_a_run_of_chunks_is_one_message_and_anything_between_starts_another() -> None:
    updates = V2Updates()
    first = updates.update("s", chunk("agent_message_chunk", "a"))
    second = updates.update("s", chunk("agent_message_chunk", "b"))
    thought = updates.update("s", chunk("agent_thought_chunk", "hm"))
    updates.update("s", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"})
    third = updates.update("s", chunk("agent_message_chunk", "c"))
    other = updates.update("other", chunk("agent_message_chunk", "d"))
    assert first and second and thought and third and other
    assert first["messageId"] == second["messageId"]
    assert len({first["messageId"], thought["messageId"], third["messageId"]}) == 3
    assert other["messageId"] != third["messageId"]


def test_tool_calls_are_upserts_and_a_diff_is_its_change_and_a_git_patch() -> None:
    created = V2Updates().update(
        "s",
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "kind": "edit",
            "status": "pending",
            "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}],
        },
    )
    assert created is not None and created["sessionUpdate"] == "tool_call_update"
    (diff,) = created["content"]
    assert diff["changes"] == [{"operation": "modify", "path": "/w/a.txt"}]
    patch = diff["patch"]["text"]
    assert patch.startswith("diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n")
    assert "-a\n+b\n" in patch
    added = V2Updates().update(
        "s",
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t2",
            "content": [{"type": "diff", "path": "/w/n.txt", "newText": "x"}],
        },
    )
    assert added is not None
    (new,) = added["content"]
    assert new["changes"][0]["operation"] == "add"
    assert "new file mode" in new["patch"]["text"] and "\\ No newline" in new["patch"]["text"]


def test_plans_commands_options_and_what_v2_does_not_have() -> None:
    updates = V2Updates()
    entries = [{"content": "x", "priority": "medium", "status": "pending"}]
    plan = updates.update("s", {"sessionUpdate": "plan", "entries": entries})
    assert plan == {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "todos", "entries": entries},
    }
    commands = updates.update(
        "s",
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "rewind", "description": "d", "input": {"hint": "n"}}],
        },
    )
    assert commands is not None
    assert commands["availableCommands"] == [
        {
            "type": "command",
            "name": "rewind",
            "description": "d",
            "input": {"type": "text", "hint": "n"},
        }
    ]
    options = updates.update(
        "s",
        {"sessionUpdate": "config_option_update", "configOptions": [{"id": "mode", "name": "M"}]},
    )
    assert options is not None and options["configOptions"] == [{"configId": "mode", "name": "M"}]
    assert (
        updates.update("s", {"sessionUpdate": "current_mode_update", "currentModeId": "x"}) is None
    )
    state = {"sessionUpdate": "state_update", "state": "idle"}
    assert updates.update("s", state) == state


def test_a_permission_request_has_a_title_and_its_tool_call_as_subject() -> None:
    asked = permission_request_v2(
        {
            "sessionId": "s",
            "toolCall": {"toolCallId": "t1", "title": "Write a.txt", "kind": "edit"},
            "options": [{"optionId": "o", "name": "Allow", "kind": "allow_once"}],
        }
    )
    assert asked["title"] == "Write a.txt"
    assert asked["subject"] == {
        "type": "tool_call",
        "toolCall": {"toolCallId": "t1", "title": "Write a.txt", "kind": "edit"},
    }


def test_v2_openings_become_v1_params() -> None:
    stdio = {"type": "stdio", "name": "m", "command": "/bin/m"}
    opened = _opening({"cwd": "/w", "mcpServers": [stdio, {"type": "http", "name": "h"}]})
    assert opened["mcpServers"] == [
        {"args": [], "env": [], "name": "m", "command": "/bin/m"},
        {"type": "http", "name": "h"},
    ]
    assert _opening({"cwd": "/w"})["mcpServers"] == []


def test_a_notice_is_a_notice_and_does_not_split_the_answer() -> None:
    updates = V2Updates()
    first = updates.update("s", chunk("agent_message_chunk", "a"))
    marked = {
        **chunk("agent_message_chunk", "**Retrying**"),
        "_meta": {"adkAcp": {"notice": {"level": "warning", "text": "Retrying\nin 2 s"}}},
    }
    notice = updates.update("s", marked)
    after = updates.update("s", chunk("agent_message_chunk", "b"))
    assert notice is not None and first is not None and after is not None
    assert (notice["sessionUpdate"], notice["severity"], notice["title"]) == (
        "notice",
        "warning",
        "Retrying",
    )
    assert after["messageId"] == first["messageId"]
