"""What a failed model call tells the user: which endpoint, what failed, how the retries go.

Every retry of a model call is told (issue 34.5): in the editor as a notice, with `-p`
as a line on stderr, e.g. `gemini-2.5-pro at http://127.0.0.1:9: connection refused;
attempt 2 of 10, next try in 10 s`. When the attempts run out the call ends with one
`ModelError` saying the same in a sentence (no traceback unless `--log-level DEBUG`).
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Callable

from runtime.models.google_errors import get_http_status

_STATUS_WORDS = {
    400: "bad request",
    401: "not authenticated",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    429: "rate limited",
    499: "cancelled by the server",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
}


def _chain(error: BaseException, limit: int = 8) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(found) < limit and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _refused(item: BaseException) -> bool:
    return (
        isinstance(item, ConnectionRefusedError)
        or (isinstance(item, OSError) and item.errno == errno.ECONNREFUSED)
        or "refused" in str(item).lower()
        or any(_refused(inner) for inner in getattr(item, "exceptions", ()))  # a group
    )


def _timed_out(item: BaseException) -> bool:
    text = str(item).lower()
    return (
        isinstance(item, TimeoutError)
        or "timeout" in type(item).__name__.lower()
        or ("timed out" in text)
    )


_PHRASES: tuple[tuple[Callable[[BaseException], bool], str], ...] = (
    (_refused, "connection refused"),
    (
        lambda e: isinstance(e, socket.gaierror) or "name or service not known" in str(e),
        "host name not found",
    ),
    (_timed_out, "timed out"),
    (lambda e: isinstance(e, ssl.SSLError), "TLS error"),
    (
        lambda e: (
            type(e).__name__ in ("RemoteProtocolError", "ReadError")
            or "incomplete" in str(e).lower()
        ),
        "the connection broke off mid-answer",
    ),
    (lambda e: type(e).__name__ in ("ConnectError", "APIConnectionError"), "could not connect"),
)


def _network_phrase(error: BaseException) -> str | None:
    chain = _chain(error)
    for test, phrase in _PHRASES:  # the most telling phrase anywhere in the chain
        if any(test(item) for item in chain):
            return phrase
    return None


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def http_status(error: BaseException) -> int | None:
    """The HTTP status of `error`, a classified `ModelError` (quota…) included."""
    status = get_http_status(error)
    if status is None:
        kept = getattr(error, "http_status", None)
        status = kept if type(kept) is int else None
    if status is None and error.__cause__ is not None:
        return get_http_status(error.__cause__)
    return status


def what_failed(error: BaseException) -> str:
    """`error` as a short phrase: `HTTP 503 (unavailable): …`, `connection refused`…"""
    status = http_status(error)
    if status is not None:
        word = _STATUS_WORDS.get(status, "error")
        detail = getattr(error, "message", None) or str(error)
        detail = _first_line(str(detail))
        return f"HTTP {status} ({word})" + (f": {detail}" if detail else "")
    phrase = _network_phrase(error)
    if phrase is not None:
        return phrase
    text = _first_line(str(error))
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def seconds_phrase(seconds: float) -> str:
    """`0.3 s`, `5 s`, `3 min 35 s`."""
    if seconds < 1:
        return f"{seconds:.2g} s"
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def retry_line(
    model: str, endpoint: str, error: BaseException, attempt: int, of: int, delay_s: float
) -> str:
    """One retry, told: where, what failed, attempt n of m, the next try."""
    where = f"{model} at {endpoint}" if endpoint else model
    return (
        f"The model call failed ({where}: {what_failed(error)}); "
        f"attempt {attempt} of {of}, next try in {seconds_phrase(delay_s)}."
    )


def gave_up_line(
    model: str, endpoint: str, error: BaseException, attempts: int, waited_s: float
) -> str:
    """The end of a model call whose attempts ran out."""
    where = f"{model} at {endpoint}" if endpoint else model
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    start = (
        "The model could not be reached" if http_status(error) is None else "The model call failed"
    )
    return (
        f"{start} ({where}: {what_failed(error)}); "
        f"gave up after {tries} over {seconds_phrase(waited_s)}."
    )
