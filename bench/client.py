"""A minimal synchronous ACP client for benchmarks: one agent subprocess over NDJSON.

No threads and no asyncio: the client writes whole lines to the agent's stdin and
reads its stdout with `select`, stamping every message with `time.perf_counter()`
the moment its line is read. Requests the agent makes of the client are answered on
the spot while reading: `session/request_permission` picks an option (allow once by
default), `fs/read_text_file` / `fs/write_text_file` use the local disk (only if the
client advertised `fs`), anything else gets -32601. Timestamps are therefore taken
by the same thread that waits, with nothing else competing in this process.

    agent = AgentProcess.spawn([sys.executable, "bench/echo_agent.py"])
    init = agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    sid = agent.call("session/new", {"cwd": "/tmp", "mcpServers": []}).result["sessionId"]
    turn = agent.prompt(sid, "hello")          # Turn: sent, first_chunk, end, chunks
    agent.close()
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Message = dict[str, Any]
PROTOCOL_VERSION = 1


class AgentError(RuntimeError):
    """The agent died, timed out, or answered with something unexpected."""


@dataclass(frozen=True)
class Received:
    """One message read from the agent, with the `perf_counter()` time it was read."""

    t: float
    msg: Message

    @property
    def result(self) -> Any:
        if "error" in self.msg:
            raise AgentError(f"agent answered with an error: {self.msg['error']}")
        return self.msg.get("result")


@dataclass
class Turn:
    """The timeline of one `session/prompt` (all times from `perf_counter()`)."""

    request_id: int
    session_id: str
    sent: float
    mark: int = 0  # index in `received` from which this turn's messages are looked for
    first_chunk: float | None = None
    end: float | None = None
    chunks: int = 0
    response: Message = field(default_factory=dict)

    @property
    def stop_reason(self) -> str | None:
        return (self.response.get("result") or {}).get("stopReason")

    @property
    def to_first_chunk(self) -> float:
        if self.first_chunk is None:
            raise AgentError("the turn produced no agent_message_chunk")
        return self.first_chunk - self.sent

    @property
    def to_end(self) -> float:
        if self.end is None:
            raise AgentError("the turn has no response")
        return self.end - self.sent


def is_chunk(msg: Message, session_id: str | None = None) -> bool:
    """Whether `msg` is a `session/update` carrying an `agent_message_chunk`."""
    if msg.get("method") != "session/update":
        return False
    params = msg.get("params") or {}
    if session_id is not None and params.get("sessionId") != session_id:
        return False
    return (params.get("update") or {}).get("sessionUpdate") == "agent_message_chunk"


def pick_allow_once(options: Sequence[Mapping[str, Any]]) -> str | None:
    """The default permission policy: the first allow_once option, else the first one."""
    for option in options:
        if option.get("kind") == "allow_once":
            return str(option["optionId"])
    return str(options[0]["optionId"]) if options else None


class AgentProcess:
    """An ACP agent child process driven synchronously over its stdin/stdout."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        spawned_at: float,
        stderr_file: Any,
        *,
        fs: bool = False,
        permission: Callable[[Sequence[Mapping[str, Any]]], str | None] = pick_allow_once,
    ) -> None:
        self.proc = proc
        self.spawned_at = spawned_at
        self.fs = fs
        self.permission = permission
        self.received: list[Received] = []
        self._stderr = stderr_file
        self._buf = b""
        self._ids = itertools.count(1)
        self._fd = proc.stdout.fileno()  # type: ignore[union-attr]
        self._eof = False

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        fs: bool = False,
    ) -> AgentProcess:
        """Start the agent; `spawned_at` is taken just before `Popen`."""
        stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by kill() / __exit__
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            bufsize=0,
        )
        return cls(proc, t0, stderr_file, fs=fs)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_text(self, limit: int | None = 4000) -> str:
        """The tail of what the agent wrote to stderr so far (all of it if `limit` is None)."""
        if self._stderr.closed:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        return text if limit is None else text[-limit:]

    def close(self, timeout: float = 5.0) -> int:
        """Close stdin and wait for the agent to exit (killed after `timeout`); its exit code.

        The captured stderr stays readable until the `with` block ends (or `kill`).
        """
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._release(stderr=False)  # still readable until __exit__
        return code

    def kill(self) -> None:
        """End the agent at once (SIGKILL to this process only) and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._release()

    def _release(self, *, stderr: bool = True) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        if stderr and not self._stderr.closed:
            self._stderr.close()

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:
            self.proc.wait()
            self._release()

    # ------------------------------------------------------------ writing

    def send(self, message: Message) -> float:
        """Write one message as one line; returns the `perf_counter()` after the write."""
        data = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")).encode() + b"\n"
        try:
            self.proc.stdin.write(data)  # type: ignore[union-attr]
        except BrokenPipeError as exc:
            raise AgentError(f"agent stdin closed:\n{self.stderr_text()}") from exc
        return time.perf_counter()

    def send_many(self, messages: Sequence[Message]) -> float:
        """Write several messages with a single write (a client that does not wait)."""
        data = b"".join(
            json.dumps({"jsonrpc": "2.0", **m}, separators=(",", ":")).encode() + b"\n"
            for m in messages
        )
        self.proc.stdin.write(data)  # type: ignore[union-attr]
        return time.perf_counter()

    def new_id(self) -> int:
        return next(self._ids)

    def request(self, method: str, params: Message) -> tuple[int, float]:
        """Send a request; returns its id and the send time."""
        request_id = self.new_id()
        return request_id, self.send({"id": request_id, "method": method, "params": params})

    def notify(self, method: str, params: Message) -> float:
        return self.send({"method": method, "params": params})

    # ------------------------------------------------------------ reading

    def _pump(self, deadline: float) -> bool:
        """Read whatever is available (waiting until `deadline`); False if nothing came."""
        if self._eof:
            code = self.proc.poll()
            raise AgentError(f"agent closed stdout (exit {code}):\n{self.stderr_text()}")
        wait = max(0.0, deadline - time.perf_counter())
        ready, _, _ = select.select([self._fd], [], [], wait)
        if not ready:
            return False
        data = os.read(self._fd, 1 << 20)
        now = time.perf_counter()
        if not data:
            self._eof = True
            return False
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                raise AgentError(f"agent wrote a non-JSON line to stdout: {line[:200]!r}") from exc
            self._handle(Received(now, message))
        return True

    def _handle(self, item: Received) -> None:
        msg = item.msg
        if "method" in msg and "id" in msg:
            self._answer(msg)
        self.received.append(item)

    def _answer(self, msg: Message) -> None:
        """Serve one agent→client request."""
        method, params = msg["method"], msg.get("params") or {}
        reply: Message
        try:
            if method == "session/request_permission":
                chosen = self.permission(params.get("options") or [])
                outcome = (
                    {"outcome": "selected", "optionId": chosen}
                    if chosen is not None
                    else {"outcome": "cancelled"}
                )
                reply = {"result": {"outcome": outcome}}
            elif method == "fs/read_text_file" and self.fs:
                reply = {"result": {"content": Path(params["path"]).read_text(encoding="utf-8")}}
            elif method == "fs/write_text_file" and self.fs:
                Path(params["path"]).write_text(params["content"], encoding="utf-8")
                reply = {"result": {}}
            else:
                reply = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        except OSError as exc:
            reply = {"error": {"code": -32603, "message": str(exc)}}
        self.send({"id": msg["id"], **reply})

    def wait_for(
        self, predicate: Callable[[Message], bool], *, since: int = 0, timeout: float = 30.0
    ) -> Received:
        """The first message from index `since` on that satisfies `predicate`."""
        deadline = time.perf_counter() + timeout
        index = since
        while True:
            while index < len(self.received):
                item = self.received[index]
                index += 1
                if predicate(item.msg):
                    return item
            if time.perf_counter() >= deadline:
                raise AgentError(f"timed out after {timeout} s:\n{self.stderr_text()}")
            self._pump(deadline)

    def response(self, request_id: int, *, since: int = 0, timeout: float = 30.0) -> Received:
        """The response to our request `request_id`."""
        return self.wait_for(
            lambda m: m.get("id") == request_id and "method" not in m, since=since, timeout=timeout
        )

    def call(self, method: str, params: Message, *, timeout: float = 30.0) -> Received:
        """Send a request and wait for its response."""
        mark = len(self.received)
        request_id, _ = self.request(method, params)
        return self.response(request_id, since=mark, timeout=timeout)

    def drain(self, seconds: float) -> None:
        """Keep reading (and answering) for `seconds`."""
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            self._pump(deadline)

    # ------------------------------------------------------------ ACP helpers

    def initialize(self, *, timeout: float = 30.0) -> Received:
        caps = {"fs": {"readTextFile": True, "writeTextFile": True}} if self.fs else {}
        return self.call(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": caps},
            timeout=timeout,
        )

    def new_session(self, cwd: str | Path, *, timeout: float = 30.0) -> Received:
        return self.call("session/new", {"cwd": str(cwd), "mcpServers": []}, timeout=timeout)

    def start_prompt(self, session_id: str, text: str, meta: Message | None = None) -> Turn:
        """Send `session/prompt` without waiting; finish it with `finish_turn`."""
        params: Message = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        if meta:
            params["_meta"] = meta
        mark = len(self.received)
        request_id, sent = self.request("session/prompt", params)
        return Turn(request_id=request_id, session_id=session_id, sent=sent, mark=mark)

    def finish_turn(self, turn: Turn, *, timeout: float = 30.0) -> Turn:
        """Read until the prompt's response, counting chunks and stamping the first."""
        index = turn.mark
        deadline = time.perf_counter() + timeout
        while True:
            while index < len(self.received):
                item = self.received[index]
                index += 1
                if is_chunk(item.msg, turn.session_id):
                    turn.chunks += 1
                    if turn.first_chunk is None:
                        turn.first_chunk = item.t
                elif item.msg.get("id") == turn.request_id and "method" not in item.msg:
                    turn.end = item.t
                    turn.response = item.msg
                    if "error" in item.msg:
                        raise AgentError(f"prompt failed: {item.msg['error']}")
                    return turn
            if time.perf_counter() >= deadline:
                raise AgentError(f"prompt timed out after {timeout} s:\n{self.stderr_text()}")
            self._pump(deadline)

    def wait_chunks(self, turn: Turn, n: int, *, timeout: float = 30.0) -> Received:
        """Wait for the turn's `n`-th agent_message_chunk (error if the turn ends first)."""
        count = 0

        def nth_chunk_or_end(msg: Message) -> bool:
            nonlocal count
            if is_chunk(msg, turn.session_id):
                count += 1
                return count >= n
            return msg.get("id") == turn.request_id and "method" not in msg

        item = self.wait_for(nth_chunk_or_end, since=turn.mark, timeout=timeout)
        if count < n:
            raise AgentError(f"the turn ended after {count} of {n} chunks: {item.msg}")
        return item

    def prompt(
        self, session_id: str, text: str, meta: Message | None = None, *, timeout: float = 30.0
    ) -> Turn:
        """Send a prompt and read until its response."""
        return self.finish_turn(self.start_prompt(session_id, text, meta), timeout=timeout)

    # ------------------------------------------------------------ process facts

    def rss_mb(self) -> float:
        """Resident set size of the agent process (VmRSS), in MB."""
        return _status_kb(self.pid, "VmRSS") / 1024

    def cpu_seconds(self) -> float:
        """User + system CPU time the agent process has used so far."""
        with open(f"/proc/{self.pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def wait_idle(
        self, *, at_least: float, at_most: float, window: float = 0.25, busy: float = 0.02
    ) -> float:
        """Wait `at_least` seconds, then until the agent used < `busy` s CPU in a `window`.

        Returns the seconds waited (capped at `at_most`). This is how the benchmarks
        make sure the agent's background warm-up has finished.
        """
        start = time.perf_counter()
        self.drain(at_least)
        last = self.cpu_seconds()
        while time.perf_counter() - start < at_most:
            self.drain(window)
            now = self.cpu_seconds()
            if now - last < busy:
                break
            last = now
        return time.perf_counter() - start


def _status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AgentError(f"{key} not in /proc/{pid}/status")
