"""ChatRecordingService, the session store, the history rebuild and the slash-command
parser (issue 10), without a process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from runtime.adk.history import INTERRUPTED, events_from_record, history_messages
from runtime.commands import parse_command
from runtime.services.compression import compression_threshold, split_point
from runtime.services.record import load_record, parse_record
from runtime.services.recording import SessionStore


def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def test_last_write_wins_by_id_set_and_rewind_lines(tmp_path: Path) -> None:
    rec = store(tmp_path).create("s1", tmp_path)
    rec.record_message({"id": "u1", "type": "user", "content": [{"text": "one"}]})
    rec.record_message({"id": "g1", "type": "gemini", "content": "a", "toolCalls": []})
    rec.record_message({"id": "u2", "type": "user", "content": [{"text": "two"}]})
    rec.record_message({"id": "g1", "type": "gemini", "content": "a, updated"})
    rec.set_metadata(title="T", mode="yolo")
    rec.set_metadata(title="T")  # unchanged: nothing written
    assert [m["id"] for m in rec.rewind_to("u2")] == ["u2"]
    assert rec.rewind_to("unknown") == []
    rec.close()
    loaded = load_record(rec.path)
    assert [m["id"] for m in loaded.messages] == ["u1", "g1"]
    assert loaded.messages[1]["content"] == "a, updated"  # in its first place
    assert loaded.title == "T" and loaded.metadata["mode"] == "yolo"
    assert loaded.cwd == str(tmp_path)
    lines = rec.path.read_text().splitlines()
    assert sum('"$set"' in line for line in lines) == 1
    assert json.loads(lines[-1]) == {"$rewindTo": "u2"}
    assert oct(rec.path.stat().st_mode & 0o777) == "0o600"


def test_a_torn_line_is_skipped_and_the_next_write_starts_a_new_line(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    rec = sessions.create("s1", tmp_path)
    rec.record_message({"id": "u1", "type": "user", "content": "one"})
    rec.close()
    with rec.path.open("a") as out:
        out.write('{"id": "g1", "type": "gem')
    opened = sessions.open("s1")
    assert opened is not None
    again, record = opened
    assert record.torn_lines == 1 and [m["id"] for m in record.messages] == ["u1"]
    again.record_message({"id": "u2", "type": "user", "content": "two"})
    again.close()
    assert [m["id"] for m in load_record(rec.path).messages] == ["u1", "u2"]
    assert parse_record("not json\n[1]\n").torn_lines == 2


def test_listing_is_newest_first_by_workspace_and_ids_are_never_paths(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for i, cwd in enumerate((a, b, a)):
        rec = sessions.create(f"s{i}", cwd)
        rec.set_metadata(title=f"title {i}")
        rec.close()
        os.utime(rec.path, (time.time() + i, time.time() + i))
    assert [s.session_id for s in sessions.list()] == ["s2", "s1", "s0"]
    listed = sessions.list(a)
    assert [(s.session_id, s.title) for s in listed] == [("s2", "title 2"), ("s0", "title 0")]
    assert sessions.find("../s0") is None and sessions.find("") is None
    assert sessions.delete("s0") and not sessions.delete("s0")
    assert [s.session_id for s in sessions.list(a)] == ["s2"]


def test_the_history_rebuild_pairs_calls_with_responses_and_answers_interrupted_ones() -> None:
    messages = [
        {
            "id": "u1",
            "type": "user",
            "content": [{"text": "go"}],
            "timestamp": "2026-01-01T00:00:00Z",
        },
        {
            "id": "g1",
            "type": "gemini",
            "content": "",
            "parts": [
                {
                    "functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": "a"}},
                    "thoughtSignature": "c2ln",
                },
                {"functionCall": {"id": "c2", "name": "ls", "args": {}}},
            ],
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "read_file",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "c1",
                                "name": "read_file",
                                "response": {"output": "x"},
                            }
                        }
                    ],
                },
                {"id": "c2", "name": "ls", "status": "executing"},
            ],
        },
        {"id": "i1", "type": "info", "content": "a notice"},
    ]
    events = events_from_record(messages, agent_name="agent")
    assert [e.author for e in events] == ["user", "agent", "agent"]
    call = events[1].content.parts[0]  # type: ignore[union-attr, index]
    assert call.function_call.name == "read_file" and call.thought_signature == b"sig"
    responses = [p.function_response for p in events[2].content.parts]  # type: ignore[union-attr]
    assert responses[0].response == {"output": "x"}  # type: ignore[union-attr]
    assert responses[1].response == {"error": INTERRUPTED}  # type: ignore[union-attr]
    assert events[0].timestamp > 0


def test_after_a_compression_the_history_starts_at_its_summary() -> None:
    messages = [
        {"id": "u1", "type": "user", "content": "one"},
        {"id": "g1", "type": "gemini", "content": "a1"},
        {"id": "u2", "type": "user", "content": "two"},
        {"id": "g2", "type": "gemini", "content": "a2"},
        {"id": "c", "type": "compression", "summary": "S", "keptFrom": "u2"},
        {"id": "u3", "type": "user", "content": "three"},
    ]
    assert [m["id"] for m in history_messages(messages)] == ["c", "u2", "g2", "u3"]
    events = events_from_record(messages, agent_name="agent")
    texts = [e.content.parts[0].text for e in events]  # type: ignore[union-attr, index]
    assert texts[0] == "S" and texts[2:] == ["two", "a2", "three"]


def test_the_compression_split_keeps_the_newest_part_from_a_typed_prompt() -> None:
    history = [
        {"id": "u1", "type": "user", "content": "x" * 100},
        {"id": "g1", "type": "gemini", "content": "y" * 100},
        {"id": "u2", "type": "user", "content": "x" * 100},
        {"id": "n", "type": "user", "content": "nudge", "synthetic": True},
        {"id": "g2", "type": "gemini", "content": "y" * 100},
    ]
    assert split_point(history) == 2
    # one exchange: summarized whole (the user asked); a pending prompt or nothing: none
    assert split_point(history[:2]) == 2
    assert split_point(history[:1]) is None
    assert split_point([]) is None
    assert split_point([{"id": "c", "type": "compression", "summary": "S"}]) is None
    assert compression_threshold({}) == 0.5
    assert compression_threshold({"model": {"compressionThreshold": 0.7}}) == 0.7
    assert compression_threshold({"chatCompression": {"contextPercentageThreshold": 0.3}}) == 0.3
    assert compression_threshold({"model": {"compressionThreshold": 7}}) == 0.5


def test_what_counts_as_a_slash_command() -> None:
    assert parse_command("/rewind 2") == ("rewind", "2")
    assert parse_command("  /Help ") == ("help", "")
    assert parse_command("/memory add use tabs\nplease") == ("memory", "add use tabs\nplease")
    assert parse_command("/usr/bin/env is broken") is None
    assert parse_command("fix /etc/hosts") is None
    assert parse_command("/") is None


def test_the_last_prompt_size_is_kept_as_messages_arrive(tmp_path: Path) -> None:
    """`last_input_tokens` (read before every prompt) equals a walk of the record
    after any sequence of appends, updates, compressions and rewinds."""
    import random

    def walked(messages: list[dict[str, object]]) -> int:
        for m in reversed(messages):
            tokens = m.get("tokens")
            if m.get("type") == "compression":
                return 0
            if m.get("type") == "gemini" and isinstance(tokens, dict):
                return int(tokens.get("input") or 0)
        return 0

    rng = random.Random(7)
    rec = store(tmp_path).create("s1", tmp_path)
    ids: list[str] = []
    for step in range(400):
        roll = rng.random()
        if roll < 0.1 and ids:  # an update of any earlier message
            target = rng.choice(ids)
            tokens = {"input": rng.randint(1, 999)} if rng.random() < 0.5 else None
            rec.record_message({"id": target, "type": "gemini", "tokens": tokens})
        elif roll < 0.14 and len(ids) > 3:
            dropped = rec.rewind_to(rng.choice(ids[1:]))
            ids = ids[: len(ids) - len(dropped)]
        else:
            kind = rng.choice(["user", "gemini", "gemini", "compression", "info"])
            message: dict[str, object] = {"id": f"m{step}", "type": kind}
            if kind == "gemini" and rng.random() < 0.7:
                message["tokens"] = {"input": step}
            rec.record_message(message)
            ids.append(f"m{step}")
        assert rec.last_input_tokens() == walked(rec.messages), step
    rec.close()
    opened = store(tmp_path).open("s1")
    assert opened is not None
    reopened = opened[0]
    assert reopened.last_input_tokens() == walked(reopened.messages)
    reopened.close()
