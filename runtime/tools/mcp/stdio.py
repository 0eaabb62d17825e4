"""The stdio transport for MCP servers the agent starts: one process per server.

Why not the SDK's `mcp.client.stdio.stdio_client`: it hides the process, so its
process group cannot join `runtime.processes` (which kills every group the engine
started when the agent exits), its stderr cannot be kept for error messages, and
its shutdown waits up to 2 s + 2 s, longer than the agent's whole exit budget. This
module does the same job in the same shape (anyio memory streams of
`SessionMessage` for `mcp.ClientSession`) with those three things added.

The server runs in its own process group (`start_new_session`), registered while it
lives; it starts behind `runtime.processes`' gate (its stdin's first line), so it runs
only once registered. A server that exits is taken as gone at its exit, even if a
process it started still holds its stdout (that group is then stopped). Shutdown: close
its stdin, wait briefly, SIGTERM the group, wait briefly, SIGKILL; a cancelled shutdown
kills at once. Lines on stdout that are not JSON-RPC are logged and skipped (some
servers print banners there); stderr lines are logged at debug level and the last ones
kept in `stderr_tail`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from runtime.child_pipes import EXIT_GRACE_S
from runtime.processes import GATE_LINE, gated, kill_group, register_group, unregister_group
from runtime.services.secrets import child_environment
from runtime.tools.io.process_group import group_alive
from runtime.tools.mcp.config import McpStdioServer

logger = logging.getLogger(__name__)

STOP_GRACE_S = 0.25
"""How long a server gets to exit after its stdin closes, and again after SIGTERM."""


_POLL_S = 0.01
_EXIT_POLL_S = 0.25
"""How often a running server's exit is looked for (its stdout may outlive it)."""
_TAIL_LINES = 20

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def server_environment(config: McpStdioServer) -> dict[str, str]:
    """The agent's environment without credentials, plus the entry's own variables."""
    env = child_environment()
    env.update(dict(config.env))
    return env


def _check_command(command: str, cwd: Path, env: dict[str, str]) -> None:
    """FileNotFoundError (as starting it would raise) when `command` names no executable:
    the gate's shell would only report it as exit code 127."""
    if "/" in command:
        found = os.access(cwd / command, os.X_OK) and not (cwd / command).is_dir()
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath)) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


class StdioServerProcess:
    """One stdio MCP server process. `open()` starts it and yields the message streams;
    leaving the context stops it. `on_exit` is called once when its stdout closes
    (it exited, or is about to)."""

    def __init__(
        self, config: McpStdioServer, *, cwd: Path, on_exit: Callable[[], None] | None = None
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.stderr_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self.pid: int | None = None
        self._process: Process | None = None
        self._on_exit = on_exit
        self._exited = False

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the process has exited (None: still running after `timeout`)."""
        process = self._process
        if process is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while process.returncode is None and loop.time() < deadline:
            await asyncio.sleep(_POLL_S)
        return process.returncode

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Streams]:
        """Starts the server. Raises OSError when it cannot be started (missing command...)."""
        config = self.config
        env = server_environment(config)
        _check_command(config.command, self.cwd, env)
        process = await anyio.open_process(
            # behind a gate on its stdin: it runs once its group is registered, so a
            # killed agent never leaves it running (runtime/processes.py)
            gated([config.command, *config.args], keep_stdin=True),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(self.cwd),
            env=env,
            start_new_session=True,
        )
        self._process, self.pid = process, process.pid
        register_group(process.pid)
        assert process.stdin is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await process.stdin.send(GATE_LINE)  # gone already: its exit is seen below
        logger.info("MCP server %s: started %s (pid %d)", config.name, config.command, process.pid)
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read_stdout, process, read_writer)
                group.start_soon(self._write_stdin, process, write_reader, read_writer)
                group.start_soon(self._read_stderr, process)
                group.start_soon(self._watch_exit, process)
                try:
                    yield read_stream, write_stream
                finally:
                    await self._stop(process)
                    group.cancel_scope.cancel()
        finally:
            self._reap_group(process.pid)
            for stream in (read_stream, write_stream, read_writer, write_reader):
                stream.close()

    # ------------------------------------------------------------ pipes

    async def _read_stdout(
        self, process: Process, out: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        assert process.stdout is not None
        buffer = b""
        try:
            async with out:
                async for chunk in process.stdout:
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        message = self._parse(line)
                        if message is not None:
                            await out.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            logger.debug("MCP server %s: stdout reader ended: %s", self.config.name, exc)
        finally:
            self._mark_exited()

    def _parse(self, raw: bytes) -> SessionMessage | None:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return None
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
        except (ValidationError, ValueError):
            logger.warning(
                "MCP server %s wrote a line that is not JSON-RPC: %.200s", self.config.name, line
            )
            return None

    async def _write_stdin(
        self,
        process: Process,
        messages: MemoryObjectReceiveStream[SessionMessage],
        out: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async with messages:
                async for message in messages:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            # The server stopped reading: end the session's stream so no request waits forever.
            logger.info("MCP server %s: cannot write to it: %s", self.config.name, exc)
            await out.aclose()

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        buffer = b""
        try:
            async for chunk in process.stderr:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._stderr_line(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        if buffer:
            self._stderr_line(buffer)

    def _stderr_line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip()
        if text:
            self.stderr_tail.append(text)
            logger.debug("MCP server %s (stderr): %s", self.config.name, text)

    async def _watch_exit(self, process: Process) -> None:
        """A server that exits is lost at its exit (plus `EXIT_GRACE_S`), not when the
        last process it left behind closes its stdout: what is left of its group is
        stopped, which ends the pipes."""
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S)
        await anyio.sleep(EXIT_GRACE_S)
        if not self._exited:
            logger.info("MCP server %s exited; stopping what it left running", self.config.name)
            kill_group(process.pid, signal.SIGKILL)

    def _mark_exited(self) -> None:
        if not self._exited:
            self._exited = True
            if self._on_exit is not None:
                self._on_exit()

    # ------------------------------------------------------------ shutdown

    async def _stop(self, process: Process) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the group; a cancel kills at once."""
        try:
            if process.returncode is None and process.stdin is not None:
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    await process.stdin.aclose()
                if await self.wait_exit(STOP_GRACE_S) is None:
                    kill_group(process.pid, signal.SIGTERM)
                    if await self.wait_exit(STOP_GRACE_S) is None:
                        logger.info("MCP server %s ignored SIGTERM; killing it", self.config.name)
                        kill_group(process.pid, signal.SIGKILL)
                        await self.wait_exit(1.0)
        except BaseException:
            kill_group(process.pid, signal.SIGKILL)
            raise

    def _reap_group(self, pgid: int) -> None:
        """Kills whatever is left of the server's group (children it started) and forgets it."""
        if group_alive(pgid):
            kill_group(pgid, signal.SIGKILL)
        unregister_group(pgid)
        logger.info("MCP server %s: stopped (exit code %s)", self.config.name, self.returncode)


def describe_exit(process: StdioServerProcess, *, with_stderr: bool) -> str:
    """`exited with code N`, optionally with the last line the server wrote to stderr."""
    code = process.returncode
    if code is None:
        return "its output ended"
    text = f"exited with code {code}"
    if with_stderr and process.stderr_tail:
        text += f": {process.stderr_tail[-1][:300]}"
    return text
