"""What a failed model call tells the user (runtime/models/failures.py, issue 34.5)."""

from __future__ import annotations

import errno
import socket

import httpx
from google.genai import errors

from runtime.models.failures import gave_up_line, retry_line, seconds_phrase, what_failed


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


def test_network_failures_get_the_most_telling_phrase_of_their_chain() -> None:
    refused = _chained(
        httpx.ConnectError("All connection attempts failed"),
        OSError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 9)"),
    )
    assert what_failed(refused) == "connection refused"
    assert what_failed(
        _chained(httpx.ConnectError("x"), socket.gaierror(-2, "Name or service not known"))
    ) == ("host name not found")
    assert what_failed(httpx.ReadTimeout("read")) == "timed out"
    assert what_failed(httpx.RemoteProtocolError("peer closed connection")) == (
        "the connection broke off mid-answer"
    )
    assert what_failed(httpx.ConnectError("nothing")) == "could not connect"
    assert what_failed(ValueError("odd")) == "ValueError: odd"


def test_http_failures_say_their_status_and_first_line() -> None:
    error = errors.ServerError(
        503, {"error": {"code": 503, "message": "Overloaded.\nmore", "status": "UNAVAILABLE"}}
    )
    assert what_failed(error) == "HTTP 503 (unavailable): Overloaded."


def test_the_lines_name_model_endpoint_attempts_and_wait() -> None:
    error = httpx.ConnectError("refused")
    assert retry_line("m", "http://h", error, 2, 10, 10) == (
        "The model call failed (m at http://h: connection refused); "
        "attempt 2 of 10, next try in 10 s."
    )
    assert gave_up_line("m", "", error, 10, 215.4) == (
        "The model could not be reached (m: connection refused); "
        "gave up after 10 attempts over 3 min 35 s."
    )
    assert [seconds_phrase(s) for s in (0.05, 1.0, 2.5, 30, 120)] == [
        "0.05 s",
        "1 s",
        "2.5 s",
        "30 s",
        "2 min",
    ]
