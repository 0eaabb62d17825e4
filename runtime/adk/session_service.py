"""GcliSessionService: live in-memory ADK sessions with single append.

ADK's `InMemorySessionService.get_session` hands out deep copies, so an edit a
request processor makes to `session.events` (masking writes its masks back
there) is lost at the next turn. This service keeps one authoritative `Session`
per (app, user, session) key and returns that very object; `append_event` (from
the base class) appends each non-partial event exactly once. A caller asking
for a filtered view gets a copy, so it cannot truncate the live session.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from runtime.adk.event_scans import forget_events


class GcliSessionService(BaseSessionService):
    """Authoritative live sessions; `get_session` returns the live object."""

    def __init__(self) -> None:
        self._live: dict[tuple[str, str, str], Session] = {}
        self.on_append: Callable[[Event], None] | None = None
        self._versions: dict[str, int] = {}
        """Called with every non-partial event appended (the session's recorder)."""

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = session_id or uuid.uuid4().hex
        key = (app_name, user_id, session_id)
        if key in self._live:
            raise ValueError(f"session {session_id!r} already exists")
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=dict(state or {}),
            events=[],
            last_update_time=time.time(),
        )
        self._live[key] = session
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        session = self._live.get((app_name, user_id, session_id))
        if session is None or config is None:
            return session
        events = list(session.events)
        if config.after_timestamp is not None:
            events = [e for e in events if e.timestamp >= config.after_timestamp]
        if config.num_recent_events is not None:
            events = events[-config.num_recent_events :] if config.num_recent_events else []
        return session.model_copy(update={"events": events, "state": dict(session.state)})

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        sessions = [
            s.model_copy(update={"events": []})
            for (app, user, _), s in self._live.items()
            if app == app_name and (user_id is None or user == user_id)
        ]
        sessions.sort(key=lambda s: s.last_update_time)
        return ListSessionsResponse(sessions=sessions)

    def live_events(self, app_name: str, user_id: str, session_id: str) -> list[Event] | None:
        """The live event list of a session (None: no such session)."""
        session = self._live.get((app_name, user_id, session_id))
        return session.events if session is not None else None

    def touch(self, session_id: str) -> None:
        """Events were changed in place (masks written back): history built from them
        before must be built again."""
        self._versions[session_id] = self._versions.get(session_id, 0) + 1

    def version(self, session_id: str) -> int:
        """Bumped whenever a session's events are replaced (load, rewind, compression)."""
        return self._versions.get(session_id, 0)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        session = self._live.pop((app_name, user_id, session_id), None)
        if session is not None:
            forget_events(session.events)

    async def append_event(self, session: Session, event: Event) -> Event:
        event = await super().append_event(session, event)
        if not event.partial:
            session.last_update_time = event.timestamp
            if self.on_append is not None:
                self.on_append(event)
        return event

    async def replace_events(self, session: Session, events: list[Event]) -> None:
        """Start the live session over with `events` (a loaded record, a rewind, a
        compression), each appended once, without reporting them as new."""
        listener, self.on_append = self.on_append, None
        self._versions[session.id] = self._versions.get(session.id, 0) + 1
        try:
            forget_events(session.events)
            session.events.clear()
            for event in events:
                await self.append_event(session, event)
        finally:
            self.on_append = listener
