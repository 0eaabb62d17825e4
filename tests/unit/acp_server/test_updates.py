"""acp_server/updates.py: runtime events → ACP session updates, by plain calls."""

from __future__ import annotations

from typing import Any

from acp_server import schema
from acp_server.updates import (
    ClientUpdates,
    UpdateMapper,
    notice_meta,
    plan_update,
    stop_reason,
    tool_call_update,
)
from runtime.protocol import (
    AgentEndEvent,
    AgentStartEvent,
    CommandsChangedEvent,
    CompactionEvent,
    DisplayDiff,
    DisplayTerminal,
    DisplayText,
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PlanEntry,
    PlanEvent,
    SessionUpdateEvent,
    TextPart,
    ThoughtPart,
    ToolDisplay,
    ToolLocation,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
    UsageEvent,
)

OPTIONS: list[dict[str, Any]] = [
    {
        "id": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "default",
        "options": [{"value": "default", "name": "Default"}],
    }
]


def mapper() -> UpdateMapper:
    return UpdateMapper(lambda: OPTIONS, lambda: "default")


def wire(update: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


BASE = {"id": "e1", "stream_id": "s1"}


def test_agent_text_and_thoughts_become_chunks_and_user_text_nothing() -> None:
    agent = MessageEvent(
        **BASE, role="agent", content=(TextPart(text="hi"), ThoughtPart(thought="hmm"))
    )
    assert [wire(u) for u in mapper().map(agent)] == [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}},
    ]
    assert mapper().map(MessageEvent(**BASE, role="user", content=(TextPart(text="x"),))) == []


def test_a_notice_is_a_marked_paragraph_of_agent_text() -> None:
    [update] = mapper().map(NoticeEvent(**BASE, text="Switched to flash."))
    assert wire(update) == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "\n\nSwitched to flash.\n\n"},
        "_meta": notice_meta("info", "Switched to flash."),
    }
    assert mapper().map(NoticeEvent(**BASE, text="")) == []


def test_a_plan_event_is_the_whole_plan() -> None:
    entries = (
        PlanEntry(content="read", status="completed"),
        PlanEntry(content="edit", status="in_progress", priority="high"),
    )
    [update] = mapper().map(PlanEvent(**BASE, entries=entries))
    assert wire(update) == {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "read", "priority": "medium", "status": "completed"},
            {"content": "edit", "priority": "high", "status": "in_progress"},
        ],
    }


def test_plan_entries_from_their_plain_form_fall_back_on_unknown_values() -> None:
    entry = PlanEntry.of({"content": "x", "status": "cancelled", "priority": "urgent"})
    assert entry == PlanEntry(content="x", status="pending", priority="medium")
    assert list(PlanEntry(content="y").model_dump()) == ["content", "status", "priority"]


def test_events_the_session_handles_itself_map_to_nothing() -> None:
    for event in (
        CommandsChangedEvent(**BASE),
        AgentStartEvent(**BASE),
        AgentEndEvent(**BASE, reason="completed"),
        ErrorEvent(**BASE, status="INTERNAL", message="boom", fatal=True),
    ):
        assert mapper().map(event) == []


def test_a_non_fatal_error_is_a_bold_warning() -> None:
    [update] = mapper().map(ErrorEvent(**BASE, status="INTERNAL", message="Loop", fatal=False))
    assert wire(update)["content"]["text"] == "\n\n**Loop**\n"
    assert wire(update)["_meta"] == notice_meta("warning", "Loop")


def test_a_tool_request_is_a_pending_tool_call_with_its_display() -> None:
    display = ToolDisplay(
        title="Edit a.py",
        kind="edit",
        locations=(ToolLocation(path="/w/a.py", line=3),),
        content=(DisplayDiff(path="/w/a.py", before_text="a", after_text="b"),),
    )
    event = ToolRequestEvent(
        **BASE, request_id="c1", name="replace", args={"x": 1}, display=display
    )
    [update] = mapper().map(event)
    assert wire(update) == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "name": "replace",
        "title": "Edit a.py",
        "kind": "edit",
        "status": "pending",
        "locations": [{"path": "/w/a.py", "line": 3}],
        "rawInput": {"x": 1},
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}],
    }
    bare = ToolRequestEvent(**BASE, request_id="c2", name="glob", args={})
    assert wire(mapper().map(bare)[0]) == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c2",
        "name": "glob",
        "title": "glob",
        "kind": "other",
        "status": "pending",
        "rawInput": {},
    }


def test_tool_progress_and_results() -> None:
    running = ToolUpdateEvent(
        **BASE,
        request_id="c1",
        display=ToolDisplay(title="t", content=(DisplayTerminal(terminal_id="term-1"),)),
    )
    assert wire(mapper().map(running)[0]) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": "term-1"}],
    }
    failed = ToolResponseEvent(
        **BASE,
        request_id="c1",
        name="run_shell_command",
        is_error=True,
        display=ToolDisplay(title="ls", content=(DisplayText(text="no such dir"),)),
        data={"status": "error"},
    )
    assert wire(mapper().map(failed)[0]) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "failed",
        "title": "ls",
        "content": [{"type": "content", "content": {"type": "text", "text": "no such dir"}}],
        "rawOutput": {"status": "error"},
    }


def test_usage_is_used_over_the_context_window() -> None:
    usage = UsageEvent(**BASE, model="m", input_tokens=100, output_tokens=20, context_window=1000)
    assert wire(mapper().map(usage)[0]) == {
        "sessionUpdate": "usage_update",
        "used": 120,
        "size": 1000,
    }
    unknown = UsageEvent(**BASE, model="m", input_tokens=5)
    assert wire(mapper().map(unknown)[0])["size"] == 5


def test_session_facts_become_info_mode_and_config_updates() -> None:
    titled = mapper().map(SessionUpdateEvent(**BASE, title="Fix the bug"))
    assert isinstance(titled[0], schema.SessionInfoUpdate) and titled[0].title == "Fix the bug"
    changed = mapper().map(SessionUpdateEvent(**BASE, config={"mode": "plan"}))
    assert [wire(u)["sessionUpdate"] for u in changed] == [
        "current_mode_update",
        "config_option_update",
    ]
    assert mapper().map(SessionUpdateEvent(**BASE, model="gemini-2.5-pro")) == []


def test_the_shared_builders_carry_a_final_status_and_meta() -> None:
    update = tool_call_update(
        "c9",
        ToolDisplay(title="Read", kind="read"),
        name="read_file",
        status="completed",
        raw_input={"p": 1},
        meta={"adkAcp": {"permission": {"answer": None}}},
    )
    assert wire(update) == {
        "sessionUpdate": "tool_call",
        "_meta": {"adkAcp": {"permission": {"answer": None}}},
        "toolCallId": "c9",
        "name": "read_file",
        "title": "Read",
        "kind": "read",
        "status": "completed",
        "rawInput": {"p": 1},
    }
    assert wire(plan_update(())) == {"sessionUpdate": "plan", "entries": []}


def test_a_client_that_takes_notices_gets_notice_updates() -> None:
    taker = UpdateMapper(lambda: OPTIONS, lambda: "default", ClientUpdates(notices=True))
    [info] = taker.map(NoticeEvent(**BASE, text="\nSwitched to flash.\nThe quota ran out.\n"))
    assert wire(info) == {
        "sessionUpdate": "notice",
        "severity": "info",
        "title": "Switched to flash.",
        "description": "The quota ran out.",
    }
    [warning] = taker.map(ErrorEvent(**BASE, status="INTERNAL", message="Loop", fatal=False))
    assert wire(warning) == {"sessionUpdate": "notice", "severity": "warning", "title": "Loop"}
    assert taker.map(NoticeEvent(**BASE, text=" \n")) == []
    assert taker.map(ErrorEvent(**BASE, status="INTERNAL", message="boom", fatal=True)) == []


def test_a_compaction_is_an_update_only_for_a_client_that_takes_them() -> None:
    event = CompactionEvent(
        **BASE, compaction_id="m1", summary="<snapshot/>", tokens_before=9, tokens_after=2
    )
    assert mapper().map(event) == []
    taker = UpdateMapper(lambda: OPTIONS, lambda: "default", ClientUpdates(compaction=True))
    assert [wire(u) for u in taker.map(event)] == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "m1",
            "status": "completed",
            "summary": [{"type": "text", "text": "<snapshot/>"}],
        }
    ]


def test_a_client_opts_in_with_an_object_under_session() -> None:
    assert ClientUpdates.of(None) == ClientUpdates()
    assert ClientUpdates.of({"session": {"notices": None, "compaction": True}}) == ClientUpdates()
    assert ClientUpdates.of({"session": "x"}) == ClientUpdates()
    assert ClientUpdates.of({"session": {"notices": {}, "compaction": {}}}) == ClientUpdates(
        notices=True, compaction=True
    )


def test_stop_reasons() -> None:
    assert stop_reason("completed") == "end_turn"
    assert stop_reason("aborted") == "cancelled"
    assert stop_reason("max_turns") == "max_turn_requests"
    assert stop_reason("max_budget") == "max_tokens"
    assert stop_reason("refusal") == "refusal"
    assert stop_reason("max_time") == "end_turn"


def test_initialize_keeps_the_session_capabilities_newer_than_the_pinned_schema() -> None:
    from acp_server.handlers.initialize import InitializeParams

    params = InitializeParams.model_validate(
        {
            "protocolVersion": 1,
            "clientCapabilities": {"session": {"notices": {}, "compaction": "junk"}},
        }
    )
    caps = params.raw()["clientCapabilities"]
    assert caps["session"] == {"notices": {}}
    assert ClientUpdates.of(caps) == ClientUpdates(notices=True)
    bare = InitializeParams.model_validate({"protocolVersion": 1})
    assert ClientUpdates.of(bare.raw().get("clientCapabilities")) == ClientUpdates()


def test_a_permission_request_names_its_tool_when_it_is_a_tools() -> None:
    from acp_server.updates import permission_params
    from runtime.host import PermissionRequest

    named = PermissionRequest(
        tool_call_id="t1", title="Write a.txt", kind="edit", options=(), tool_name="write_file"
    )
    assert permission_params("s1", named)["toolCall"]["name"] == "write_file"
    fallback = PermissionRequest(tool_call_id="t2", title="Switch?", kind="other", options=())
    assert "name" not in permission_params("s1", fallback)["toolCall"]


def test_the_waiting_signal_is_a_pending_update_marked_in_meta() -> None:
    for waiting in (True, False):
        event = ToolUpdateEvent(**BASE, request_id="c1", status="pending", waiting_on_user=waiting)
        assert wire(mapper().map(event)[0]) == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "pending",
            "_meta": {"adkAcp": {"awaitingConfirmation": waiting}},
        }


def test_plan_operations_for_a_client_that_takes_them_and_plain_plans_for_another() -> None:
    from acp_server.updates_v121 import ClientUpdates, PlanOperations
    from runtime.protocol import PlanEntry, PlanEvent

    def plan(plan_id: str, *items: str, markdown: str | None = None) -> PlanEvent:
        entries = tuple(PlanEntry(content=i) for i in items)
        return PlanEvent(id="e", stream_id="s", entries=entries, plan_id=plan_id, markdown=markdown)

    def dumped(ops: PlanOperations, event: PlanEvent) -> list[dict[str, object]]:
        return [u.model_dump(by_alias=True, exclude_none=True) for u in ops.updates(event)]

    ops = PlanOperations(ClientUpdates.of({"plan": {}}))
    assert dumped(ops, plan("todos")) == []  # nothing shown yet: nothing to remove
    markdown = {"type": "markdown", "planId": "plan:a.md", "content": "- x"}
    assert dumped(ops, plan("plan:a.md", "x", markdown="- x")) == [
        {"sessionUpdate": "plan_update", "plan": markdown}
    ]
    assert [u["sessionUpdate"] for u in dumped(ops, plan("plan:b.md", markdown="b"))] == [
        "plan_removed",
        "plan_update",
    ]
    assert dumped(ops, plan("todos", "y"))[0]["plan"]["type"] == "items"  # type: ignore[index]
    assert dumped(ops, plan("todos")) == [{"sessionUpdate": "plan_removed", "planId": "todos"}]
    plain = PlanOperations(ClientUpdates.of({"session": {"notices": {}}}))
    entry = {"content": "x", "priority": "medium", "status": "pending"}
    assert dumped(plain, plan("plan:a.md", "x", markdown="- x")) == [
        {"sessionUpdate": "plan", "entries": [entry], "_meta": {"adkAcp": {"planId": "plan:a.md"}}}
    ]
