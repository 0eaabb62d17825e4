"""ChatRecordingService and the session store (design: ChatRecordingService; see
`docs/gemini-cli-behaviours.md#conversation-record` for the ConversationRecord shape).

One JSONL file per session, append-only, in Gemini CLI's ConversationRecord shape:
line 1 is the metadata (`sessionId`, `projectHash`, `startTime`, `lastUpdated`,
`kind`, and ours: `cwd`, `additionalDirectories`); then message records (`id`,
`timestamp`, `type`, `content`, ...; an updated message is appended again and the
last write wins by id), `{"$set": {...}}` metadata lines and
`{"$rewindTo": messageId}` lines. Every line is one `os.write` on an `O_APPEND`
descriptor, so a `kill -9` loses at most the line being written, and a torn last
line is skipped on load with a log line.

Layout: `<sessions dir>/<project hash>/<session id>.jsonl`, next to a small
`<session id>.meta.json` (cwd, title, start time), rewritten atomically when the
title changes, so `session/list` reads one small file per listed session and takes
`updatedAt` from the record's mtime. Session ids are random UUIDs: two processes on
one workspace never write the same file.

Our extensions to Gemini CLI's records (ignored by its reader): a gemini message
keeps the model's exact `parts` (thought signatures included) for the history
rebuild; a tool call keeps its `kind`, `locations` and `display` content (diffs) for
the replay; a user message a guard sent (a loop nudge) is `synthetic`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.services.atomic_write import write_atomically
from runtime.services.record import (
    RECORD_SUFFIX,
    new_message_id,
    now_iso,
    project_hash,
)

# the record's format lives in `record.py`; these names are still read from here
from runtime.services.record import ConversationRecord as ConversationRecord
from runtime.services.record import Message as Message
from runtime.services.record import load_record as load_record

logger = logging.getLogger(__name__)

META_SUFFIX = ".meta.json"
LISTED_FIELDS = frozenset({"title", "additionalDirectories"})


def default_sessions_dir(env: dict[str, str], home: Path) -> Path:
    """`$XDG_STATE_HOME/adk-acp/sessions`, by default `~/.local/state/adk-acp/sessions`."""
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state and Path(state).is_absolute() else home / ".local" / "state"
    return base / "adk-acp" / "sessions"


# ---------------------------------------------------------------- the service


class ChatRecordingService:
    """Appends one session's record as it happens (design: ChatRecordingService).

    Messages are kept in memory too (`messages`), so updates (a tool call's result)
    rewrite a whole message record, and `rewind_to` knows what it removes."""

    def __init__(self, path: Path, record: ConversationRecord) -> None:
        self.path = path
        self._remember(record)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if record.torn_lines:
            self._write_raw(b"\n")  # the next line must not continue a torn one

    def _remember(self, record: ConversationRecord) -> None:
        """The record's state in memory (any store's recording starts here)."""
        self.session_id = record.session_id
        self.metadata = dict(record.metadata)
        self._messages: dict[str, Message] = {m["id"]: m for m in record.messages}
        # The last model call's prompt size, kept as messages arrive (read before every
        # prompt to decide on compression: a walk of the whole record grew per turn).
        self._tokens: int | None = None  # None: to be found by a walk
        self._newest: str | None = next(reversed(self._messages), None)
        self.on_listing_changed: Callable[[dict[str, Any]], None] | None = None
        """Called with the metadata when a listed field (title) changes: the store's index."""

    # ------------------------------------------------------------ writing

    def _write_raw(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, data)
        except OSError as exc:  # a full disk must not end the turn
            logger.warning("cannot write the session record %s: %s", self.path, exc)

    def _write(self, line: Mapping[str, Any]) -> None:
        data = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._write_raw(data.encode("utf-8"))

    @property
    def messages(self) -> list[Message]:
        return list(self._messages.values())

    def message(self, message_id: str) -> Message | None:
        return self._messages.get(message_id)

    def record_message(self, message: Message) -> None:
        """Record a new message or an updated one (same id: last write wins)."""
        message.setdefault("id", new_message_id())
        message.setdefault("timestamp", now_iso())
        known = message["id"] in self._messages
        self._messages[message["id"]] = message
        self._write(message)
        if known and message["id"] != self._newest:
            self._tokens = None  # an older message changed: walk again when asked
            return
        self._newest = message["id"]
        kind, tokens = message.get("type"), message.get("tokens")
        if kind == "compression":
            self._tokens = 0
        elif kind == "gemini" and isinstance(tokens, dict):
            self._tokens = int(tokens.get("input") or 0)

    def last_input_tokens(self) -> int:
        """The prompt tokens of the newest model answer that has a count, 0 when a
        compression (or nothing) comes after it."""
        if self._tokens is None:
            self._tokens = 0
            for message in reversed(self._messages.values()):
                tokens = message.get("tokens")
                if message.get("type") == "compression":
                    break
                if message.get("type") == "gemini" and isinstance(tokens, dict):
                    self._tokens = int(tokens.get("input") or 0)
                    break
        return self._tokens

    def set_metadata(self, **fields: Any) -> None:
        """Record metadata changes (title, model, mode, plan...)."""
        changed = {k: v for k, v in fields.items() if self.metadata.get(k) != v}
        if not changed:
            return
        self.metadata.update(changed)
        self._write({"$set": changed})
        if self.on_listing_changed is not None and LISTED_FIELDS & changed.keys():
            self.on_listing_changed(self.metadata)

    def rewind_to(self, message_id: str) -> list[Message]:
        """Drop `message_id` and everything after it; returns what was dropped
        (unknown id: nothing changes)."""
        if message_id not in self._messages:
            return []
        keys = list(self._messages)
        dropped = [self._messages.pop(k) for k in keys[keys.index(message_id) :]]
        self._write({"$rewindTo": message_id})
        self._tokens = None
        self._newest = next(reversed(self._messages), None)
        return dropped

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    async def still_driving(self) -> bool:
        """Before a turn: whether this process still drives the session (a file's
        always; a database store's while its lease is renewed, `pg/recording.py`)."""
        return True

    async def aclose(self) -> None:
        """Close once every line is stored (a file's are at once; a database store's
        queued lines are written and its lease let go first)."""
        self.close()


# ---------------------------------------------------------------- the store


def new_metadata(
    session_id: str,
    cwd: Path,
    additional: tuple[Path, ...] = (),
    kind: str = "main",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A new record's metadata line (every store's)."""
    started = now_iso()
    return {
        "sessionId": session_id,
        "projectHash": project_hash(cwd),
        "startTime": started,
        "lastUpdated": started,
        "kind": kind,
        "cwd": str(cwd),
        "additionalDirectories": [str(p) for p in additional],
        **(extra or {}),
    }


@dataclass(frozen=True)
class SessionSummary:
    """One listed session."""

    session_id: str
    cwd: str
    title: str | None
    updated_at: float
    additional_directories: tuple[str, ...] = ()
    source: str = "adk-acp"


class SessionStore:
    """Where records live: one folder per workspace under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _folder(self, cwd: Path) -> Path:
        return self.root / project_hash(cwd)[:16]

    def create(
        self,
        session_id: str,
        cwd: Path,
        *,
        additional: tuple[Path, ...] = (),
        kind: str = "main",
        extra: dict[str, Any] | None = None,
    ) -> ChatRecordingService:
        folder = self._folder(cwd)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"{session_id}{RECORD_SUFFIX}"
        metadata = new_metadata(session_id, cwd, additional, kind, extra)
        with open(path, "x", encoding="utf-8") as out:  # a new id: the file must not exist
            out.write(json.dumps(metadata, ensure_ascii=False) + "\n")
        os.chmod(path, 0o600)
        self.write_meta(path, metadata)
        return self._service(path, ConversationRecord(session_id, metadata))

    def _service(self, path: Path, record: ConversationRecord) -> ChatRecordingService:
        service = ChatRecordingService(path, record)
        service.on_listing_changed = lambda meta: self.write_meta(path, meta)
        return service

    def open(self, session_id: str) -> tuple[ChatRecordingService, ConversationRecord] | None:
        """The recorder of an existing session (appending) and its record as loaded."""
        path = self.find(session_id)
        if path is None:
            return None
        record = load_record(path)
        return self._service(path, record), record

    def find(self, session_id: str) -> Path | None:
        if not _safe_id(session_id) or not self.root.is_dir():
            return None
        for folder in _subdirs(self.root):
            path = folder / f"{session_id}{RECORD_SUFFIX}"
            if path.is_file():
                return path
        return None

    @staticmethod
    def write_meta(record_path: Path, fields: dict[str, Any]) -> None:
        """The listing's sidecar next to the record, replaced atomically."""
        folder = record_path.parent
        session_id = record_path.name.removesuffix(RECORD_SUFFIX)
        meta = {
            "sessionId": session_id,
            "cwd": fields.get("cwd"),
            "title": fields.get("title"),
            "startTime": fields.get("startTime"),
            "additionalDirectories": fields.get("additionalDirectories") or [],
            "kind": fields.get("kind") or "main",
        }
        try:
            write_atomically(
                folder / f"{session_id}{META_SUFFIX}",
                json.dumps(meta, ensure_ascii=False).encode("utf-8"),
                durable=False,
            )
        except OSError as exc:
            logger.warning("cannot write the session index for %s: %s", session_id, exc)

    def delete(self, session_id: str) -> bool:
        path = self.find(session_id)
        if path is None:
            return False
        path.unlink(missing_ok=True)
        path.with_name(f"{session_id}{META_SUFFIX}").unlink(missing_ok=True)
        return True

    def entries(self, cwd: Path | None = None) -> list[tuple[float, Path]]:
        """(last write, record path) of the recorded sessions, newest first: one
        `scandir` per folder, no file read."""
        folders = [self._folder(cwd)] if cwd is not None else list(_subdirs(self.root))
        found: list[tuple[float, Path]] = []
        for folder in folders:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(RECORD_SUFFIX):
                    try:
                        found.append((entry.stat().st_mtime, Path(entry.path)))
                    except OSError:
                        continue
        found.sort(key=lambda item: item[0], reverse=True)
        return found

    def summary(self, entry: tuple[float, Path], cwd: Path | None = None) -> SessionSummary | None:
        """One listed session (its sidecar read); None if unreadable or of another cwd."""
        summary = self._summary(entry[1], entry[0])
        if summary is None or (cwd is not None and summary.cwd != str(cwd)):
            return None
        return summary

    def list(self, cwd: Path | None = None) -> list[SessionSummary]:
        """Recorded sessions, newest first (by the record's last write)."""
        out = []
        for entry in self.entries(cwd):
            summary = self.summary(entry, cwd)
            if summary is not None:
                out.append(summary)
        return out

    def _summary(self, path: Path, mtime: float) -> SessionSummary | None:
        session_id = path.name.removesuffix(RECORD_SUFFIX)
        meta_path = path.with_name(f"{session_id}{META_SUFFIX}")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = None
        if not isinstance(meta, dict):  # no sidecar (an older record): read the first line
            try:
                with path.open(encoding="utf-8") as handle:
                    meta = json.loads(handle.readline())
            except (OSError, ValueError):
                return None
            if not isinstance(meta, dict):
                return None
        cwd = meta.get("cwd")
        if not isinstance(cwd, str) or meta.get("kind") == "subagent":
            return None  # a subagent's record is reached from its parent's, not listed
        title = meta.get("title")
        extra = meta.get("additionalDirectories") or []
        return SessionSummary(
            session_id=session_id,
            cwd=cwd,
            title=title if isinstance(title, str) else None,
            updated_at=mtime,
            additional_directories=tuple(str(d) for d in extra if isinstance(d, str)),
        )


def _safe_id(session_id: str) -> bool:
    return 0 < len(session_id) <= 128 and all(c.isalnum() or c in "-_" for c in session_id)


def _subdirs(root: Path) -> Iterator[Path]:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield Path(entry.path)
