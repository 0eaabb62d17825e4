"""Where the scheduler reports calls (the ToolEventSink contract) and the
per-call reporter that keeps each call's updates in order. A stage ends a call
early through `CallReporter.fail` / `denied` (typed `NoReturn`: they raise
`CallEnded`, which `Scheduler` turns into the call's function response)."""

from __future__ import annotations

import logging
from typing import Any, Literal, NoReturn, Protocol

from runtime.protocol import DisplayContent, ToolDisplay
from runtime.tools.base import ToolResult
from runtime.tools.policy.rules import PolicyDecision
from runtime.tools.scheduling.calls import CANCELLED_MESSAGE, CallEnded, ToolCall, ToolCallOutcome

logger = logging.getLogger(__name__)


class ToolEventSink(Protocol):
    """Where the scheduler reports a call's life. Per call, in this order:
    `tool_requested` once (status pending, display with preview), `tool_updated`
    zero or more times (in_progress, then progress displays), `tool_finished` once.
    Calls that fail before approval still get `tool_requested` then `tool_finished`."""

    async def tool_requested(
        self, call_id: str, name: str, args: dict[str, Any], display: ToolDisplay
    ) -> None: ...

    async def tool_updated(
        self, call_id: str, status: Literal["pending", "in_progress"], display: ToolDisplay | None
    ) -> None: ...

    async def tool_finished(self, call_id: str, name: str, outcome: ToolCallOutcome) -> None: ...

    async def tool_waiting(self, call_id: str, waiting: bool) -> None:
        """The call waits on the user's approval (True) or no longer does (False)."""


class NullToolEventSink:
    """Reports nothing."""

    async def tool_requested(
        self, call_id: str, name: str, args: dict[str, Any], display: ToolDisplay
    ) -> None:
        return None

    async def tool_updated(
        self, call_id: str, status: Literal["pending", "in_progress"], display: ToolDisplay | None
    ) -> None:
        return None

    async def tool_finished(self, call_id: str, name: str, outcome: ToolCallOutcome) -> None:
        return None

    async def tool_waiting(self, call_id: str, waiting: bool) -> None:
        return None


class CallReporter:
    """Reports calls to a ToolEventSink: `tool_requested` and `tool_finished` at most
    once per call, `tool_requested` always before anything else."""

    def __init__(self, sink: ToolEventSink) -> None:
        self._sink = sink

    async def requested(self, call: ToolCall) -> None:
        if not call.requested:
            call.requested = True
            await self._sink.tool_requested(call.call_id, call.name, dict(call.args), call.display)

    async def updated(self, call: ToolCall, display: ToolDisplay | None) -> None:
        await self._sink.tool_updated(call.call_id, "in_progress", display)

    async def waiting(self, call: ToolCall, waiting: bool) -> None:
        """The waiting-for-confirmation signal: the call waits on the user, or not any more."""
        await self._sink.tool_waiting(call.call_id, waiting)

    async def completed(
        self, call: ToolCall, result: ToolResult, content: tuple[DisplayContent, ...]
    ) -> None:
        """Reports the result: completed, or failed when `result.is_error`."""
        outcome = ToolCallOutcome(
            status="failed" if result.is_error else "completed",
            display=call.display.model_copy(update={"content": content}),
            llm_content=result.llm_content,
            is_error=result.is_error,
            raw_output=result.raw_output,
            plan=result.plan,
            plan_id=result.plan_id,
            plan_markdown=result.plan_markdown,
        )
        await self._finished(call, outcome)

    async def fail(self, call: ToolCall, message: str) -> NoReturn:
        """Reports the call as failed with `message` and ends it: raises CallEnded with
        the function response `{"error": message}`."""
        await self.failed(call, message)
        raise CallEnded({"error": message})

    async def denied(self, call: ToolCall, verdict: PolicyDecision) -> NoReturn:
        """Ends the call as denied by the policy (its deny message, if any, told)."""
        detail = f": {verdict.deny_message}" if verdict.deny_message else "."
        logger.info("policy denied %s (%s): %s", call.name, call.call_id, verdict.reason)
        await self.fail(call, f"Tool execution denied by policy{detail}")

    async def failed(self, call: ToolCall, message: str) -> None:
        """Reports the call as failed with `message`; the caller ends it."""
        await self.requested(call)
        outcome = ToolCallOutcome(
            status="failed", display=call.display, llm_content=message, is_error=True
        )
        await self._finished(call, outcome)

    async def cancelled(self, call: ToolCall) -> None:
        """Reports a requested, unfinished call as cancelled."""
        if call.requested and not call.finished:
            outcome = ToolCallOutcome(
                status="cancelled",
                display=call.display,
                llm_content=CANCELLED_MESSAGE,
                is_error=True,
            )
            await self._finished(call, outcome)

    async def _finished(self, call: ToolCall, outcome: ToolCallOutcome) -> None:
        if not call.finished:
            call.finished = True
            await self._sink.tool_finished(call.call_id, call.name, outcome)
