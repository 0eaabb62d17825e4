"""CommandRunner: the one way tools run shell commands (what `ToolEnv.commands` holds).

When the editor offers terminals (`host.capabilities.terminal`), a command runs in
an editor terminal: `Host.create_terminal(bash -c <command>)`, whose id is
reported at once through the progress callback so the editor can embed the live
terminal; then wait for exit, read the output, release. Otherwise it runs as a
local subprocess in its own process group, its output (stdout and stderr merged)
streamed through the callback at most every `update_interval_s`.

Cancellation (`asyncio.CancelledError` in `run`) stops the command before the
error is re-raised: the editor terminal is killed and released, both answered
before the cancel goes on (`runtime.host.stop_terminal`: through a second cancel
of the turn, at most `release_wait_s`), so the turn answers `cancelled` after the
editor freed its terminal; a local process group gets SIGTERM, then SIGKILL for
whatever is still alive after a short grace. A timeout does the same but returns
a result with `timed_out=True`.

With a sandbox (`runtime.tools.io.sandbox`), each command line is wrapped before it
starts, locally or in the editor's terminal (`terminal/create` gets the bwrap command
line); `unsandboxed()` is the same runner without it, for a run the user allowed
outside the sandbox.

Contract for the Host implementer: `TerminalHandle.wait_for_exit` must tolerate
being cancelled (a timeout or a cancel); `kill` and `release` may be called on a
terminal whose command has already ended; their failures are logged (the
command's result stands); other errors than cancellation propagate to the tool,
which reports them to the model.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from runtime.host import TERMINAL_STOP_WAIT_S, Host, TerminalExit, TerminalRequest, stop_terminal
from runtime.processes import Gate, gated, unregister_group
from runtime.protocol import DisplayContent, DisplayTerminal
from runtime.services.secrets import child_environment
from runtime.tools.io.process_group import group_alive, live_group_members, terminate_group
from runtime.tools.io.sandbox import Sandbox
from runtime.tools.io.sandbox.wrapper import Purpose

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT_LIMIT = 1_000_000
"""Bytes of output kept per command (the tail); the scheduler truncates further for the model."""
DISPLAY_TAIL_BYTES = 64_000
"""Bytes of output shown in progress updates: the editor needs the latest screenful, not all."""
NO_PAGER_ENV = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Set for every command: a pager waiting for a key would hang the call."""

ProgressCallback = Callable[[tuple[DisplayContent, ...]], Awaitable[None]]
"""Where a running command (and `ToolEnv.on_progress`) reports its display: the
editor's terminal id, or the output so far."""


@dataclass(frozen=True)
class CommandResult:
    """How a command ended.

    `exit_code` is None when a signal ended it (`signal` names it, e.g. "SIGTERM")
    or when the exit is unknown. `truncated`: `output` holds only the tail.
    `terminal_id` is set when the editor ran it, `pid` (also the process group
    id) when it ran locally. `background_pids`: processes of the group still alive
    after the command exited (started with `&`). `cancelled` is never True in a
    result returned by `run` (a cancel re-raises) and exists for callers that
    record a cancelled run themselves. `sandboxed`: it ran in the sandbox;
    `sandbox_denial` says why the sandbox probably stopped it (None: it did not).
    """

    output: str
    exit_code: int | None
    signal: str | None = None
    timed_out: bool = False
    cancelled: bool = False
    truncated: bool = False
    terminal_id: str | None = None
    pid: int | None = None
    background_pids: tuple[int, ...] = ()
    sandboxed: bool = False
    sandbox_denial: str | None = None


@dataclass(frozen=True)
class BackgroundProcess:
    """A command started without waiting: its pid (a process group leader) and its log file."""

    pid: int
    log_path: Path


class _TailBuffer:
    """Keeps the last `limit` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 1)
        self._data = bytearray()
        self.truncated = False
        self.version = 0

    def feed(self, chunk: bytes) -> None:
        self._data += chunk
        self.version += 1
        excess = len(self._data) - self._limit
        if excess > 0:
            del self._data[:excess]
            self.truncated = True

    def text(self, last: int | None = None) -> str:
        """The kept output (or only its `last` bytes), decoded as UTF-8."""
        cut = last is not None and len(self._data) > last
        data = bytes(self._data[-last:]) if cut and last is not None else bytes(self._data)
        if self.truncated or cut:
            # Drop a multi-byte character cut in half at the front.
            start = 0
            while start < min(len(data), 3) and (data[start] & 0xC0) == 0x80:
                start += 1
            data = data[start:]
        return data.decode("utf-8", errors="replace")


class _Collector(asyncio.SubprocessProtocol):
    def __init__(self, buffer: _TailBuffer) -> None:
        self._buffer = buffer
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._buffer.feed(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _exit_parts(returncode: int | None) -> tuple[int | None, str | None]:
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, _signal_name(-returncode)
    return returncode, None


class CommandRunner:
    """Runs shell commands for one session, in the editor's terminal when it offers one."""

    def __init__(
        self,
        host: Host | None = None,
        *,
        update_interval_s: float = 0.1,
        kill_grace_s: float = 1.0,
        drain_s: float = 0.2,
        env_allowlist: Sequence[str] = (),
        release_wait_s: float = TERMINAL_STOP_WAIT_S,
        sandbox: Sandbox | None = None,
    ) -> None:
        self._sandbox = sandbox if sandbox is not None and sandbox.active else None
        self._env_allowlist = tuple(env_allowlist)
        self._host = host
        self._use_terminal = bool(host is not None and host.capabilities.terminal)
        self._update_interval_s = update_interval_s
        self._kill_grace_s = kill_grace_s
        self._drain_s = drain_s
        self._release_wait_s = release_wait_s
        self._local_shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"

    @property
    def uses_editor_terminal(self) -> bool:
        return self._use_terminal

    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox every command runs in (None: none, or it cannot run here)."""
        return self._sandbox

    def unsandboxed(self) -> CommandRunner:
        """This runner without its sandbox (a run the user allowed outside it)."""
        other = copy.copy(self)
        other._sandbox = None
        return other

    def _wrapped(self, command: str, shell: str, cwd: Path, purpose: Purpose) -> list[str]:
        argv = [shell, "-c", command]
        return argv if self._sandbox is None else self._sandbox.wrap(argv, cwd, purpose)

    def _judged(self, result: CommandResult) -> CommandResult:
        """`result` marked as sandboxed, with the sandbox's probable denial."""
        if self._sandbox is None:
            return result
        denial = self._sandbox.denial(result.output, result.exit_code)
        return replace(result, sandboxed=True, sandbox_denial=denial)

    async def run(
        self,
        command: str,
        cwd: Path,
        timeout_s: float,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        on_output: ProgressCallback | None = None,
    ) -> CommandResult:
        """Run `bash -c command` in `cwd` and wait for it (at most `timeout_s`).

        Raises `OSError` when a local process cannot be started, host errors as
        they come, and `asyncio.CancelledError` after stopping the command.
        """
        if self._use_terminal and self._host is not None:
            result = await self._run_in_terminal(
                self._host, command, cwd, timeout_s, output_limit, on_output
            )
        else:
            result = await self._run_local(command, cwd, timeout_s, output_limit, on_output)
        return self._judged(result)

    # ------------------------------------------------------------ editor terminal

    async def _run_in_terminal(
        self,
        host: Host,
        command: str,
        cwd: Path,
        timeout_s: float,
        output_limit: int,
        on_output: ProgressCallback | None,
    ) -> CommandResult:
        shell = "bash" if os.path.basename(self._local_shell) == "bash" else "sh"
        argv = self._wrapped(command, shell, cwd, "terminal")
        request = TerminalRequest(
            command=argv[0],
            args=tuple(argv[1:]),
            cwd=cwd,
            env=dict(NO_PAGER_ENV),
            output_byte_limit=output_limit,
        )
        handle = await host.create_terminal(request)
        try:
            if on_output is not None:
                await on_output((DisplayTerminal(terminal_id=handle.terminal_id),))
            timed_out = False
            exit_status: TerminalExit | None
            try:
                exit_status = await asyncio.wait_for(handle.wait_for_exit(), timeout_s)
            except TimeoutError:
                timed_out = True
                exit_status = None
                await handle.kill()
            output = await handle.output()
            exit_status = exit_status or output.exit
        except BaseException:  # cancelled or failed: stop the command, free the terminal
            await stop_terminal(handle, kill=True, within_s=self._release_wait_s)
            raise
        await stop_terminal(handle, kill=False, within_s=self._release_wait_s)
        return CommandResult(
            output=output.output,
            exit_code=exit_status.exit_code if exit_status else None,
            signal=exit_status.signal if exit_status else None,
            timed_out=timed_out,
            truncated=output.truncated,
            terminal_id=handle.terminal_id,
        )

    # ------------------------------------------------------------ local process

    async def _run_local(
        self,
        command: str,
        cwd: Path,
        timeout_s: float,
        output_limit: int,
        on_output: ProgressCallback | None,
    ) -> CommandResult:
        loop = asyncio.get_running_loop()
        buffer = _TailBuffer(output_limit)
        gate = Gate()  # the command runs only once its group is registered
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Collector(buffer),
                *gated(self._wrapped(command, self._local_shell, cwd, "local")),
                cwd=str(cwd),
                env={**child_environment(self._env_allowlist), **NO_PAGER_ENV},
                stdin=gate.stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            gate.started()
            pid = transport.get_pid()
            gate.open(pid)  # killed at agent exit if anything of it is still alive
        finally:
            gate.close()
        finished = False
        try:
            if on_output is not None:
                await on_output((DisplayTerminal(pid=pid),))
            timed_out = not await self._wait_streaming(protocol, buffer, pid, timeout_s, on_output)
            if timed_out:
                await terminate_group(pid, self._kill_grace_s)
                await protocol.exited.wait()
            await _wait_quietly(protocol.output_closed, self._drain_s)
            finished = True
        finally:
            if not finished:  # cancelled, or the progress callback failed: stop everything
                await terminate_group(pid, self._kill_grace_s)
                # Let asyncio's child watcher reap it first: closing the transport
                # before would poll (and reap) the child under the watcher's feet.
                await _wait_quietly(protocol.exited, self._kill_grace_s)
            transport.close()
        exit_code, signal_name = _exit_parts(transport.get_returncode())
        background = () if timed_out else tuple(live_group_members(pid))
        if not background:
            unregister_group(pid)
        result = CommandResult(
            output=buffer.text(),
            exit_code=exit_code,
            signal=signal_name,
            timed_out=timed_out,
            truncated=buffer.truncated,
            pid=pid,
            background_pids=background,
        )
        if on_output is not None:
            final = DisplayTerminal(
                pid=pid, exit_code=exit_code, ansi=buffer.text(DISPLAY_TAIL_BYTES)
            )
            await on_output((final,))
        return result

    async def _wait_streaming(
        self,
        protocol: _Collector,
        buffer: _TailBuffer,
        pid: int,
        timeout_s: float,
        on_output: ProgressCallback | None,
    ) -> bool:
        """Wait for the exit, publishing new output every interval; False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        published = buffer.version
        while not protocol.exited.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await _wait_quietly(protocol.exited, min(self._update_interval_s, remaining))
            if (
                on_output is not None
                and buffer.version != published
                and not protocol.exited.is_set()
            ):
                published = buffer.version
                tail = buffer.text(DISPLAY_TAIL_BYTES)
                await on_output((DisplayTerminal(pid=pid, ansi=tail),))
        return True

    async def start_background(self, command: str, cwd: Path, log_path: Path) -> BackgroundProcess:
        """Start `command` locally without waiting; its output goes to `log_path`.

        The command leads its own process group (kill it with `kill -- -PID`).
        Only local: an editor terminal cannot outlive the tool call.
        """
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # A short-lived launcher backgrounds the command and prints its pid, so no
        # process object of ours is left waiting for it.
        # The command waits behind a gate (on the launcher's stdin, kept as fd 3 for
        # it: an `&` command's own stdin is /dev/null) until its group is registered.
        gate = Gate()
        launcher = 'exec 3<&0; log="$1"; shift; setsid "$@" <&3 3<&- >"$log" 2>&1 & echo $!'
        if shutil.which("setsid") is None:
            launcher = 'exec 3<&0; log="$1"; shift; "$@" <&3 3<&- >"$log" 2>&1 & echo $!'
        try:
            proc = await asyncio.create_subprocess_exec(
                self._local_shell,
                "-c",
                launcher,
                self._local_shell,
                str(log_path),
                *gated(self._wrapped(command, self._local_shell, cwd, "background")),
                cwd=str(cwd),
                env={**child_environment(self._env_allowlist), **NO_PAGER_ENV},
                stdin=gate.stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            gate.started()
            out, err = await proc.communicate()
            text = out.decode(errors="replace").strip()
            if proc.returncode != 0 or not text.isdigit():
                raise OSError(
                    "could not start the background command: "
                    + err.decode(errors="replace").strip()
                )
            gate.open(int(text))
        finally:
            gate.close()
        return BackgroundProcess(pid=int(text), log_path=log_path)


async def _wait_quietly(event: asyncio.Event, timeout_s: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout_s)
    except TimeoutError:
        return False
    return True


__all__ = [
    "BackgroundProcess",
    "CommandResult",
    "CommandRunner",
    "DEFAULT_OUTPUT_LIMIT",
    "group_alive",
]
