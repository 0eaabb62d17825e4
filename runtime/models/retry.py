"""Retry with backoff around one model call, with the quota fallback hook.

Port of Gemini CLI's `retryWithBackoff` (`docs/gemini-cli-behaviours.md#retry`).
The call is a zero-argument closure: on a fallback it is simply called again,
and it re-reads the session's active model itself. Sleeping, jitter and abort
are injected so tests never wait:

- `sleep(seconds)` is awaited for every pause (default `asyncio.sleep`);
- `random()` returns a float in [0, 1) for the jitter (default `random.random`);
- `abort_event`, when set, stops a pause at once and raises `AbortedError`.
  Task cancellation also propagates out of a pause as usual.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import random as _random
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from runtime.errors import RuntimeAgentError
from runtime.models.google_errors import get_http_status
from runtime.models.quota_errors import (
    ModelNotFoundError,
    RetryableQuotaError,
    TerminalQuotaError,
    classify_error,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

SleepFn = Callable[[float], Awaitable[None]]
RandomFn = Callable[[], float]
PersistentQuotaHandler = Callable[[BaseException], Awaitable[bool | None]]
RetryKind = Literal["capacity", "server_delay", "backoff"]

DEFAULT_MAX_ATTEMPTS = 10
DEFAULT_INITIAL_DELAY_MS = 5_000
DEFAULT_MAX_DELAY_MS = 30_000
CAPACITY_RETRY_DELAYS_MS: tuple[int, ...] = (1_000, 3_000)
"""Silent retries of the same model on MODEL_CAPACITY_* before it counts as terminal."""

SERVER_DELAY_JITTER = 0.2  # up to +20% on top of a server-given delay
BACKOFF_JITTER = 0.3  # ±30% around the exponential delay

_RETRYABLE_ERRNOS = frozenset(
    {errno.ECONNRESET, errno.ETIMEDOUT, errno.EPIPE, errno.ECONNREFUSED, errno.EPROTO}
)
_NETWORK_MESSAGE_MARKERS = (
    "premature close",
    "fetch failed",
    "econnreset",
    "etimedout",
    "epipe",
    "enotfound",
    "eai_again",
    "econnrefused",
    "bad record mac",
    "wrong version number",
    "decryption failed",
)


class AbortedError(RuntimeAgentError):
    """The caller's abort event was set while waiting to retry."""


@dataclass(frozen=True)
class RetryNotice:
    """One retry about to happen: after `delay_ms`, attempt `attempt + 1` (1-based).

    `kind`: `capacity` (silent capacity retry), `server_delay` (a quota error
    whose delay the server gave), `backoff` (exponential backoff).
    """

    attempt: int
    error: BaseException
    delay_ms: float
    kind: RetryKind


@dataclass(frozen=True)
class MidStreamRetry:
    """Retries for failures after a stream started: `max_attempts` in all, delays 1000 × 2^n ms."""

    max_attempts: int = 4
    initial_delay_ms: int = 1_000

    def delay_ms(self, retry_index: int) -> int:
        """The pause before retry number `retry_index` (0 for the first retry)."""
        return int(self.initial_delay_ms * 2**retry_index)


MID_STREAM_RETRY = MidStreamRetry()


# --------------------------------------------------------------- what is retryable


def _optional_network_error_types() -> tuple[type[BaseException], ...]:
    types_: list[type[BaseException]] = []
    try:
        import aiohttp

        types_ += [aiohttp.ClientConnectionError, aiohttp.ClientPayloadError]
    except ImportError:  # pragma: no cover - aiohttp is a dependency
        logger.debug("aiohttp not installed")
    try:
        import httpx

        types_ += [httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError]
    except ImportError:  # pragma: no cover - httpx comes with genai
        logger.debug("httpx not installed")
    return tuple(types_)


_NETWORK_TYPES: tuple[type[BaseException], ...] | None = None


def _network_types() -> tuple[type[BaseException], ...]:
    global _NETWORK_TYPES
    if _NETWORK_TYPES is None:
        _NETWORK_TYPES = (
            ConnectionError,
            TimeoutError,
            socket.gaierror,
            ssl.SSLError,
            *_optional_network_error_types(),
        )
    return _NETWORK_TYPES


def _error_chain(error: BaseException, limit: int = 6) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < limit and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def is_network_error(error: BaseException) -> bool:
    """True for connection resets, timeouts, DNS and TLS failures, premature closes (any cause)."""
    for item in _error_chain(error):
        if isinstance(item, _network_types()):
            return True
        if isinstance(item, OSError) and item.errno in _RETRYABLE_ERRNOS:
            return True
        text = str(item).lower()
        if any(marker in text for marker in _NETWORK_MESSAGE_MARKERS):
            return True
    return False


def is_retryable_error(error: BaseException) -> bool:
    """The default `should_retry`: network errors, HTTP 429, 499 and 5xx; never 400."""
    status = get_http_status(error)
    if status == 400:
        return False
    if status is not None and (status in (429, 499) or 500 <= status < 600):
        return True
    return is_network_error(error)


# ----------------------------------------------------------------------- the loop


async def _pause(seconds: float, sleep: SleepFn, abort_event: asyncio.Event | None) -> None:
    if abort_event is None:
        await sleep(seconds)
        return
    if abort_event.is_set():
        raise AbortedError("aborted")
    sleeper = asyncio.ensure_future(sleep(seconds))
    waiter = asyncio.ensure_future(abort_event.wait())
    try:
        await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, waiter):
            if not task.done():
                task.cancel()
        await asyncio.gather(sleeper, waiter, return_exceptions=True)
    if abort_event.is_set():
        raise AbortedError("aborted")


@dataclass
class _Loop:
    """The state and steps of one `retry_with_backoff` run."""

    max_attempts: int
    initial_delay_ms: float
    max_delay_ms: float
    should_retry: Callable[[BaseException], bool]
    on_persistent_429: PersistentQuotaHandler | None
    on_retry: Callable[[RetryNotice], None] | None
    current_model: Callable[[], str | None] | None
    sleep: SleepFn
    random: RandomFn
    abort_event: asyncio.Event | None
    attempt: int = 0
    delay_ms: float = 0.0
    capacity_retries: int = 0

    def reset(self) -> None:
        self.attempt, self.delay_ms, self.capacity_retries = 0, self.initial_delay_ms, 0

    def check_abort(self) -> None:
        if self.abort_event is not None and self.abort_event.is_set():
            raise AbortedError("aborted")

    async def wait(self, delay_ms: float, error: BaseException, kind: RetryKind) -> None:
        logger.info(
            "model call attempt %d failed (%s); retrying in %.0f ms", self.attempt, error, delay_ms
        )
        if self.on_retry is not None:
            self.on_retry(RetryNotice(self.attempt, error, delay_ms, kind))
        await _pause(delay_ms / 1000.0, self.sleep, self.abort_event)

    async def backoff(self, error: BaseException) -> None:
        jitter = self.delay_ms * BACKOFF_JITTER * (self.random() * 2 - 1)
        delay = max(0.0, self.delay_ms + jitter)
        self.delay_ms = min(self.max_delay_ms, self.delay_ms * 2)
        await self.wait(delay, error, "backoff")

    async def fallback_or_raise(self, classified: BaseException, error: BaseException) -> None:
        """Ask the fallback handler; returns (after a reset) to retry, else raises."""
        if self.on_persistent_429 is not None:
            try:
                accepted = bool(await self.on_persistent_429(classified))
            except (asyncio.CancelledError, AbortedError):
                raise
            except Exception:
                logger.warning("model fallback handler failed", exc_info=True)
                accepted = False
            if accepted:
                self.reset()
                return
        if classified is error:
            raise error
        raise classified from error

    async def handle(self, error: Exception) -> None:
        """Returns to retry the call, raises to give up."""
        model = self.current_model() if self.current_model is not None else None
        classified = classify_error(error, model=model)
        if (
            isinstance(classified, TerminalQuotaError)
            and classified.is_capacity
            and self.capacity_retries < len(CAPACITY_RETRY_DELAYS_MS)
        ):
            pause = CAPACITY_RETRY_DELAYS_MS[self.capacity_retries]
            self.capacity_retries += 1
            self.attempt -= 1  # silent capacity retries do not use up attempts
            await self.wait(pause, classified, "capacity")
            return
        if isinstance(classified, TerminalQuotaError | ModelNotFoundError):
            await self.fallback_or_raise(classified, error)
            return
        status = get_http_status(error)
        if isinstance(classified, RetryableQuotaError) or (
            status is not None and 500 <= status < 600
        ):
            if self.attempt >= self.max_attempts:
                logger.warning(
                    "attempt %d failed: %s; max attempts reached", self.attempt, classified
                )
                await self.fallback_or_raise(classified, error)
                return
            server_ms = (
                classified.retry_delay_ms if isinstance(classified, RetryableQuotaError) else None
            )
            if server_ms is None:
                await self.backoff(classified)
                return
            self.delay_ms = max(self.delay_ms, server_ms)
            delay = self.delay_ms + self.delay_ms * SERVER_DELAY_JITTER * self.random()
            await self.wait(delay, classified, "server_delay")
            return
        if status == 400 or self.attempt >= self.max_attempts or not self.should_retry(error):
            raise error
        await self.backoff(error)


async def retry_with_backoff(
    call: Callable[[], Awaitable[T]],
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    initial_delay_ms: float = DEFAULT_INITIAL_DELAY_MS,
    max_delay_ms: float = DEFAULT_MAX_DELAY_MS,
    should_retry: Callable[[BaseException], bool] = is_retryable_error,
    on_persistent_429: PersistentQuotaHandler | None = None,
    on_retry: Callable[[RetryNotice], None] | None = None,
    current_model: Callable[[], str | None] | None = None,
    sleep: SleepFn = asyncio.sleep,
    random: RandomFn = _random.random,
    abort_event: asyncio.Event | None = None,
) -> T:
    """Await `call()` until it succeeds; returns its result.

    Raises the classified quota error (`TerminalQuotaError`, `RetryableQuotaError`,
    `ModelNotFoundError`) when the fallback handler declines, the original error
    when it is not retryable or attempts ran out, and `AbortedError` on abort.
    `on_persistent_429(error)` is awaited with the classified error on a terminal
    quota / not-found error, or when attempts run out on a rate limit or 5xx; a
    truthy answer resets attempts and delay and calls `call()` again (a raising
    handler counts as a refusal). Other errors are retried while
    `should_retry(error)` holds; HTTP 400 never is. `on_retry` hears of every
    pause. `current_model()` only names the model in error messages.
    """
    if max_attempts <= 0:
        raise ValueError("max_attempts must be positive")
    loop = _Loop(
        max_attempts,
        initial_delay_ms,
        max_delay_ms,
        should_retry,
        on_persistent_429,
        on_retry,
        current_model,
        sleep,
        random,
        abort_event,
    )
    loop.reset()
    while True:
        loop.check_abort()
        loop.attempt += 1
        try:
            return await call()
        except (asyncio.CancelledError, AbortedError):
            raise
        except Exception as error:
            await loop.handle(error)
