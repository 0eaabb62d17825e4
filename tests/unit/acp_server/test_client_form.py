"""`updates_v121.client_form`: a hub session's updates, made with every opt-in, as each
client takes them. For every combination of opt-ins, a client's form of the full updates
is exactly what a translator made for that client alone sends, live and replayed."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from acp_server.replay import ChildUpdate, replay_updates
from acp_server.transport import dump
from acp_server.updates import ClientUpdates, UpdateMapper
from acp_server.updates_v121 import client_form
from runtime.protocol import (
    AgentEvent,
    CompactionEvent,
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PlanEntry,
    PlanEvent,
    SubagentEvent,
    TextPart,
)
from runtime.services.record import CompressionMessage, GeminiMessage, Message, NoticeMessage

BASE = {"id": "e", "stream_id": "st"}

EVERY_COMBINATION = [ClientUpdates(*flags) for flags in itertools.product((False, True), repeat=4)]


def plan(plan_id: str, *items: str, markdown: str | None = None) -> PlanEvent:
    entries = tuple(PlanEntry(content=i) for i in items)
    return PlanEvent(**BASE, entries=entries, plan_id=plan_id, markdown=markdown)


EVENTS: list[AgentEvent] = [
    MessageEvent(**BASE, role="agent", content=(TextPart(text="Looking."),)),
    NoticeEvent(**BASE, text="Retrying in 1 s\n  (attempt 2 of 3)"),
    ErrorEvent(**BASE, status="INTERNAL", message="Loop detected.", fatal=False),
    CompactionEvent(
        **BASE, compaction_id="c1", summary="the gist", tokens_before=9, tokens_after=1
    ),
    plan("plan:a.md", "x", markdown="- [ ] x"),
    plan("plan:b.md", "y", markdown="- [ ] y"),  # replaces a.md
    plan("todos", "fix it"),
    plan("todos"),  # cleared
    SubagentEvent(**BASE, child_id="kid", name="r", title="Reviewer", task="t", state="running"),
    SubagentEvent(
        **BASE,
        child_id="kid",
        name="r",
        title="Reviewer",
        task="t",
        state="idle",
        end_reason="completed",
    ),
]


def mapped(client: ClientUpdates) -> list[Any]:
    mapper = UpdateMapper(list, lambda: "default", client)
    return [u for event in EVENTS for u in mapper.map(event)]


@pytest.mark.parametrize("client", EVERY_COMBINATION, ids=repr)
def test_a_clients_form_of_the_full_updates_is_what_its_own_translator_sends(
    client: ClientUpdates,
) -> None:
    made = [{"sessionId": "s", "update": u} for u in mapped(ClientUpdates.every())]
    own = [dump({"sessionId": "s", "update": u}) for u in mapped(client)]
    assert [dump(p) for params in made for p in client_form(params, "s", client)] == own


def test_each_opt_in_kind_falls_back_to_its_v1_form_or_to_nothing() -> None:
    made = [{"sessionId": "s", "update": u} for u in mapped(ClientUpdates.every())]
    plain = [dump(p)["update"] for m in made for p in client_form(m, "s", ClientUpdates())]
    kinds = [u["sessionUpdate"] for u in plain]
    assert kinds == ["agent_message_chunk"] * 3 + ["plan"] * 4
    assert plain[1]["content"]["text"] == "\n\nRetrying in 1 s\n  (attempt 2 of 3)\n\n"
    assert plain[1]["_meta"]["adkAcp"]["notice"]["level"] == "info"
    assert [p.get("entries") for p in plain[3:]] == [
        [{"content": "x", "priority": "medium", "status": "pending"}],
        [{"content": "y", "priority": "medium", "status": "pending"}],
        [{"content": "fix it", "priority": "medium", "status": "pending"}],
        [],
    ]


def test_a_subagents_child_session_reaches_only_a_client_that_follows_subagents() -> None:
    child = {"sessionId": "kid", "update": mapped(ClientUpdates.every())[0]}
    assert client_form(child, "s", ClientUpdates()) == []
    assert client_form(child, "s", ClientUpdates(subagents=True)) == [child]


RECORD: list[Message] = [
    NoticeMessage(id="n1", timestamp="t", type="warning", content="Quota low.\nOn flash now."),
    GeminiMessage(
        id="g1",
        timestamp="t",
        type="gemini",
        content="Done.",
        toolCalls=[
            {
                "id": "c1",
                "name": "reviewer",
                "status": "success",
                "subagent": {"subagentSessionId": "kid", "title": "Reviewer", "task": "t"},
            }
        ],
    ),
    CompressionMessage(id="c1", timestamp="t", type="compression", summary="the gist"),
]
METADATA = {
    "plans": {
        "todos": {"entries": [{"content": "fix it", "status": "pending"}]},
        "plan:b.md": {"entries": [{"content": "y"}], "markdown": "- [ ] y"},
    },
    "plan": [{"content": "fix it", "status": "pending"}],
}


def replayed(client: ClientUpdates) -> list[dict[str, Any]]:
    child: tuple[Message, ...] = (
        GeminiMessage(id="g2", timestamp="t", type="gemini", content="Reading."),
    )
    return [
        {"sessionId": u.session_id, "update": u.update}
        if isinstance(u, ChildUpdate)
        else {"sessionId": "s", "update": u}
        for u in replay_updates(
            RECORD,
            METADATA,
            mode="default",
            config_options=[],
            client=client,
            children=lambda _: child,
        )
    ]


@pytest.mark.parametrize("client", EVERY_COMBINATION, ids=repr)
def test_a_clients_form_of_the_full_replay_is_what_its_own_load_sends(
    client: ClientUpdates,
) -> None:
    full = replayed(ClientUpdates.every())
    own = [dump(p) for p in replayed(client)]
    assert [dump(p) for params in full for p in client_form(params, "s", client)] == own
