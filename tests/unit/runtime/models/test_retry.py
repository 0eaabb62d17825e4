"""retry_with_backoff: timings with a fake sleep, fallback hook, abort."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from google.genai import errors

from runtime.models.quota_errors import (
    ModelNotFoundError,
    RetryableQuotaError,
    TerminalQuotaError,
)
from runtime.models.retry import (
    MID_STREAM_RETRY,
    AbortedError,
    RetryNotice,
    is_network_error,
    is_retryable_error,
    retry_with_backoff,
)
from tests.fakes.gemini_errors import (
    capacity_body,
    google_error_body,
    not_found_body,
    per_day_quota_body,
    per_minute_quota_body,
    server_error_body,
)

PRO = "gemini-2.5-pro"


class FakeSleep:
    """Records every pause (in seconds) and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)

    @property
    def ms(self) -> list[float]:
        return [round(s * 1000, 6) for s in self.calls]


class Script:
    """A call that raises the scripted errors in order, then returns `result`."""

    def __init__(self, *outcomes: BaseException, result: str = "ok") -> None:
        self.outcomes = list(outcomes)
        self.result = result
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.outcomes:
            raise self.outcomes.pop(0)
        return self.result


def err(code: int, body: dict[str, Any] | None = None) -> errors.APIError:
    body = body or google_error_body(code, None, "failure")
    return errors.ServerError(code, body) if code >= 500 else errors.ClientError(code, body)


def rate_limited() -> errors.APIError:
    return err(429, google_error_body(429, None, "Resource has been exhausted"))


def fixed(value: float) -> Callable[[], float]:
    return lambda: value


async def run(call: Callable[[], Awaitable[str]], sleep: FakeSleep, **kwargs: Any) -> str:
    kwargs.setdefault("random", fixed(0.5))
    return await retry_with_backoff(call, sleep=sleep, **kwargs)


# ------------------------------------------------------------ backoff timings


async def test_success_first_time_does_not_sleep() -> None:
    sleep = FakeSleep()
    assert await run(Script(), sleep) == "ok"
    assert sleep.calls == []


async def test_exponential_backoff_doubles_to_the_cap_without_jitter_at_midpoint() -> None:
    sleep = FakeSleep()
    script = Script(*(err(500) for _ in range(6)))
    assert await run(script, sleep, random=fixed(0.5)) == "ok"
    assert sleep.ms == [5000, 10000, 20000, 30000, 30000, 30000]
    assert script.calls == 7


@pytest.mark.parametrize(("rnd", "first"), [(0.0, 3500.0), (0.999999, 6499.997)])
async def test_backoff_jitter_is_plus_minus_30_percent(rnd: float, first: float) -> None:
    sleep = FakeSleep()
    await run(Script(err(503)), sleep, random=fixed(rnd))
    assert sleep.ms[0] == pytest.approx(first, abs=0.01)


async def test_network_errors_are_retried() -> None:
    sleep = FakeSleep()
    script = Script(ConnectionResetError("reset"), TimeoutError(), httpx.ConnectError("no route"))
    assert await run(script, sleep) == "ok"
    assert sleep.ms == [5000, 10000, 20000]


async def test_400_is_never_retried() -> None:
    sleep = FakeSleep()
    error = err(400)
    script = Script(error)
    with pytest.raises(errors.ClientError) as raised:
        await run(script, sleep, should_retry=lambda _e: True)
    assert raised.value is error
    assert script.calls == 1 and sleep.calls == []


async def test_non_retryable_error_is_raised_at_once() -> None:
    sleep = FakeSleep()
    with pytest.raises(ValueError):
        await run(Script(ValueError("bug")), sleep)
    assert sleep.calls == []


async def test_attempts_exhausted_on_5xx_raises_the_original_error() -> None:
    sleep = FakeSleep()
    last = err(500, server_error_body())
    script = Script(err(500), err(500), last)
    with pytest.raises(errors.ServerError) as raised:
        await run(script, sleep, max_attempts=3)
    assert raised.value is last
    assert script.calls == 3 and len(sleep.calls) == 2


async def test_attempts_exhausted_on_network_error_raises_it() -> None:
    sleep = FakeSleep()
    script = Script(*(ConnectionResetError() for _ in range(3)))
    with pytest.raises(ConnectionResetError):
        await run(script, sleep, max_attempts=3)
    assert script.calls == 3


# ---------------------------------------------------------------- quota delays


async def test_server_retry_delay_is_honored_with_up_to_20_percent_jitter() -> None:
    sleep = FakeSleep()
    body = per_minute_quota_body(PRO, retry="12s")
    await run(Script(err(429, body), err(429, body)), sleep, random=fixed(0.5))
    # max(5000, 12000) + 10% of it; the delay stays at 12000 (no doubling)
    assert sleep.ms == [13200, 13200]


async def test_server_delay_shorter_than_current_uses_current() -> None:
    sleep = FakeSleep()
    body = per_minute_quota_body(PRO, retry="2s")
    await run(Script(err(429, body)), sleep, random=fixed(0.0))
    assert sleep.ms == [5000]


@pytest.mark.parametrize("rnd", [0.0, 0.5, 0.999999])
async def test_server_delay_jitter_bounds(rnd: float) -> None:
    sleep = FakeSleep()
    await run(Script(err(429, per_minute_quota_body(PRO, retry="20s"))), sleep, random=fixed(rnd))
    assert 20000 <= sleep.ms[0] <= 24000


async def test_rate_limit_without_delay_uses_exponential_backoff() -> None:
    sleep = FakeSleep()
    await run(Script(rate_limited(), rate_limited()), sleep)
    assert sleep.ms == [5000, 10000]


async def test_capacity_gets_two_silent_retries_of_1s_and_3s() -> None:
    sleep = FakeSleep()
    notices: list[RetryNotice] = []
    capacity = err(429, capacity_body(PRO))
    script = Script(capacity, capacity)
    assert await run(script, sleep, on_retry=notices.append) == "ok"
    assert sleep.ms == [1000, 3000]
    assert [n.kind for n in notices] == ["capacity", "capacity"]


async def test_capacity_after_silent_retries_goes_to_fallback() -> None:
    sleep = FakeSleep()
    seen: list[BaseException] = []

    async def fallback(error: BaseException) -> bool:
        seen.append(error)
        return False

    capacity = err(429, capacity_body(PRO))
    script = Script(capacity, capacity, capacity)
    with pytest.raises(TerminalQuotaError) as raised:
        await run(script, sleep, on_persistent_429=fallback, current_model=lambda: PRO)
    assert raised.value.is_capacity
    assert sleep.ms == [1000, 3000]
    assert seen == [raised.value]
    assert script.calls == 3


# ------------------------------------------------------------- persistent 429


async def test_terminal_quota_goes_straight_to_fallback_and_truthy_resets() -> None:
    sleep = FakeSleep()
    seen: list[BaseException] = []

    async def fallback(error: BaseException) -> bool:
        seen.append(error)
        return True

    # fails twice with 500 (delay grows), then daily quota, then again a 500 after fallback
    script = Script(err(500), err(500), err(429, per_day_quota_body(PRO)), err(500))
    assert await run(script, sleep, on_persistent_429=fallback, current_model=lambda: PRO) == "ok"
    assert len(seen) == 1 and isinstance(seen[0], TerminalQuotaError)
    assert "gemini-2.5-pro is out of daily quota" in str(seen[0])
    # after the reset the delay starts again at 5000
    assert sleep.ms == [5000, 10000, 5000]


async def test_terminal_quota_without_handler_raises_classified() -> None:
    sleep = FakeSleep()
    with pytest.raises(TerminalQuotaError):
        await run(Script(err(429, per_day_quota_body(PRO))), sleep)
    assert sleep.calls == []


async def test_not_found_goes_to_fallback() -> None:
    sleep = FakeSleep()

    async def decline(_error: BaseException) -> None:
        return None

    with pytest.raises(ModelNotFoundError):
        await run(Script(err(404, not_found_body("x"))), sleep, on_persistent_429=decline)


async def test_retryable_quota_exhausted_attempts_then_fallback_resets_attempts() -> None:
    sleep = FakeSleep()
    calls: list[BaseException] = []

    async def fallback(error: BaseException) -> bool:
        calls.append(error)
        return len(calls) == 1  # accept once, then decline

    script = Script(*(rate_limited() for _ in range(6)))
    with pytest.raises(RetryableQuotaError):
        await run(script, sleep, max_attempts=3, on_persistent_429=fallback)
    assert script.calls == 6  # 3 attempts, fallback, 3 more attempts
    assert len(calls) == 2
    assert sleep.ms == [5000, 10000, 5000, 10000]


async def test_5xx_exhausted_also_asks_fallback() -> None:
    sleep = FakeSleep()
    seen: list[BaseException] = []

    async def fallback(error: BaseException) -> bool:
        seen.append(error)
        return True

    script = Script(err(503), err(503))
    assert await run(script, sleep, max_attempts=2, on_persistent_429=fallback) == "ok"
    assert len(seen) == 1


async def test_fallback_handler_raising_is_treated_as_decline() -> None:
    sleep = FakeSleep()

    async def broken(_error: BaseException) -> bool:
        raise RuntimeError("handler bug")

    with pytest.raises(TerminalQuotaError):
        await run(Script(err(429, per_day_quota_body(PRO))), sleep, on_persistent_429=broken)


# ----------------------------------------------------------------------- abort


async def test_abort_event_set_before_start() -> None:
    event = asyncio.Event()
    event.set()
    script = Script()
    with pytest.raises(AbortedError):
        await retry_with_backoff(script, abort_event=event, sleep=FakeSleep())
    assert script.calls == 0


async def test_abort_during_wait_stops_immediately() -> None:
    event = asyncio.Event()
    started = asyncio.Event()

    async def endless_sleep(_seconds: float) -> None:
        started.set()
        await asyncio.Event().wait()  # never returns by itself

    async def abort_soon() -> None:
        await started.wait()
        event.set()

    script = Script(err(500))
    aborter = asyncio.create_task(abort_soon())
    with pytest.raises(AbortedError):
        await retry_with_backoff(script, abort_event=event, sleep=endless_sleep)
    await aborter
    assert script.calls == 1


async def test_cancellation_propagates_out_of_a_wait() -> None:
    started = asyncio.Event()

    async def endless_sleep(_seconds: float) -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(
        retry_with_backoff(Script(err(500)), sleep=endless_sleep, abort_event=asyncio.Event())
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError):
        await retry_with_backoff(Script(), max_attempts=0, sleep=FakeSleep())


# ------------------------------------------------------------ retryable errors


@pytest.mark.parametrize(
    "error",
    [
        ConnectionResetError(),
        ConnectionRefusedError(),
        BrokenPipeError(),
        TimeoutError(),
        ssl.SSLError("bad record mac"),
        httpx.ReadTimeout("slow"),
        httpx.RemoteProtocolError("peer closed"),
        RuntimeError("Premature close"),
        err(429),
        err(499),
        err(500),
        err(503),
    ],
)
def test_retryable(error: BaseException) -> None:
    assert is_retryable_error(error)


def test_network_error_found_in_the_cause_chain() -> None:
    outer = RuntimeError("request failed")
    outer.__cause__ = ConnectionResetError()
    assert is_network_error(outer)


@pytest.mark.parametrize("error", [err(400), err(401), err(403), err(404), ValueError("x")])
def test_not_retryable(error: BaseException) -> None:
    assert not is_retryable_error(error)


def test_mid_stream_retry_policy() -> None:
    assert MID_STREAM_RETRY.max_attempts == 4
    assert [MID_STREAM_RETRY.delay_ms(n) for n in range(3)] == [1000, 2000, 4000]
