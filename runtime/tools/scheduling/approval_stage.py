"""The scheduler's approval stage (see `scheduler` for the whole pipeline, `approvals`
for the request, the choices and the queue): one question at a time, in call order;
the answer applied (a rule for the session or saved, every tool of an MCP server,
auto edit after "always" for an edit, a rejection); a cancelled question cancels the
call and every call of the batch still waiting to ask (see the `scheduler` doc).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn

from runtime.errors import RuntimeAgentError
from runtime.host import Host, PermissionOutcome, PermissionRequest
from runtime.protocol import DisplayContent
from runtime.tools.base import GcliTool
from runtime.tools.policy.defaults import EDIT_TOOLS
from runtime.tools.policy.modes import mode_rank, parse_mode
from runtime.tools.policy.rules import PolicyDecision
from runtime.tools.scheduling.approvals import (
    REJECTED_MESSAGE,
    ApprovalCancelled,
    ApprovalChoice,
    ApprovalQueue,
    build_escalation_request,
    build_permission_request,
    choice_from_outcome,
)
from runtime.tools.scheduling.calls import CANCELLED_MESSAGE, CallEnded, ToolCall
from runtime.tools.scheduling.checks import CancelCallback, PolicyChecker
from runtime.tools.scheduling.reporting import CallReporter

logger = logging.getLogger(__name__)

AskCallback = Callable[[PermissionRequest, GcliTool], Awaitable[None] | None]
AnswerCallback = Callable[[PermissionRequest, PermissionOutcome], None]


class ApprovalStage:
    """Asks the user through `host` (see the module doc).

    `judge(call, tool)` is the policy's verdict in the current mode (asked again when
    the call's turn to ask comes: an earlier "always" may have settled it);
    `change_mode` switches the session's mode; `notify` tells the user; `on_ask`,
    `on_answer`, `on_cancel` are the scheduler's callbacks of the same names.
    """

    def __init__(
        self,
        *,
        host: Host,
        policy: PolicyChecker,
        report: CallReporter,
        queue: ApprovalQueue,
        judge: Callable[[ToolCall, GcliTool], PolicyDecision],
        change_mode: Callable[[str], Awaitable[None]],
        notify: Callable[[str | None], Awaitable[None]],
        on_ask: AskCallback | None = None,
        on_answer: AnswerCallback | None = None,
        on_cancel: CancelCallback | None = None,
    ) -> None:
        self._host = host
        self._policy = policy
        self._report = report
        self._queue = queue
        self._judge = judge
        self._change_mode = change_mode
        self._notify = notify
        self._on_ask = on_ask  # the Notification hook, told of every permission request
        self._on_answer = on_answer  # the session record, told of every answer
        self._on_cancel = on_cancel
        self._cancelled_through = -1  # calls with tickets up to this one were cancelled

    async def approve(
        self,
        call: ToolCall,
        tool: GcliTool,
        mode: str,
        preview: tuple[DisplayContent, ...],
        *,
        forced: bool,
    ) -> None:
        """Returns when the user allowed the call; ends it otherwise (`CallEnded`,
        `ApprovalCancelled`, or `CancelledError` when the turn was cancelled)."""
        await self._queue.wait_turn(call.ticket)
        if call.ticket <= self._cancelled_through:
            await self._cancel_with_turn(call, first=False)
        if not forced:  # an earlier "always" answer may have settled it while this call waited
            verdict = self._judge(call, tool)
            if verdict.decision == "allow":
                return
            if verdict.decision == "deny":
                await self._report.denied(call, verdict)
        request = build_permission_request(
            call_id=call.call_id,
            tool_name=call.name,
            args=call.args,
            display=call.display,
            preview=preview,
            mcp_server=tool.mcp_server,
            user_editable=tool.user_editable,
        )
        if self._on_ask is not None:  # awaited, as Gemini CLI: the hook is told first
            told = self._on_ask(request, tool)
            if inspect.isawaitable(told):
                await told
        await self._report.waiting(call, True)
        try:
            outcome = await self._host.request_permission(request)
        except asyncio.CancelledError:  # the turn was cancelled while the question waited
            if self._on_answer is not None:
                self._on_answer(request, PermissionOutcome(option_id=None))
            raise
        except (RuntimeAgentError, OSError, ConnectionError) as exc:
            logger.warning("permission request for %s failed: %s", call.name, exc)
            await self._report.fail(call, f"Could not ask the user for approval: {exc}")
        await self._report.waiting(call, False)
        if self._on_answer is not None:
            self._on_answer(request, outcome)
        choice = choice_from_outcome(outcome)
        logger.info("approval of %s (%s): %s", call.name, call.call_id, choice)
        if request.modifiable is not None and choice.startswith("proceed"):
            call.reviewed = outcome.modified  # the user's version of the file, if they changed it
        await self._apply_choice(call, tool, choice, mode)

    async def escalate(self, call: ToolCall, tool: GcliTool, why: str, output: str) -> bool:
        """Asks whether a command the sandbox stopped (`why`; `output`: what it printed)
        may run again outside it, in its turn among the questions. True: run it outside;
        False: keep the sandboxed result; a cancelled question cancels the turn."""
        ticket = self._queue.take()
        try:
            await self._queue.wait_turn(ticket)
            request = build_escalation_request(
                call_id=call.call_id,
                tool_name=call.name,
                args=call.args,
                display=call.display,
                why=why,
                output=output,
            )
            if self._on_ask is not None:
                told = self._on_ask(request, tool)
                if inspect.isawaitable(told):
                    await told
            await self._report.waiting(call, True)
            try:
                outcome = await self._host.request_permission(request)
            except asyncio.CancelledError:
                if self._on_answer is not None:
                    self._on_answer(request, PermissionOutcome(option_id=None))
                raise
            except (RuntimeAgentError, OSError, ConnectionError) as exc:
                logger.warning("escalation request for %s failed: %s", call.name, exc)
                await self._report.waiting(call, False)
                return False
            await self._report.waiting(call, False)
            if self._on_answer is not None:
                self._on_answer(request, outcome)
        finally:
            self._queue.release(ticket)
        choice = choice_from_outcome(outcome)
        logger.info("outside the sandbox, %s (%s): %s", call.name, call.call_id, choice)
        if choice == "cancelled":
            await self._cancel_with_turn(call, first=True)
        return choice == "proceed_once"

    async def _apply_choice(
        self, call: ToolCall, tool: GcliTool, choice: ApprovalChoice, mode: str
    ) -> None:
        match choice:
            case "proceed_once":
                return
            case "proceed_always":
                self._policy.add_session_rule(call.name, call.args, mode=mode)
                if call.name in EDIT_TOOLS and mode_rank(parse_mode(mode)) < mode_rank("autoEdit"):
                    await self._change_mode("autoEdit")
            case "proceed_always_and_save":
                try:
                    self._policy.save_rule(call.name, call.args, mode=mode)
                except RuntimeAgentError as exc:
                    logger.warning("could not save the rule: %s", exc)
                    self._policy.add_session_rule(call.name, call.args, mode=mode)
                    await self._notify(
                        f"Could not save the permission; it holds for this session only: {exc}"
                    )
            case "proceed_always_server":
                server = tool.mcp_server
                if server is not None and hasattr(self._policy, "allow_server"):
                    self._policy.allow_server(server, mode=mode)
            case "reject":
                await self._report.fail(call, REJECTED_MESSAGE)
            case "reject_always":
                self._policy.add_session_rule(call.name, call.args, mode=mode, decision="deny")
                await self._report.fail(call, REJECTED_MESSAGE)
            case "cancelled":
                await self._cancel_with_turn(call, first=True)

    async def _cancel_with_turn(self, call: ToolCall, *, first: bool) -> NoReturn:
        """Ends the call as cancelled because the user cancelled the turn (see the module doc)."""
        self._cancelled_through = max(self._cancelled_through, self._queue.last_ticket)
        await self._report.cancelled(call)
        if self._on_cancel is None:
            raise ApprovalCancelled(call.call_id, call.name)
        if first:
            result = self._on_cancel()
            if inspect.isawaitable(result):
                await result
        raise CallEnded({"error": CANCELLED_MESSAGE})
