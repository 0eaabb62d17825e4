"""GcliSessionService: the live session object, single append, filtered copies."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from runtime.adk.session_service import GcliSessionService


def _event(text: str, *, partial: bool = False, ts: float = 1.0) -> Event:
    return Event(
        author="agent",
        invocation_id="i",
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        partial=partial,
        timestamp=ts,
    )


async def test_get_returns_the_live_object_so_edits_persist() -> None:
    svc = GcliSessionService()
    created = await svc.create_session(app_name="a", user_id="u", session_id="s")
    live = await svc.get_session(app_name="a", user_id="u", session_id="s")
    assert live is created
    await svc.append_event(live, _event("one"))
    live.events[0].content.parts[0].text = "masked"  # type: ignore[index, union-attr]
    again = await svc.get_session(app_name="a", user_id="u", session_id="s")
    assert again is not None and again.events[0].content.parts[0].text == "masked"  # type: ignore[union-attr, index]


async def test_append_once_and_partials_are_not_stored() -> None:
    svc = GcliSessionService()
    session = await svc.create_session(app_name="a", user_id="u")
    await svc.append_event(session, _event("p", partial=True))
    await svc.append_event(session, _event("final", ts=5.0))
    assert [e.content.parts[0].text for e in session.events] == ["final"]  # type: ignore[union-attr, index]
    assert session.last_update_time == 5.0


async def test_filtered_view_is_a_copy() -> None:
    svc = GcliSessionService()
    session = await svc.create_session(app_name="a", user_id="u", session_id="s")
    for i in range(4):
        await svc.append_event(session, _event(str(i), ts=float(i)))
    view = await svc.get_session(
        app_name="a", user_id="u", session_id="s", config=GetSessionConfig(num_recent_events=2)
    )
    assert view is not None and view is not session and len(view.events) == 2
    view.events.clear()
    assert len(session.events) == 4
    after = await svc.get_session(
        app_name="a", user_id="u", session_id="s", config=GetSessionConfig(after_timestamp=2.0)
    )
    assert after is not None and len(after.events) == 2


async def test_list_delete_and_duplicates() -> None:
    svc = GcliSessionService()
    await svc.create_session(app_name="a", user_id="u", session_id="s1")
    await svc.create_session(app_name="a", user_id="v", session_id="s2")
    with pytest.raises(ValueError):
        await svc.create_session(app_name="a", user_id="u", session_id="s1")
    assert [s.id for s in (await svc.list_sessions(app_name="a", user_id="u")).sessions] == ["s1"]
    assert len((await svc.list_sessions(app_name="a")).sessions) == 2
    await svc.delete_session(app_name="a", user_id="u", session_id="s1")
    assert await svc.get_session(app_name="a", user_id="u", session_id="s1") is None
