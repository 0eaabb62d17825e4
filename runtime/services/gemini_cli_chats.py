"""Gemini CLI's own recorded chats, read-only (so a conversation started in the
terminal continues in the editor).

Gemini CLI keeps them under `~/.gemini/tmp/<sha256(project path)>/chats/`, one file
per session: `session-*.json` (one object with `messages`) or `session-*.jsonl`
(the ConversationRecord lines this project writes too). They are listed with an id
of their own (`gemini-cli-<sessionId>`) and never written to: loading one imports
it into this agent's store (the JSONL `SessionStore` or the PostgreSQL database; both
list the chats of a workspace), and from then on that copy is listed instead.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, cast

from runtime.services.record import (
    ConversationRecord,
    Message,
    is_typed_prompt,
    parse_record,
    project_hash,
    tool_calls,
)
from runtime.services.recording import SessionSummary

logger = logging.getLogger(__name__)

PREFIX = "gemini-cli-"
MAX_FILE_BYTES = 64 * 1024 * 1024


def chats_dir(home: Path, cwd: Path) -> Path:
    return home / ".gemini" / "tmp" / project_hash(cwd) / "chats"


def _read(path: Path) -> ConversationRecord | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            logger.warning("skipping %s: larger than %d bytes", path, MAX_FILE_BYTES)
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if path.suffix == ".jsonl":
        record = parse_record(text, source=str(path))
        return record if record.session_id else None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str):
        return None
    messages = [
        cast(Message, m) for m in data.get("messages") or [] if isinstance(m, dict) and "type" in m
    ]
    metadata = {k: v for k, v in data.items() if k != "messages"}
    return ConversationRecord(session_id=data["sessionId"], metadata=metadata, messages=messages)


def _title(messages: list[Message]) -> str | None:
    for message in messages:
        if not is_typed_prompt(message):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(
                str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")
            )
        if isinstance(content, str) and content.strip():
            first = content.strip().splitlines()[0]
            return first if len(first) <= 80 else first[:79] + "…"
    return None


class GeminiCliChats:
    """The chats Gemini CLI recorded for one workspace."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def _files(self, cwd: Path) -> list[tuple[float, Path]]:
        folder = chats_dir(self.home, cwd)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return []
        found = []
        for entry in entries:
            if entry.name.startswith("session-") and entry.name.endswith((".json", ".jsonl")):
                try:
                    found.append((entry.stat().st_mtime, Path(entry.path)))
                except OSError:
                    continue
        return found

    def list(self, cwd: Path) -> list[SessionSummary]:
        out = []
        for mtime, path in self._files(cwd):
            record = _read(path)
            if record is None or not record.messages:
                continue
            out.append(
                SessionSummary(
                    session_id=PREFIX + record.session_id,
                    cwd=str(cwd),
                    title=_title(record.messages),
                    updated_at=mtime,
                    source="gemini-cli",
                )
            )
        return out

    def read(self, cwd: Path, session_id: str) -> ConversationRecord | None:
        """The chat listed as `session_id` (with our prefix), converted for import."""
        if not session_id.startswith(PREFIX):
            return None
        wanted = session_id.removeprefix(PREFIX)
        for _, path in self._files(cwd):
            record = _read(path)
            if record is not None and record.session_id == wanted:
                return ConversationRecord(
                    session_id=session_id,
                    metadata={"title": _title(record.messages), "importedFrom": str(path)},
                    messages=[_normalize(m, cwd) for m in record.messages],
                )
        return None


def _normalize(message: Message, cwd: Path) -> Message:
    """Gemini CLI's file diffs (`resultDisplay: {fileDiff, fileName, ...}`) as our
    display items, so the replay shows them as diffs."""
    if message["type"] != "gemini" or not isinstance(message.get("toolCalls"), list):
        return cast(Message, dict(message))
    normalized = message.copy()
    normalized["toolCalls"] = [_diff_display(dict(call), cwd) for call in tool_calls(message)]
    return normalized


def _diff_display(call: dict[str, Any], cwd: Path) -> dict[str, Any]:
    shown: Any = call.get("resultDisplay")
    if isinstance(shown, dict) and "newContent" in shown and "display" not in call:
        raw = shown.get("filePath") or shown.get("fileName") or ""
        path = Path(str(raw))
        path = path if path.is_absolute() else cwd / path
        call["display"] = [
            {
                "type": "diff",
                "path": str(path),
                "before_text": shown.get("originalContent"),
                "after_text": str(shown.get("newContent") or ""),
            }
        ]
        call.setdefault("kind", "edit")
        call.setdefault("locations", [{"path": str(path)}])
        call["resultDisplay"] = (
            shown.get("fileDiff") if isinstance(shown.get("fileDiff"), str) else None
        )
    return call
