"""Running the real `adk-acp -p` / `--demo` process for the headless tests (issue #19, point 8).

`run_cli` runs it with pipes (no terminal: stdin piped or /dev/null) and returns
the exit code, stdout and stderr; `run_in_pty` runs it on a pseudo-terminal (stdin,
stdout and stderr all the pty, as in a terminal) and answers the questions it asks.
Both use the spine's isolated HOME and workspace and its cleared environment.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.spine import AGENT, Dirs, agent_env
from tests.fakes.gemini_server import FakeGeminiServer

RUN_TIMEOUT_S = 90.0  # a fresh process on a loaded 2-core machine: imports take seconds


def full_env(
    d: Dirs, fake: FakeGeminiServer | None = None, *, api_key: str | None = "x", **extra: str | None
) -> dict[str, str]:
    """This process' environment with the spine's overlay (None removes a key)."""
    env = dict(os.environ)
    for key, value in agent_env(d, fake, api_key=api_key, **extra).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def lines(self) -> list[dict[str, Any]]:
        """stdout as JSON lines (stream-json): every line must parse."""
        return [json.loads(line) for line in self.stdout.splitlines()]


def run_cli(
    d: Dirs,
    args: Sequence[str],
    fake: FakeGeminiServer | None = None,
    *,
    stdin: str | None = None,
    api_key: str | None = "x",
    env: dict[str, str | None] | None = None,
    timeout: float = RUN_TIMEOUT_S,
) -> Finished:
    """Run `adk-acp ARGS` in the workspace without a terminal; `stdin` is piped in
    (None: /dev/null)."""
    proc = subprocess.run(
        [*AGENT, *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        cwd=d.workspace,
        env=full_env(d, fake, api_key=api_key, **(env or {})),
        timeout=timeout,
    )
    return Finished(proc.returncode, proc.stdout, proc.stderr)


def run_in_pty(
    d: Dirs,
    args: Sequence[str],
    answers: Sequence[tuple[str, str]],
    fake: FakeGeminiServer | None = None,
    *,
    api_key: str | None = "x",
    timeout: float = RUN_TIMEOUT_S,
) -> Finished:
    """Run `adk-acp ARGS` on a pty; for each `(prompt, reply)` wait until `prompt` has
    appeared in the output (since the previous answer), then type `reply`. Returns
    everything the process wrote (stdout and stderr share the terminal), with the
    terminal's CRLF turned back into LF."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*AGENT, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=d.workspace,
        env=full_env(d, fake, api_key=api_key),
        start_new_session=True,
    )
    os.close(slave)
    deadline = time.monotonic() + timeout
    seen = b""
    try:
        for prompt, reply in answers:
            start = len(seen)
            while prompt.encode() not in seen[start:]:
                chunk = _read(master, deadline)
                if not chunk:
                    raise AssertionError(f"the process ended before asking {prompt!r}: {seen!r}")
                seen += chunk
            os.write(master, reply.encode())
        while chunk := _read(master, deadline):
            seen += chunk
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    text = seen.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return Finished(code, text, "")


def _read(fd: int, deadline: float) -> bytes:
    """The next output of the pty; b"" once the other side has closed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise AssertionError("the process did not finish in time")
    ready, _, _ = select.select([fd], [], [], remaining)
    if not ready:
        raise AssertionError("the process did not finish in time")
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every copy of the terminal's other side is closed
        return b""


def write_script(path: Path, lines: Sequence[str]) -> Path:
    """A `--fake-responses` file from `tests.e2e.model_script` lines."""
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
