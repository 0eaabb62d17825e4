"""Fakes shared by the tool tests: a recording Host with scripted editor fs and terminals.

No tests here; the other test_tools_* modules import from it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.host import (
    Host,
    HostCapabilities,
    PermissionOutcome,
    PermissionRequest,
    TerminalExit,
    TerminalHandle,
    TerminalOutput,
    TerminalRequest,
)
from runtime.protocol import DisplayContent
from runtime.tools.base import ToolEnv
from runtime.tools.io.commands import CommandRunner
from runtime.tools.io.files import FileAccess


@dataclass
class TerminalScript:
    """What a fake editor terminal does: exit after `delay_s` (None: never, until killed)."""

    output: str = ""
    exit_code: int | None = 0
    signal: str | None = None
    delay_s: float | None = 0.0
    truncated: bool = False
    release_gate: asyncio.Event | None = None
    """When given, `release` answers only once it is set (an editor slow to release)."""


class FakeTerminal(TerminalHandle):
    def __init__(
        self, terminal_id: str, script: TerminalScript, calls: list[tuple[Any, ...]]
    ) -> None:
        self.terminal_id = terminal_id
        self._script = script
        self._calls = calls
        self._killed = asyncio.Event()

    async def wait_for_exit(self) -> TerminalExit:
        self._calls.append(("wait_for_exit", self.terminal_id))
        if self._script.delay_s is None:
            await self._killed.wait()
            return TerminalExit(exit_code=None, signal="SIGKILL")
        await asyncio.sleep(self._script.delay_s)
        return TerminalExit(exit_code=self._script.exit_code, signal=self._script.signal)

    async def output(self) -> TerminalOutput:
        self._calls.append(("output", self.terminal_id))
        exit_status = TerminalExit(None, "SIGKILL") if self._killed.is_set() else None
        return TerminalOutput(
            output=self._script.output, truncated=self._script.truncated, exit=exit_status
        )

    async def kill(self) -> None:
        self._calls.append(("kill", self.terminal_id))
        self._killed.set()

    async def release(self) -> None:
        self._calls.append(("release", self.terminal_id))
        if self._script.release_gate is not None:
            await self._script.release_gate.wait()
        self._calls.append(("released", self.terminal_id))


class RecordingHost(Host):
    """A Host advertising the chosen capabilities, recording every editor call.

    `buffers` plays the editor's open documents: reads come from it (a missing
    path raises FileNotFoundError, as the server maps -32002), writes land in it.
    """

    def __init__(
        self,
        *,
        read: bool = False,
        write: bool = False,
        terminal: bool = False,
        buffers: dict[Path, str] | None = None,
        terminal_script: TerminalScript | None = None,
    ) -> None:
        self.capabilities = HostCapabilities(
            read_text_file=read, write_text_file=write, terminal=terminal
        )
        self.buffers: dict[Path, str] = dict(buffers or {})
        self.calls: list[tuple[Any, ...]] = []
        self.terminal_script = terminal_script or TerminalScript()
        self.terminal_requests: list[TerminalRequest] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        return PermissionOutcome(option_id=None)

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        self.calls.append(("read_text_file", path))
        if path not in self.buffers:
            raise FileNotFoundError(f"Resource not found: {path}")
        return self.buffers[path]

    async def write_text_file(self, path: Path, content: str) -> None:
        self.calls.append(("write_text_file", path, content))
        self.buffers[path] = content

    async def create_terminal(self, request: TerminalRequest) -> TerminalHandle:
        self.terminal_requests.append(request)
        terminal_id = f"term-{len(self.terminal_requests)}"
        self.calls.append(("create_terminal", terminal_id))
        return FakeTerminal(terminal_id, self.terminal_script, self.calls)


@dataclass
class ProgressLog:
    """A ToolEnv.on_progress callback that keeps every update."""

    updates: list[tuple[DisplayContent, ...]] = field(default_factory=list)

    async def __call__(self, content: tuple[DisplayContent, ...]) -> None:
        self.updates.append(content)


def make_env(
    root: Path, host: Host | None = None, *, extra_roots: tuple[Path, ...] = ()
) -> ToolEnv:
    host = host or RecordingHost()
    root.mkdir(parents=True, exist_ok=True)
    return ToolEnv(
        roots=(root, *extra_roots),
        host=host,
        session_id="session-1",
        temp_dir=root.parent / "tmp",
        files=FileAccess(host),
        commands=CommandRunner(host),
        on_progress=ProgressLog(),
    )


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every path below `directory` with its bytes (None for directories)."""
    return {
        str(p.relative_to(directory)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if not p.is_symlink()
    }
