"""The session store seam (design: the store behind ChatRecordingService; issue 24).

`RecordStore` is every operation the session lifecycle (`runtime.session.service`)
does on stored sessions: create a record (a `ChatRecordingService` that appends to
it), open one to drive it (its lease taken), read one without driving it, list a
page newest first from a cursor, delete, close. Two stores implement it:

- `FileRecordStore` (the default): the Gemini CLI-compatible JSONL files of
  `recording.SessionStore`, unchanged, with Gemini CLI's own chats listed beside
  them. One process per editor drives its sessions; its lease is the process itself.
- `runtime.services.pg.PgRecordStore` (`--store postgresql://…`): sessions, append-only
  record rows, titles and leases in PostgreSQL, shared by several processes; one
  process drives a session at a time (`SessionLeasedError` for the others). It lists
  Gemini CLI's chats (of this process's user) too.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from runtime.errors import ConfigError, StreamActiveError
from runtime.services.record import tool_calls
from runtime.services.recording import (
    ChatRecordingService,
    ConversationRecord,
    Message,
    SessionStore,
    SessionSummary,
    load_record,
    new_metadata,
)

if TYPE_CHECKING:
    from runtime.services.gemini_cli_chats import GeminiCliChats

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class InvalidCursorError(ConfigError):
    """A `list` cursor this store did not give out."""

    def __init__(self) -> None:
        super().__init__("cursor is not one this agent gave out")


class SessionLeasedError(StreamActiveError):
    """Another process drives this session (holds its lease) and did not let go in
    time, or said why it keeps it (`why`: a client is attached there...) and what the
    asker can do (`advice`; by default, connect to that process)."""

    def __init__(
        self,
        session_id: str,
        holder: str,
        until: str,
        why: str | None = None,
        advice: str | None = None,
    ) -> None:
        if why:
            advice = advice or "connect to that process, or close the session there and try again"
            text = (
                f"session {session_id} is driven by another adk-acp process ({holder}): "
                f"{why}; {advice}"
            )
        else:
            text = (
                f"session {session_id} is driven by another adk-acp process ({holder}) whose "
                f"lease runs until {until}; close it there, or try again once that process is gone"
            )
        super().__init__(text)
        self.session_id = session_id
        self.holder = holder


@dataclass(frozen=True)
class NewRecord:
    """What a new record starts with: its id, workspace and roots, kind, and further
    metadata (a fork's source, a subagent's parent, an imported chat's fields)."""

    session_id: str
    cwd: Path
    additional: tuple[Path, ...] = ()
    kind: str = "main"
    extra: dict[str, Any] | None = None

    def metadata(self) -> dict[str, Any]:
        return new_metadata(self.session_id, self.cwd, self.additional, self.kind, self.extra)


@dataclass(frozen=True)
class SessionPage:
    """One page of `list`: newest first; `next_cursor` None on the last page."""

    sessions: tuple[SessionSummary, ...]
    next_cursor: str | None


class RecordStore(Protocol):
    """The session store seam (see the module docstring)."""

    async def create(self, new: NewRecord) -> ChatRecordingService:
        """A new record (the id must be new), driven by this process."""
        ...

    async def open(self, session_id: str) -> tuple[ChatRecordingService, ConversationRecord] | None:
        """Drive a recorded session: its recorder (appending) and its record; None if
        unknown. Raises `SessionLeasedError` when another process keeps it."""
        ...

    async def read(self, session_id: str) -> ConversationRecord | None:
        """A recorded session's record, without driving it."""
        ...

    async def page(self, cwd: Path | None, cursor: str | None, limit: int) -> SessionPage:
        """Main sessions (of `cwd`, or all), newest first, from `cursor`."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Remove a record; False when there was none."""
        ...

    async def close(self) -> None:
        """Let go of connections (the recordings close themselves)."""
        ...


@runtime_checkable
class LeaseHandoff(Protocol):
    """A store shared by several processes (PostgreSQL): the sessions this process
    drives that another one asked for, and the answer when this one keeps one."""

    async def wanted(self) -> list[str]:
        """Ids of sessions this process holds that another process waits for."""
        ...

    async def refuse(self, session_id: str, why: str, advice: str | None = None) -> None:
        """Tell the waiting process why this one keeps `session_id` (and, with
        `advice`, what it can do about it)."""
        ...


class FileRecordStore:
    """The JSONL files (`SessionStore`) behind the seam, with Gemini CLI's chats listed."""

    def __init__(self, files: SessionStore, gemini_cli: GeminiCliChats | None = None) -> None:
        self.files = files
        self.gemini_cli = gemini_cli

    async def create(self, new: NewRecord) -> ChatRecordingService:
        return self.files.create(
            new.session_id, new.cwd, additional=new.additional, kind=new.kind, extra=new.extra
        )

    async def open(self, session_id: str) -> tuple[ChatRecordingService, ConversationRecord] | None:
        return self.files.open(session_id)

    async def read(self, session_id: str) -> ConversationRecord | None:
        path = self.files.find(session_id)
        return load_record(path) if path is not None else None

    async def page(self, cwd: Path | None, cursor: str | None, limit: int) -> SessionPage:
        """Newest first (by the record's last write); only the listed page's index files
        are read. With a `cwd`, Gemini CLI's chats of that workspace not yet imported
        are listed too."""
        offset = _offset(cursor)
        found: list[tuple[float, Any]] = list(self.files.entries(cwd))
        if cwd is not None and self.gemini_cli is not None:
            ours = {path.name.removesuffix(".jsonl") for _, path in found}
            theirs = [s for s in self.gemini_cli.list(cwd) if s.session_id not in ours]
            found = sorted(
                [*found, *((s.updated_at, s) for s in theirs)],
                key=lambda item: item[0],
                reverse=True,
            )
        page: list[SessionSummary] = []
        index = offset
        while index < len(found) and len(page) < limit:
            mtime, item = found[index]
            index += 1
            summary = (
                item if isinstance(item, SessionSummary) else self.files.summary((mtime, item), cwd)
            )
            if summary is not None:
                page.append(summary)
        return SessionPage(tuple(page), _cursor(index) if index < len(found) else None)

    async def delete(self, session_id: str) -> bool:
        return self.files.delete(session_id)

    async def close(self) -> None:
        return None


async def subagent_records(
    records: RecordStore, messages: Sequence[Message]
) -> dict[str, tuple[Message, ...]]:
    """The recorded messages of the subagent sessions that `messages` ran (by the
    `subagent` field of their tool calls), read only."""
    found: dict[str, tuple[Message, ...]] = {}
    for message in messages:
        for call in tool_calls(message) if message["type"] == "gemini" else ():
            run = call.get("subagent")
            child_id = run.get("subagentSessionId") if isinstance(run, dict) else None
            if not isinstance(child_id, str) or child_id in found:
                continue
            record = await records.read(child_id)
            kind = record.metadata.get("kind") if record is not None else None
            found[child_id] = tuple(record.messages) if record and kind == "subagent" else ()
    return found


def is_database_url(url: str) -> bool:
    return url.startswith(POSTGRES_SCHEMES)


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "offset" and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise InvalidCursorError
