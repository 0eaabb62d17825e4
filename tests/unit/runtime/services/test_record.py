"""runtime/services/record.py and atomic_write.py: the typed record messages (the
files unchanged) and the one atomic write."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from runtime.services.atomic_write import write_atomically
from runtime.services.record import (
    GeminiMessage,
    Message,
    UserMessage,
    is_typed_prompt,
    parse_record,
    tool_calls,
)
from runtime.services.recording import SessionStore


def test_the_typed_prompt_predicate() -> None:
    typed: UserMessage = {"type": "user", "content": "hi"}
    nudge: UserMessage = {"type": "user", "content": "loop", "synthetic": True}
    answer: GeminiMessage = {"type": "gemini", "content": "yes"}
    assert [is_typed_prompt(m) for m in (typed, nudge, answer)] == [True, False, False]


def test_tool_calls_only_of_answers_and_only_objects() -> None:
    answer: GeminiMessage = {"type": "gemini", "content": "", "toolCalls": [{"id": "c"}, "junk"]}  # type: ignore[list-item]
    assert tool_calls(answer) == [{"id": "c"}]
    assert tool_calls({"type": "user", "content": "x"}) == []


def test_a_written_message_is_its_json_line_byte_for_byte(tmp_path: Path) -> None:
    recording = SessionStore(tmp_path).create("s1", tmp_path / "ws")
    message: Message = {"type": "info", "content": "Switched.", "id": "m1", "timestamp": "t"}
    recording.record_message(message)
    recording.close()
    [path] = (tmp_path).rglob("s1.jsonl")
    last = path.read_text(encoding="utf-8").splitlines()[-1]
    assert last == '{"type":"info","content":"Switched.","id":"m1","timestamp":"t"}'
    record = parse_record(path.read_text(encoding="utf-8"))
    assert record.messages == [message]


def test_an_unknown_message_type_is_kept_as_read() -> None:
    text = json.dumps({"sessionId": "s"}) + "\n" + json.dumps({"id": "x", "type": "future"})
    [kept] = parse_record(text).messages
    assert kept == {"id": "x", "type": "future"}


def test_write_atomically_replaces_with_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "creds.json"
    target.write_text("old", encoding="utf-8")
    write_atomically(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["creds.json"]


def test_write_atomically_removes_its_temp_file_when_the_replace_fails(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    try:
        write_atomically(tmp_path / "adir", b"x", durable=False)
    except OSError:
        pass
    else:  # pragma: no cover - os.replace cannot put a file over a directory
        raise AssertionError("a file replaced a directory")
    assert os.listdir(tmp_path) == ["adir"]
