"""The ConversationRecord's messages and lines, read (part of ChatRecordingService;
the format is described in `recording.py` and `shared/reference/legacy-behaviors.md`
§8).

`Message` is a tagged union on `type` (user, gemini, info/warning/error,
compression) of typed dicts: what the recorder writes and the readers (history
rebuild, replay, compression, commands) read. The dicts are the JSON lines
themselves, so the files stay exactly Gemini CLI's shape; a line of a type we do not
know is kept as read, and every reader skips it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Required, TypedDict, TypeGuard, cast

logger = logging.getLogger(__name__)

RECORD_SUFFIX = ".jsonl"


class _Stamped(TypedDict, total=False):
    id: str
    timestamp: str


class UserMessage(_Stamped, total=False):
    """A prompt: `content` is its parts (or a string, in Gemini CLI's older records);
    `displayContent` what the user typed as shown; `synthetic` a guard's message (a
    loop nudge), never typed."""

    type: Required[Literal["user"]]
    content: list[dict[str, Any]] | str
    displayContent: str
    synthetic: bool


class GeminiMessage(_Stamped, total=False):
    """A model answer: its text, the exact `parts` (for the history rebuild), thoughts,
    tool calls (with their status, display and result), model and token counts;
    `partial` when it is only what was streamed before a cut."""

    type: Required[Literal["gemini"]]
    content: str
    parts: list[dict[str, Any]]
    thoughts: list[dict[str, Any]]
    toolCalls: list[dict[str, Any]]
    model: str
    tokens: dict[str, int]
    partial: bool


class NoticeMessage(_Stamped, total=False):
    """A notice, warning or error the user was shown."""

    type: Required[Literal["info", "warning", "error"]]
    content: str


class CompressionMessage(_Stamped, total=False):
    """A compression: the summary that replaces the messages before `keptFrom`."""

    type: Required[Literal["compression"]]
    summary: str
    keptFrom: str | None
    tokensBefore: int
    tokensAfter: int


Message = UserMessage | GeminiMessage | NoticeMessage | CompressionMessage


def is_typed_prompt(message: Message) -> TypeGuard[UserMessage]:
    """Whether `message` is a prompt the user typed (not a guard's synthetic one)."""
    return message.get("type") == "user" and not message.get("synthetic")


def tool_calls(message: Message) -> list[dict[str, Any]]:
    """The tool calls of a model answer (none for any other message)."""
    if message["type"] != "gemini":
        return []
    calls = message.get("toolCalls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def project_hash(cwd: Path) -> str:
    """Gemini CLI's project hash: sha256 of the workspace path."""
    return hashlib.sha256(str(cwd).encode()).hexdigest()


def new_message_id() -> str:
    return uuid.uuid4().hex


# ---------------------------------------------------------------- the record


@dataclass
class ConversationRecord:
    """A session's record as loaded: metadata with `$set`s applied, messages in order."""

    session_id: str
    metadata: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    torn_lines: int = 0

    @property
    def cwd(self) -> str | None:
        cwd = self.metadata.get("cwd")
        return cwd if isinstance(cwd, str) else None

    @property
    def title(self) -> str | None:
        title = self.metadata.get("title")
        return title if isinstance(title, str) else None


def apply_line(record: ConversationRecord, order: dict[str, Message], line: dict[str, Any]) -> None:
    """Fold one parsed line into the record (`order`: messages by id, in first-seen order)."""
    if "$set" in line:
        if isinstance(line["$set"], dict):
            record.metadata.update(line["$set"])
        return
    if "$rewindTo" in line:
        target = line["$rewindTo"]
        if target in order:
            keys = list(order)
            for key in keys[keys.index(target) :]:
                del order[key]
        return
    if isinstance(line.get("id"), str) and isinstance(line.get("type"), str):
        order[line["id"]] = cast(Message, line)


def parse_record(
    text: str, *, session_id: str | None = None, source: str = ""
) -> ConversationRecord:
    """Parse a record's text. Unparseable lines (a torn last line after a crash) are
    skipped and counted; a missing metadata line leaves the metadata empty."""
    record = ConversationRecord(session_id=session_id or "", metadata={})
    order: dict[str, Message] = {}
    first = True
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            record.torn_lines += 1
            continue
        if not isinstance(line, dict):
            record.torn_lines += 1
            continue
        if first and "sessionId" in line and "type" not in line:
            record.metadata.update(line)
        else:
            apply_line(record, order, line)
        first = False
    if record.torn_lines:
        logger.warning("record %s: skipped %d unreadable line(s)", source, record.torn_lines)
    record.messages = list(order.values())
    record.session_id = record.session_id or str(record.metadata.get("sessionId") or "")
    return record


def load_record(path: Path) -> ConversationRecord:
    text = path.read_text(encoding="utf-8", errors="replace")
    return parse_record(text, session_id=path.name.removesuffix(RECORD_SUFFIX), source=str(path))
