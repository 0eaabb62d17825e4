"""The scheduler's BeforeTool and AfterTool stages (see `scheduler` and `hooks`):
what the hooks decided, applied to one call. A failing hook is no decision; a block
ends the call (before) or replaces its result (after); `continue: false` ends the
call and, through `on_stop`, the turn (without `on_stop`, `HookStopRequested`); an
AfterTool `tailToolCallRequest` is left on the call for the scheduler to run."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn

from runtime.tools.base import ToolResult
from runtime.tools.scheduling.calls import ToolCall
from runtime.tools.scheduling.hooks import (
    AfterToolOutcome,
    BeforeToolOutcome,
    HookStopRequested,
    ToolHookContext,
    ToolHooks,
)
from runtime.tools.scheduling.reporting import CallReporter

logger = logging.getLogger(__name__)


class HookStages:
    """The hook stages of one scheduler (`notify` shows a hook's system message)."""

    def __init__(
        self,
        hooks: ToolHooks,
        report: CallReporter,
        notify: Callable[[str | None], Awaitable[None]],
        *,
        on_stop: Callable[[str], None] | None = None,
    ) -> None:
        self._hooks = hooks
        self._report = report
        self._notify = notify
        self._on_stop = on_stop

    async def before(self, call: ToolCall, context: ToolHookContext) -> BeforeToolOutcome:
        try:
            before = await self._hooks.before_tool(call.name, dict(call.args), context)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failing hook is not a decision (Gemini CLI); the call goes on
            logger.exception("BeforeTool hook failed for %s", call.name)
            return BeforeToolOutcome()
        await self._notify(before.system_message)
        if before.stop:
            await self.stop(call, before.stop_reason or before.reason)
        if before.decision == "block":
            await self._report.fail(
                call, f"Tool execution blocked: {before.reason or 'no reason given'}"
            )
        return before

    async def after(
        self, call: ToolCall, result: ToolResult, context: ToolHookContext
    ) -> ToolResult:
        try:
            after = await self._hooks.after_tool(call.name, dict(call.args), result, context)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failing hook is not a decision (Gemini CLI); the result stands
            logger.exception("AfterTool hook failed for %s", call.name)
            after = AfterToolOutcome()
        await self._notify(after.system_message)
        if after.decision == "block":
            result = dataclasses.replace(
                result,
                llm_content=f"Tool result blocked: {after.reason or 'no reason given'}",
                is_error=True,
            )
        if after.additional_context:
            result = dataclasses.replace(
                result,
                llm_content=f"{result.llm_content}\n\n<hook_context>{after.additional_context}</hook_context>",
            )
        if after.stop:
            await self.stop(call, after.stop_reason or after.reason)
        if after.decision != "block":
            call.tail = after.tail_call
        return result

    async def stop(self, call: ToolCall, reason: str | None) -> NoReturn:
        """A hook answered `continue: false`: end the call, and the turn (see the module doc)."""
        reason = reason or "A hook stopped the agent."
        message = f"Agent execution stopped by hook: {reason}"
        if self._on_stop is None:
            await self._report.failed(call, message)
            raise HookStopRequested(reason)
        self._on_stop(reason)
        await self._report.fail(call, message)
