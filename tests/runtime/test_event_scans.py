"""ADK's session scans kept incrementally give what ADK's own functions give, on
generated histories that grow, get rebuilt, carry task scopes, aborts, compactions
and rewinds (runtime/adk/event_scans.py); the scans left to ADK answer our histories
without walking them."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from google.adk import runners
from google.adk.agents.llm.task._finish_task_tool import (
    FINISH_TASK_ERROR_RESULT,
    FINISH_TASK_SUCCESS_RESULT,
    FINISH_TASK_TOOL_NAME,
)
from google.adk.events import _rewind_events
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.tools.agent_tool import _TaskAgentTool
from google.adk.workflow import _llm_agent_wrapper
from google.genai import types

from runtime.adk import event_scans

FINISH = FINISH_TASK_TOOL_NAME


def _original_rewinds() -> Any:
    event_scans.install()  # idempotent: the original is what the wrapper closes over
    fn: Any = _rewind_events._apply_rewinds
    return fn.__closure__[0].cell_contents if fn.__closure__ else fn


def _event(rng: random.Random, i: int, invocation: str, rewinds: bool) -> Event:
    kind = rng.random()
    actions = EventActions()
    scope = rng.choice([None, None, None, "s1", "s2", f"s{i % 5}"])
    author = rng.choice(["user", "agent", "other"])
    content: types.Content | None
    error_code = None
    if kind < 0.25:
        call_id = f"c{rng.randint(0, 40)}"
        name = rng.choice(["delegate", "read_file", "delegate"])
        content = types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))],
        )
    elif kind < 0.45:
        call_id = f"c{rng.randint(0, 40)}"
        name = rng.choice([FINISH, "delegate", "read_file"])
        result = rng.choice([FINISH_TASK_SUCCESS_RESULT, FINISH_TASK_ERROR_RESULT, "other"])
        content = types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name=name, response={"result": result}
                    )
                )
            ],
        )
    elif kind < 0.5:
        content = None
        error_code = "INVOCATION_ABORTED"
    elif kind < 0.55:
        content = types.Content(role="model", parts=[types.Part(text="summary")])
        actions = EventActions(
            compaction=EventCompaction(
                start_timestamp=0.0, end_timestamp=1.0, compacted_content=content
            )
        )
    else:
        content = types.Content(role="model", parts=[types.Part(text=f"text {i}")])
    if rewinds and rng.random() < 0.03:
        actions = EventActions(rewind_before_invocation_id=f"inv{rng.randint(0, 5)}")
    return Event(
        author=author,
        invocation_id=invocation,
        content=content,
        actions=actions,
        isolation_scope=scope,
        error_code=error_code,
    )


def _check(rng: random.Random, rewinds: bool) -> None:
    original_rewinds = _original_rewinds()
    session = SimpleNamespace(events=[])
    invocation = "inv0"
    for i in range(300):
        if rng.random() < 0.2:
            invocation = f"inv{i}"
        session.events.append(_event(rng, i, invocation, rewinds))
        if rng.random() < 0.03:  # a rebuild installs a new list
            session.events = list(session.events[: rng.randint(0, len(session.events))])
        events = session.events
        assert [e.id for e in _rewind_events._apply_rewinds(events)] == [
            e.id for e in original_rewinds(events)
        ], i


def test_scans_equal_adks_own_on_growing_histories() -> None:
    for seed in range(4):
        _check(random.Random(seed), rewinds=False)


def test_histories_with_rewinds_still_give_adks_answers() -> None:
    for seed in range(4):
        _check(random.Random(100 + seed), rewinds=True)


class _Unwalkable(list[Event]):
    """A history that fails the test when a scan walks it past its scope check."""

    def __iter__(self) -> Any:
        for event in super().__iter__():
            assert event.isolation_scope is None
            yield event

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("walked")


def test_the_scans_left_to_adk_answer_our_histories_at_once() -> None:
    """ADK 2.15's fast paths: no event with an isolation scope → no task scope; no
    task-agent tool → no delegation, without reading the events at all."""
    rng = random.Random(7)
    events = _Unwalkable(
        Event(
            author="agent",
            invocation_id=f"inv{i}",
            content=types.Content(role="model", parts=[types.Part(text=str(rng.random()))]),
        )
        for i in range(50)
    )
    session = SimpleNamespace(events=events)
    event_scans.install()
    assert runners._find_active_task_scope(session) is None  # type: ignore[arg-type]

    class NoEvents:
        @property
        def events(self) -> Any:
            raise AssertionError("read the events")

    tools = {"read_file": object(), "delegate": object()}
    found = _llm_agent_wrapper._find_unresolved_task_delegations(NoEvents(), "agent", tools)  # type: ignore[arg-type]
    assert found == []
    task_tool = _TaskAgentTool.__new__(_TaskAgentTool)
    with_task = {"delegate": task_tool}
    assert _llm_agent_wrapper._find_unresolved_task_delegations(session, "agent", with_task) == []  # type: ignore[arg-type]


def test_the_returned_list_is_the_callers_own() -> None:
    session_events = [
        Event(author="user", invocation_id="i", content=types.Content(role="user", parts=[]))
    ]
    event_scans.install()
    first = _rewind_events._apply_rewinds(session_events)
    first.clear()
    assert len(_rewind_events._apply_rewinds(session_events)) == 1


def test_filtered_views_equal_adks_own() -> None:
    """`InvocationContext._get_events` for a root agent (no branch), by invocation
    and branch, on a growing history with branched events from sub-agents."""
    from google.adk.agents.invocation_context import InvocationContext

    event_scans.install()
    wrapper = InvocationContext._get_events
    original = wrapper.__closure__[0].cell_contents  # type: ignore[index]
    rng = random.Random(3)
    events: list[Event] = []
    for i in range(200):
        invocation = f"inv{i // 7}"
        author = rng.choice(["user", "agent", "sub"])
        branch = rng.choice([None, None, "agent.sub", "agent"])
        events.append(
            Event(
                author=author,
                invocation_id=invocation,
                branch=branch,
                content=types.Content(role="model", parts=[types.Part(text=str(i))]),
            )
        )
        for branch_of_context in (None, "agent"):
            context = SimpleNamespace(
                session=SimpleNamespace(events=events),
                invocation_id=invocation,
                branch=branch_of_context,
                agent=None,
                node_path=None,
            )
            for flags in ((True, False), (False, True), (True, True), (False, False)):
                mine = wrapper(context, current_invocation=flags[0], current_branch=flags[1])  # type: ignore[arg-type]
                theirs = original(context, current_invocation=flags[0], current_branch=flags[1])
                assert [e.id for e in mine] == [e.id for e in theirs], (i, branch_of_context, flags)


async def test_a_closed_or_refilled_session_leaves_nothing_behind() -> None:
    from google.adk.sessions.session import Session

    from runtime.adk.session_service import GcliSessionService

    event_scans.install()
    service = GcliSessionService()
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    assert isinstance(session, Session)
    for i in range(3):
        await service.append_event(
            session,
            Event(author="user", invocation_id=f"i{i}", content=types.Content(role="user")),
        )
    events = session.events
    _rewind_events._apply_rewinds(events)

    def kept() -> int:
        return sum(p.events is events for p in event_scans._live._lists.values())

    assert kept() == 1
    await service.replace_events(session, [])
    assert kept() == 0
    _rewind_events._apply_rewinds(events)
    await service.delete_session(app_name="a", user_id="u", session_id="s")
    assert kept() == 0
