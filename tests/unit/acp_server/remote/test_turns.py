"""`turns.first_of_turn_at`: where a replay from the record starts for a cursor from
another instance (a time in microseconds): the turn running at that time."""

from __future__ import annotations

from datetime import UTC, datetime

from acp_server.remote.turns import first_of_turn_at


def _at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1_000_000)


MESSAGES = [
    {"type": "user", "timestamp": "2026-01-01T10:00:00.000Z"},
    {"type": "gemini", "timestamp": "2026-01-01T10:00:01.000Z"},
    {"type": "user", "timestamp": "2026-01-01T10:05:00.000Z"},
    {"type": "gemini", "timestamp": "2026-01-01T10:05:02.000Z"},
    {"type": "user", "timestamp": "2026-01-01T10:09:00.000Z"},
]


def test_the_replay_starts_at_the_prompt_of_the_turn_running_at_the_cursor() -> None:
    assert first_of_turn_at(MESSAGES, _at("2026-01-01T09:00:00")) == 0  # before everything
    assert first_of_turn_at(MESSAGES, _at("2026-01-01T10:00:00.500")) == 0
    assert first_of_turn_at(MESSAGES, _at("2026-01-01T10:05:01")) == 2  # mid-answer: its prompt
    assert first_of_turn_at(MESSAGES, _at("2026-01-01T10:08:00")) == 2
    assert first_of_turn_at(MESSAGES, _at("2026-01-01T11:00:00")) == 4


def test_messages_without_a_readable_time_do_not_move_the_start() -> None:
    odd = [{"type": "user", "timestamp": "yesterday"}, {"type": "user"}]
    assert first_of_turn_at(odd, _at("2026-01-01T10:00:00")) == 0
