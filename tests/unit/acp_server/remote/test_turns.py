"""`turns.first_of_turn_at` and `turns.record_window`: what a replay from the record
sends for a cursor from another instance or from before a let-go (a time in
microseconds): from the turn running at that time, or the next one if it had ended,
up to where the channel's log starts."""

from __future__ import annotations

from datetime import UTC, datetime

from acp_server.remote.turns import first_of_turn_at, record_window


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


END = _at("2030-01-01T00:00:00")
ENDS = [[_at("2026-01-01T10:00:01.100"), 2], [_at("2026-01-01T10:05:02.100"), 4]]


def test_the_window_starts_after_the_turns_the_client_saw_end_and_stops_at_the_log() -> None:
    assert record_window(MESSAGES, _at("2026-01-01T09:00:00"), END, ENDS) == (0, 5)
    assert record_window(MESSAGES, _at("2026-01-01T10:00:00.500"), END, ENDS) == (0, 5)
    # the last update of turn 1 came after its answer was recorded: not seen whole yet
    assert record_window(MESSAGES, _at("2026-01-01T10:00:01.050"), END, ENDS) == (0, 5)
    assert record_window(MESSAGES, _at("2026-01-01T10:00:01.100"), END, ENDS) == (2, 5)
    assert record_window(MESSAGES, _at("2026-01-01T10:05:01"), END, ENDS) == (2, 5)
    assert record_window(MESSAGES, _at("2026-01-01T10:08:00"), END, ENDS) == (4, 5)
    assert record_window(MESSAGES, _at("2026-01-01T11:00:00"), END, ENDS) == (4, 5)  # running
    assert record_window(MESSAGES, _at("2026-01-01T10:08:00"), END) == (2, 5)  # no ends kept
    # the log holds every update from 10:05 on: the record stops there
    assert record_window(MESSAGES, 0, _at("2026-01-01T10:05:00"), ENDS) == (0, 2)
    assert record_window(MESSAGES, _at("2026-01-01T10:08"), _at("2026-01-01T10:06"), ENDS) == (
        4,
        4,
    )
    # ends that do not fit this record (rewound, hand-edited) are passed over
    odd = [[_at("2026-01-01T10:08"), 99], "x", [1]]
    assert record_window(MESSAGES, _at("2026-01-01T10:08:00"), END, odd) == (2, 5)
