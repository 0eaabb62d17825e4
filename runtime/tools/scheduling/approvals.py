"""Approvals: the permission request for a tool call, its answer, and the approval queue.

ADK runs the function calls of one model turn as parallel asyncio tasks, but the
user answers one question at a time. `ApprovalQueue` hands out tickets in call
order; a call that needs approval waits until every earlier call has passed its
approval stage (asked and answered, no question needed, failed or cancelled), so
at most one permission request is open and requests appear in call order.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from runtime.errors import RuntimeAgentError
from runtime.host import PermissionOption, PermissionOutcome, PermissionRequest
from runtime.protocol import DisplayContent, DisplayDiff, DisplayText, ToolDisplay

logger = logging.getLogger(__name__)

PROCEED_ONCE = "proceed_once"
PROCEED_ALWAYS = "proceed_always"
PROCEED_ALWAYS_AND_SAVE = "proceed_always_and_save"
CANCEL = "cancel"
REJECT_ALWAYS = "reject_always"
PROCEED_ALWAYS_SERVER = "proceed_always_server"

PERMISSION_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption(option_id=PROCEED_ONCE, name="Allow", kind="allow_once"),
    PermissionOption(option_id=PROCEED_ALWAYS, name="Allow for this session", kind="allow_always"),
    PermissionOption(
        option_id=PROCEED_ALWAYS_AND_SAVE, name="Always allow — saved", kind="allow_always"
    ),
    PermissionOption(option_id=CANCEL, name="Reject", kind="reject_once"),
    PermissionOption(option_id=REJECT_ALWAYS, name="Reject always", kind="reject_always"),
)

SERVER_OPTION = PermissionOption(
    option_id=PROCEED_ALWAYS_SERVER, name="Allow all tools of this server", kind="allow_always"
)

REJECTED_MESSAGE = "The user rejected this tool call."

# What the user chose. "reject" is the "Reject" option (`cancel` id); "cancelled"
# means the request itself was cancelled (the user cancelled the turn).
ApprovalChoice = Literal[
    "proceed_once",
    "proceed_always",
    "proceed_always_and_save",
    "proceed_always_server",
    "reject",
    "reject_always",
    "cancelled",
]


class ApprovalCancelled(RuntimeAgentError):
    """The permission request was cancelled: the call is cancelled, and the turn must
    end as cancelled.

    Raised out of `Scheduler.schedule`; the session turns it into a cancelled turn
    (ACP stopReason `cancelled`), as for the user's own cancel.
    """

    def __init__(self, call_id: str, tool_name: str) -> None:
        super().__init__(f"approval of {tool_name} ({call_id}) was cancelled")
        self.call_id = call_id
        self.tool_name = tool_name


def build_permission_request(
    *,
    call_id: str,
    tool_name: str,
    args: dict[str, Any],
    display: ToolDisplay,
    preview: tuple[DisplayContent, ...],
    mcp_server: str | None = None,
    user_editable: bool = False,
) -> PermissionRequest:
    """The question for one call: title, kind and locations from the display, the
    preview as content; an MCP tool's also offers to allow all tools of its server; a
    `user_editable` tool's one diff may be changed by the user before allowing."""
    options = PERMISSION_OPTIONS
    if mcp_server is not None:
        options = (*PERMISSION_OPTIONS[:3], SERVER_OPTION, *PERMISSION_OPTIONS[3:])
    return PermissionRequest(
        tool_call_id=call_id,
        title=display.title,
        kind=display.kind,
        options=options,
        locations=display.locations,
        raw_input=dict(args),
        content=preview or display.content,
        tool_name=tool_name,
        modifiable=_modifiable(preview) if user_editable else None,
    )


ESCALATION_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption(option_id=PROCEED_ONCE, name="Run outside the sandbox", kind="allow_once"),
    PermissionOption(option_id=CANCEL, name="Keep the sandboxed result", kind="reject_once"),
)
"""A command the sandbox stopped: run it again outside, once, or not."""


def build_escalation_request(
    *,
    call_id: str,
    tool_name: str,
    args: dict[str, Any],
    display: ToolDisplay,
    why: str,
    output: str,
) -> PermissionRequest:
    """The question after the sandbox stopped a command: why, and what it printed."""
    text = (
        f"The sandbox stopped this command: {why}. Run it again outside the sandbox, "
        f"with your full rights?\n\n{output[-2000:]}"
    )
    return PermissionRequest(
        tool_call_id=call_id,
        title=f"Outside the sandbox: {display.title}",
        kind=display.kind,
        options=ESCALATION_OPTIONS,
        locations=display.locations,
        raw_input=dict(args),
        content=(DisplayText(text=text),),
        tool_name=tool_name,
    )


def _modifiable(preview: tuple[DisplayContent, ...]) -> str | None:
    diffs = [c for c in preview if isinstance(c, DisplayDiff)]
    return diffs[0].path if len(diffs) == 1 else None


def choice_from_outcome(outcome: PermissionOutcome) -> ApprovalChoice:
    """The user's choice; an option id we did not offer counts as a rejection."""
    match outcome.option_id:
        case None:
            return "cancelled"
        case "proceed_once":
            return "proceed_once"
        case "proceed_always":
            return "proceed_always"
        case "proceed_always_and_save":
            return "proceed_always_and_save"
        case "proceed_always_server":
            return "proceed_always_server"
        case "cancel":
            return "reject"
        case "reject_always":
            return "reject_always"
        case other:
            logger.warning(
                "permission answer with unknown option %r: treated as a rejection", other
            )
            return "reject"


class ApprovalQueue:
    """Orders approvals by ticket (the order calls were scheduled).

    `take()` when a call starts; `await wait_turn(ticket)` before asking the user;
    `release(ticket)` when the call has passed its approval stage, in every case
    (it is idempotent; call it from `finally`). Waiting is cancellable.
    """

    def __init__(self) -> None:
        self._next = 0
        self._pending: set[int] = set()
        self._waiters: dict[int, asyncio.Future[None]] = {}

    @property
    def last_ticket(self) -> int:
        """The most recently issued ticket (-1 before the first)."""
        return self._next - 1

    def take(self) -> int:
        ticket = self._next
        self._next += 1
        self._pending.add(ticket)
        return ticket

    async def wait_turn(self, ticket: int) -> None:
        """Returns once every earlier ticket has been released."""
        while min(self._pending) != ticket:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters[ticket] = waiter
            try:
                await waiter
            finally:
                self._waiters.pop(ticket, None)

    def release(self, ticket: int) -> None:
        self._pending.discard(ticket)
        if not self._pending:
            return
        waiter = self._waiters.get(min(self._pending))
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
