"""A child's answer, read until it exits (plus a short grace), not until its pipes close.

A pipe reaches end-of-file only when every process holding its write end has closed
it; a hook that starts `sleep 30 &` leaves its stdout open in that `sleep`, and a read
to end-of-file (`communicate()`) would wait those 30 s for an answer complete when
the hook exited. Here the answer is what the child wrote before it exited: what is
still in the pipe is read within `EXIT_GRACE_S`, then our ends are closed (a later
write by what the child left behind gets EPIPE; it is not killed: the child's
business). Stdlib only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

EXIT_GRACE_S = 0.5
"""How long output still in the pipes is read for once the child has exited."""


@dataclass(frozen=True)
class ChildResult:
    """A finished child: its exit status (negative: the signal) and what it wrote."""

    returncode: int
    stdout: bytes
    stderr: bytes


class _Reader(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.output: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.closed = {1: asyncio.Event(), 2: asyncio.Event()}
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd in self.output:
            self.output[fd] += data.encode() if isinstance(data, str) else data

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in self.closed:
            self.closed[fd].set()

    def process_exited(self) -> None:
        self.exited.set()

    async def drained(self, grace_s: float) -> None:
        """Both pipes at end-of-file, or `grace_s` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(self.closed[1].wait(), self.closed[2].wait()), grace_s
            )


async def run_child(
    command: str | Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout_s: float | None = None,
    own_group: bool = False,
    grace_s: float = EXIT_GRACE_S,
    on_start: Callable[[int], None] | None = None,
) -> ChildResult:
    """Run `command` (a string: through `/bin/sh -c`; a sequence: exec'd) and return
    when it has exited and its pipes are drained or `grace_s` passed.

    `stdin` is written and closed (None: `/dev/null`). `own_group` starts it in a new
    session, and a timeout or cancellation kills that whole process group; else the
    child alone. `on_start(pid)` is called once it started, before `stdin` is written
    (a gated command, `runtime.processes.gated`, is registered there). Raises
    `TimeoutError` after `timeout_s` (the child killed), `OSError` when it cannot start.
    """
    loop = asyncio.get_running_loop()
    reader = _Reader()
    env_dict = dict(env) if env is not None else None
    stdin_mode = asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL
    pipe = asyncio.subprocess.PIPE
    if isinstance(command, str):
        transport, _ = await loop.subprocess_shell(
            lambda: reader,
            command,
            cwd=str(cwd),
            env=env_dict,
            stdin=stdin_mode,
            stdout=pipe,
            stderr=pipe,
            start_new_session=own_group,
        )
    else:
        transport, _ = await loop.subprocess_exec(
            lambda: reader,
            *command,
            cwd=str(cwd),
            env=env_dict,
            stdin=stdin_mode,
            stdout=pipe,
            stderr=pipe,
            start_new_session=own_group,
        )
    try:
        if on_start is not None:
            on_start(transport.get_pid())
        if stdin is not None:
            _feed(transport, stdin)
        try:
            await asyncio.wait_for(reader.exited.wait(), timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            _kill(transport.get_pid(), own_group)
            await asyncio.shield(reader.exited.wait())
            raise
        await reader.drained(grace_s)
    finally:
        transport.close()
    code = transport.get_returncode()
    return ChildResult(
        returncode=code if code is not None else -1,
        stdout=bytes(reader.output[1]),
        stderr=bytes(reader.output[2]),
    )


def _feed(transport: asyncio.SubprocessTransport, data: bytes) -> None:
    pipe = transport.get_pipe_transport(0)
    if not isinstance(pipe, asyncio.WriteTransport):
        return
    try:
        pipe.write(data)
        pipe.close()  # flushes what is buffered, then closes: the child sees EOF
    except (BrokenPipeError, ConnectionResetError):
        logger.debug("the child closed its stdin before reading it")


def _kill(pid: int, own_group: bool) -> None:
    try:
        if own_group and hasattr(os, "killpg"):
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        logger.debug("child %d already gone", pid)


__all__ = ["EXIT_GRACE_S", "ChildResult", "run_child"]
