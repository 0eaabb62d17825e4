"""The Host interface: everything the engine asks of the editor.

The runtime defines it; `acp_server/host.py` implements it with client requests
(`session/request_permission`, `fs/*`, `terminal/*`). One Host is bound to one
session. `HeadlessHost` is the default when no editor is attached: it refuses
approvals (non-interactive means deny) and uses the local disk.

An editor terminal the engine used is let go through `stop_terminal` (killed if need be,
then released): in a task of its own, waited for even when the turn is cancelled again
meanwhile, at most `TERMINAL_STOP_WAIT_S`. So a cancelled turn answers `cancelled` only
after the editor released its terminals (ACP: the agent ends what it runs before it
answers), and an editor that never answers cannot hold the cancel.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runtime.errors import CapabilityNotOffered
from runtime.protocol import DisplayContent, ToolKind, ToolLocation

logger = logging.getLogger(__name__)

TERMINAL_STOP_WAIT_S = 3.0
"""How long a terminal's kill and release are waited for; then the turn goes on (logged)."""

PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@dataclass(frozen=True)
class HostCapabilities:
    """What the editor offers. The engine never calls what is not offered."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    elicitation: bool = False
    edit_review: bool = False
    """The editor may answer an edit's question with the user's own version of the
    proposed file (the `editReview` extension; `PermissionOutcome.modified`)."""


@dataclass(frozen=True)
class PermissionOption:
    option_id: str
    name: str
    kind: PermissionOptionKind


@dataclass(frozen=True)
class PermissionRequest:
    """A question to the user about one tool call (or a fallback choice shown as one)."""

    tool_call_id: str
    title: str
    kind: ToolKind
    options: tuple[PermissionOption, ...]
    locations: tuple[ToolLocation, ...] = ()
    raw_input: dict[str, object] | None = None
    content: tuple[DisplayContent, ...] = ()
    tool_name: str | None = None
    """The tool's own name (`write_file`); None for a question that is no tool's."""
    modifiable: str | None = None
    """The path of the proposed file the user may change before allowing (an edit tool's
    one diff); None: the answer is only a choice."""


@dataclass(frozen=True)
class PermissionOutcome:
    """`option_id` is the chosen option; None means the request was cancelled.
    `modified` is the user's version of the proposed file (`PermissionRequest.modifiable`)
    when they changed it before allowing; None: the proposal as it was."""

    option_id: str | None
    modified: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.option_id is None


FallbackIntent = Literal[
    "retry_always", "retry_once", "retry_with_credits", "stop", "retry_later", "upgrade"
]


@dataclass(frozen=True)
class FallbackChoice:
    """The model ran out (of quota, capacity, or was not found): may we switch?"""

    failed_model: str
    fallback_model: str
    failure_kind: Literal["terminal", "transient", "not_found", "unknown"]
    message: str
    quota: str | None = None
    reset_after_seconds: float | None = None


@dataclass(frozen=True)
class TerminalExit:
    exit_code: int | None
    signal: str | None = None


@dataclass(frozen=True)
class TerminalOutput:
    output: str
    truncated: bool
    exit: TerminalExit | None = None


class TerminalHandle(abc.ABC):
    """A command running in the editor's terminal (`terminal/*`)."""

    terminal_id: str

    @abc.abstractmethod
    async def wait_for_exit(self) -> TerminalExit: ...

    @abc.abstractmethod
    async def output(self) -> TerminalOutput: ...

    @abc.abstractmethod
    async def kill(self) -> None: ...

    @abc.abstractmethod
    async def release(self) -> None: ...


async def wait_through_cancel(task: asyncio.Future[Any], within_s: float) -> bool:
    """Wait for `task` at most `within_s`, even through cancels of the caller (the task is
    not cancelled by them); True when the caller was cancelled meanwhile, for it to raise
    `CancelledError` once the wait is over."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    cancelled = False
    while not task.done() and (remaining := deadline - loop.time()) > 0:
        try:
            await asyncio.wait({task}, timeout=remaining)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


async def stop_terminal(
    handle: TerminalHandle, *, kill: bool, within_s: float = TERMINAL_STOP_WAIT_S
) -> bool:
    """Kill (when `kill`) and then release `handle`, waited for through cancels, at most
    `within_s` (see the module docstring); a step that fails is logged and the release
    still follows. True when the editor answered every step. Raises `CancelledError`
    after the wait when the caller was cancelled during it."""
    steps = asyncio.ensure_future(_kill_and_release(handle, kill))
    cancelled = await wait_through_cancel(steps, within_s)
    done = steps.done()
    if not done:
        logger.warning(
            "the editor did not release terminal %s within %.1f s; going on without it",
            handle.terminal_id,
            within_s,
        )
        steps.cancel()  # its request abandoned: a late answer is dropped
    if cancelled:
        raise asyncio.CancelledError
    return done and steps.result()


async def _kill_and_release(handle: TerminalHandle, kill: bool) -> bool:
    answered = True
    for what, step in (("kill", handle.kill), ("release", handle.release))[0 if kill else 1 :]:
        try:
            await step()
        except Exception as exc:  # noqa: BLE001 - logged; the release follows a failed kill
            logger.warning("could not %s terminal %s: %s", what, handle.terminal_id, exc)
            answered = False
    return answered


@dataclass(frozen=True)
class TerminalRequest:
    command: str
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    output_byte_limit: int | None = None


class Host(abc.ABC):
    """What the engine needs from the editor, for one session."""

    capabilities: HostCapabilities = HostCapabilities()

    @abc.abstractmethod
    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        """Ask the user; returns the chosen option, or a cancelled outcome."""

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        """Read through the editor (sees unsaved buffers). Raises FileNotFoundError."""
        raise CapabilityNotOffered("the editor does not offer fs.readTextFile")

    async def write_text_file(self, path: Path, content: str) -> None:
        """Write through the editor (it builds its review from the write)."""
        raise CapabilityNotOffered("the editor does not offer fs.writeTextFile")

    async def create_terminal(self, request: TerminalRequest) -> TerminalHandle:
        raise CapabilityNotOffered("the editor does not offer terminals")

    async def choose_fallback(self, choice: FallbackChoice) -> FallbackIntent:
        """Ask the user which way to go after a model failure. Default: stop."""
        return "stop"

    def for_subagent(self, session_id: str) -> Host:
        """The editor as a subagent session `session_id` speaks to it: this host, or one
        whose requests name the subagent's session (an editor that follows subagents)."""
        return self


class HeadlessHost(Host):
    """No editor attached: approvals are refused, files are local, fallbacks stop."""

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        reject = next((o for o in request.options if o.kind == "reject_once"), None)
        return PermissionOutcome(option_id=reject.option_id if reject else None)
