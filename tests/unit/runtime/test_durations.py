"""runtime/durations.py: the one human duration format."""

from __future__ import annotations

import pytest

from runtime.durations import format_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (60, "1m"), (750, "12m 30s"), (3600, "1h"), (11100, "3h 5m")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
