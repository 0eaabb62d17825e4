"""Newline-delimited JSON on stdin/stdout, with the stdlib only.

This module is imported before anything heavy: it reads lines on a thread,
writes whole lines under a lock (stdout carries ACP messages and nothing
else), keeps the opt-in JSONL protocol trace with secrets redacted, and answers
the first `initialize` itself (`answer_initialize`) while pygls and the engine
are still loading. Lines of any length work (tens of MB): `readline` on the
binary stream has no limit.
"""

from __future__ import annotations

import json
import threading

from acp_server.capabilities import InitializeParamsError, initialize_result

TYPE_CHECKING = False  # no `typing` import before the first answer (start-up time)
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import IO, Any

_secret_key: re.Pattern[str] | None = None


def _secret_key_pattern() -> re.Pattern[str]:
    global _secret_key
    if _secret_key is None:
        import re

        _secret_key = re.compile(
            r"(api[-_]?key|token|secret|password|authorization|credential)", re.I
        )
    return _secret_key


def redact(value: Any) -> Any:
    """Copy of a JSON value with secrets replaced by '***': values under secret-sounding
    keys, and known secret shapes (runtime.services.secrets) anywhere."""
    from runtime.services.secrets import redact_text

    secret_key = _secret_key_pattern()
    if isinstance(value, dict):
        return {
            k: ("***" if secret_key.search(k) and isinstance(v, str) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


class Trace:
    """Opt-in JSONL log of all protocol traffic: {ts, dir: in|out, msg}."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()

    def record(self, direction: str, raw: bytes) -> None:
        try:
            msg: Any = redact(json.loads(raw))
        except (ValueError, UnicodeDecodeError, RecursionError):
            from runtime.services.secrets import redact_text

            msg = redact_text(raw.decode("utf-8", "replace"))
        import time

        line = json.dumps({"ts": time.time(), "dir": direction, "msg": msg}) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


class Output:
    """Writes one JSON-RPC message per line to stdout (thread-safe)."""

    def __init__(self, stream: IO[bytes], trace: Trace | None = None) -> None:
        self._stream = stream
        self._trace = trace
        self._early: list[bytes] | None = [] if trace is None else None
        self._lock = threading.Lock()
        self.closed = False

    def attach_trace(self, trace: Trace) -> None:
        """Start tracing; what was written before (the initialize answer) is traced first."""
        with self._lock:
            for data in self._early or ():
                trace.record("out", data)
            self._early = None
            self._trace = trace

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._trace is not None:
                self._trace.record("out", data)
            elif self._early is not None and len(self._early) < 8:
                self._early.append(data)
            if self.closed:
                return
            try:
                self._stream.write(data + b"\n")
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed = True

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message, separators=(",", ":")).encode("utf-8"))

    def close(self) -> None:
        """pygls' writer interface; stdout stays open until the process exits."""
        return None


class StdinReader:
    """Reads lines on a daemon thread. Lines wait in a buffer until `attach` is called.

    After `attach(loop, callback)`, each line (and None at EOF) is handed to the
    callback on the loop's thread, in order.
    """

    def __init__(self, stream: IO[bytes], trace: Trace | None = None) -> None:
        self._stream = stream
        self._trace = trace
        self._early: list[bytes] | None = [] if trace is None else None
        self._lock = threading.Condition()
        self._pending: list[bytes | None] = []
        self._deliver: Callable[[bytes | None], None] | None = None
        self._eof = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acp-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = b""
            item: bytes | None = line if line else None
            if item is not None:
                item = item.rstrip(b"\r\n")
                if not item.strip():
                    continue
            with self._lock:
                if item is not None:
                    if self._trace is not None:
                        self._trace.record("in", item)
                    elif self._early is not None and len(self._early) < 8:
                        self._early.append(item)
                if self._deliver is not None:
                    self._deliver(item)
                else:
                    self._pending.append(item)
                    self._lock.notify_all()
            if item is None:
                self._eof.set()
                return

    def only_eof_left(self, timeout: float, *, wake_on_line: bool = False) -> bool:
        """Wait up to `timeout` for EOF (or, `wake_on_line`, for a line to be waiting);
        True when stdin has closed and no line is left unread."""
        if wake_on_line:
            with self._lock:
                if not self._pending:
                    self._lock.wait(timeout)
        elif not self._eof.wait(timeout):
            return False
        with self._lock:
            return self._eof.is_set() and self._deliver is None and self._pending == [None]

    def attach_trace(self, trace: Trace) -> None:
        """Start tracing; lines read before (the initialize request) are traced first."""
        with self._lock:
            for item in self._early or ():
                trace.record("in", item)
            self._early = None
            self._trace = trace

    def first(self) -> bytes | None:
        """Block until the first line (or EOF) arrives; it stays buffered."""
        with self._lock:
            while not self._pending:
                self._lock.wait()
            return self._pending[0]

    def pending_first(self) -> bytes | None:
        """The first unread line if one is waiting (never blocks; None at EOF or none)."""
        with self._lock:
            return self._pending[0] if self._pending else None

    def drop_first(self) -> None:
        with self._lock:
            self._pending.pop(0)

    def attach(self, loop: Any, callback: Callable[[bytes | None], None]) -> None:
        def deliver(item: bytes | None) -> None:
            loop.call_soon_threadsafe(callback, item)

        with self._lock:
            for item in self._pending:
                deliver(item)
            self._pending.clear()
            self._deliver = deliver


def _reject(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def answer_initialize(line: bytes, output: Output) -> tuple[bool, dict[str, Any] | None]:
    """Answer an `initialize` request at once.

    Returns (handled, params): handled is False when the line was not an
    initialize request; params is None when its params were rejected (-32602).

    Anything that is not a well-formed initialize request is left to the connection,
    which answers it with the proper error.
    """
    try:
        message = json.loads(line, parse_constant=_reject)
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return False, None
    msg_id = message.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, str | int):
        return False, None  # the connection answers a bad id (or a notification) properly
    if message.get("jsonrpc") != "2.0":
        return False, None
    params = message.get("params")
    try:
        result = initialize_result(params)
    except InitializeParamsError as exc:
        from acp_server.errors import INVALID_PARAMS

        error = {"code": INVALID_PARAMS, "message": str(exc)}
        output.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        return True, None
    output.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    return True, params if isinstance(params, dict) else {}
