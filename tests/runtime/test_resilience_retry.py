"""Retries inside the model (issue #4), in-process: rate limits, capacity, 5xx and broken
streams are retried on the same model without asking anyone; when retries run out
the turn fails with a clear error and the session stays usable."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from runtime.protocol import MessageEvent, NoticeEvent
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    capacity_429,
    per_minute_quota_429,
    server_error_500,
    text_response,
)
from tests.runtime.resilience_harness import (
    PRO,
    agent_text,
    end_of,
    errors,
    harness,
    notices,
)

RETRY_LOG = "runtime.models.retry"


def retry_delays_ms(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The pauses the retry loop announced (before the delay scale is applied)."""
    found = re.compile(r"retrying in (\d+) ms")
    return [
        float(m.group(1))
        for r in caplog.records
        if r.name == RETRY_LOG and (m := found.search(r.getMessage()))
    ]


async def test_a_per_minute_429_is_retried_on_the_same_model_after_the_server_delay(
    tmp_path: Path, fake_gemini: FakeGeminiServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=RETRY_LOG)
    fake_gemini.add(per_minute_quota_429(PRO, retry="12s"), text_response("made it"))
    async with harness(tmp_path, fake_gemini, intents=["retry_always"]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        assert agent_text(events) == "made it"
        assert fake_gemini.models_called == [PRO, PRO]
        assert h.host.choices == []  # silent: nobody was asked
        assert errors(events) == []
        (delay,) = retry_delays_ms(caplog)
        assert 12_000 <= delay <= 12_000 * 1.2  # RetryInfo's delay, plus up to 20% jitter
        first, second = h.requests
        assert second.contents == first.contents


async def test_capacity_errors_get_two_silent_retries_of_one_and_three_seconds(
    tmp_path: Path, fake_gemini: FakeGeminiServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=RETRY_LOG)
    fake_gemini.add(capacity_429(PRO), capacity_429(PRO), text_response("capacity came back"))
    async with harness(tmp_path, fake_gemini) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        assert agent_text(events) == "capacity came back"
        assert fake_gemini.models_called == [PRO, PRO, PRO]
        assert h.host.choices == []
        assert retry_delays_ms(caplog) == [1000, 3000]


async def test_capacity_that_persists_becomes_a_fallback_question(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(*[capacity_429(PRO)] * 3, text_response("flash had room"))
    async with harness(tmp_path, fake_gemini, intents=["retry_once"]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        assert fake_gemini.models_called == [PRO, PRO, PRO, "gemini-2.5-flash"]
        (choice,) = h.host.choices
        assert choice.failure_kind == "terminal"
        assert "capacity" in choice.message


async def test_server_errors_are_retried_with_backoff(
    tmp_path: Path, fake_gemini: FakeGeminiServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=RETRY_LOG)
    fake_gemini.add(server_error_500(), server_error_500(), text_response("third time lucky"))
    async with harness(tmp_path, fake_gemini) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "completed"
        assert agent_text(events) == "third time lucky"
        assert fake_gemini.models_called == [PRO, PRO, PRO]
        assert h.host.choices == []
        first, second = retry_delays_ms(caplog)
        assert 5000 * 0.7 <= first <= 5000 * 1.3  # 5 s ±30%
        assert 10_000 * 0.7 <= second <= 10_000 * 1.3  # doubled


async def test_exhausted_server_error_retries_ask_then_fail_clearly_and_the_session_recovers(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(*[server_error_500("backend on fire")] * 10, text_response("all good now"))
    async with harness(tmp_path, fake_gemini, intents=["stop"]) as h:
        events = await h.prompt("hello")
        assert end_of(events).reason == "failed"
        assert fake_gemini.models_called == [PRO] * 10  # 10 attempts in all
        (choice,) = h.host.choices  # out of attempts: the fallback handler is consulted
        assert choice.fallback_model == "gemini-2.5-flash"
        (error,) = errors(events)
        assert error.fatal and error.status == "INTERNAL"
        assert "500" in error.message and "backend on fire" in error.message

        after = await h.prompt("again")
        assert end_of(after).reason == "completed" and agent_text(after) == "all good now"


async def test_a_stream_dropped_halfway_is_retried_with_a_notice_and_the_answer_arrives(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        text_response(["The answer ", "is ", "42."]).drop_after(1),
        text_response(["The answer ", "is ", "42."]),
        text_response("ok"),
    )
    async with harness(tmp_path, fake_gemini) as h:
        events = await h.prompt("question")
        assert end_of(events).reason == "completed"
        assert errors(events) == []
        (notice,) = notices(events)
        assert "interrupted" in notice and "Retrying" in notice
        assert agent_text(events) == "The answer The answer is 42."
        # the notice comes after the fragment that was shown, before the retried answer
        shown = [e for e in events if isinstance(e, NoticeEvent | MessageEvent)]
        at = next(i for i, e in enumerate(shown) if isinstance(e, NoticeEvent))
        assert agent_text(shown[:at]) == "The answer "
        assert agent_text(shown[at + 1 :]) == "The answer is 42."
        assert fake_gemini.models_called == [PRO, PRO]

        # the history keeps the complete answer once, not the broken fragment
        await h.prompt("thanks")
        history = h.requests[-1].contents
        model_texts = [
            "".join(p.get("text", "") for p in c["parts"] if not p.get("thought"))
            for c in history
            if c.get("role") == "model"
        ]
        assert model_texts == ["The answer is 42."]


async def test_a_stream_that_keeps_dropping_fails_after_four_attempts_and_the_session_recovers(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        *[text_response(["partial ", "answer"]).drop_after(1)] * 4, text_response("fine again")
    )
    async with harness(tmp_path, fake_gemini) as h:
        events = await h.prompt("question")
        assert end_of(events).reason == "failed"
        assert fake_gemini.models_called == [PRO] * 4
        assert len(notices(events)) == 3
        (error,) = errors(events)
        assert error.fatal and error.status == "UNAVAILABLE"
        assert error.meta == {"code": "STREAM_INTERRUPTED", "model": PRO}
        assert "broke off 4 times" in error.message and PRO in error.message

        after = await h.prompt("again")
        assert end_of(after).reason == "completed" and agent_text(after) == "fine again"
