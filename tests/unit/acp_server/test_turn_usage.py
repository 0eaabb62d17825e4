"""`TurnUsage`: a turn's model calls summed into ACP's (unstable) `Usage`."""

from __future__ import annotations

import pytest

from acp_server.errors import AcpError
from acp_server.handlers.titles import MAX_TITLE_CHARS, clean_title
from acp_server.turn_usage import TurnUsage
from runtime.protocol import UsageEvent


def _event(i: int, inp: int | None, out: int | None, cached: int | None = None) -> UsageEvent:
    return UsageEvent(
        id=str(i),
        stream_id="s",
        model="m",
        input_tokens=inp,
        output_tokens=out,
        cached_tokens=cached,
    )


def test_no_model_call_no_usage() -> None:
    assert TurnUsage().answer() is None


def test_calls_are_summed_and_cached_reads_only_when_reported() -> None:
    usage = TurnUsage()
    usage.add(_event(1, 100, 7))
    assert usage.answer() == {"totalTokens": 107, "inputTokens": 100, "outputTokens": 7}
    usage.add(_event(2, 130, None, cached=40))
    assert usage.answer() == {
        "totalTokens": 237,
        "inputTokens": 230,
        "outputTokens": 7,
        "cachedReadTokens": 40,
    }


def test_titles_are_one_line_not_blank_and_bounded() -> None:
    assert clean_title("  Fix\n\tthe   bug ") == "Fix the bug"
    long = clean_title("x" * (MAX_TITLE_CHARS + 50))
    assert len(long) == MAX_TITLE_CHARS and long.endswith("…")
    with pytest.raises(AcpError):
        clean_title(" \n ")
