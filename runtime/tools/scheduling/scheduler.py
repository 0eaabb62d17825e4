"""The scheduler (Gemini CLI's `scheduler.schedule`): every tool call goes through it.

One call, in order: look up the tool, validate the args, BeforeTool hook, policy
(before any I/O: a denied read is never read), workspace path check, preview,
`tool_requested` event, approval through the Host if needed, `in_progress`,
execution (progress as `tool_updated`), escalation (a command the sandbox stopped
may be run again outside it, if the user says so: `ApprovalStage.escalate`),
truncation of large output, AfterTool hook, `tool_finished`. The model gets
`{"output": text}` or `{"error": text}`.
A stage that ends a call early does so through a `NoReturn` helper
(`CallReporter.fail` / `denied`, raising `CallEnded`); the approval stage is
`approval_stage.ApprovalStage`, the hook stages `hook_stages.HookStages`.

An AfterTool hook's `tailToolCallRequest` makes the scheduler run that call next,
through the same pipeline (its own BeforeTool hook, policy and approval), shown as
a call of its own (`<id>-tail<n>`); the model gets the last call's response in
place of the first's (at most `MAX_TAIL_CALLS` in a row).

Concurrency: ADK runs a turn's calls as parallel tasks. Each `schedule()` takes
a ticket when called, so permission requests are asked one at a time in call
order (`ApprovalQueue`); calls needing no approval do not wait. A task cancelled
while waiting frees its place. Tool failures become error results; only
cancellation (`CancelledError`, `ApprovalCancelled`) and a hook's stop
(`HookStopRequested`, unless `on_stop` is given: then the scheduler calls it with
the reason and the call ends with that reason) leave `schedule()` as exceptions.

A cancelled permission request (the user cancelled the turn) cancels the call
and every call of the same batch still waiting to ask. With `on_cancel` the
scheduler calls it (the session aborts the run: ADK then cancels the other
calls and ends the invocation cleanly) and answers the call as cancelled;
without it, it raises `ApprovalCancelled` for the session to catch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from runtime.errors import ToolError
from runtime.protocol import DisplayContent, DisplayText, NoticeSink, ToolDisplay
from runtime.services.truncation import DEFAULT_THRESHOLD, truncate_output
from runtime.tools.base import MEDIA_KEY, GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.defaults import EDIT_TOOLS
from runtime.tools.policy.rules import PolicyDecision
from runtime.tools.scheduling.approval_stage import AnswerCallback, ApprovalStage, AskCallback
from runtime.tools.scheduling.approvals import ApprovalQueue
from runtime.tools.scheduling.calls import CANCELLED_MESSAGE, CallEnded, ToolCall, ToolCallOutcome
from runtime.tools.scheduling.checks import (
    CancelCallback,
    ModeChangeCallback,
    PolicyChecker,
    default_should_truncate,
    outside_workspace,
    schema_error,
)
from runtime.tools.scheduling.hook_stages import HookStages
from runtime.tools.scheduling.hooks import NoToolHooks, ToolHookContext, ToolHooks
from runtime.tools.scheduling.reporting import CallReporter, NullToolEventSink, ToolEventSink

__all__ = [
    "CANCELLED_MESSAGE",
    "CancelCallback",
    "ModeChangeCallback",
    "NullToolEventSink",
    "PolicyChecker",
    "Scheduler",
    "ToolCallOutcome",
    "ToolEventSink",
    "default_should_truncate",
]

logger = logging.getLogger(__name__)

MAX_TAIL_CALLS = 8  # tail calls chained from one model call


class Scheduler:
    """Runs tool calls for one session (see the module doc for the pipeline).

    `mode_getter` returns the session's current mode id; `on_mode_change` is
    called with "autoEdit" when the user allows an edit tool for the session;
    `on_cancel` is called when the user cancels a permission request and must
    end the turn as cancelled by setting the run's abort signal; it runs inside
    the turn, so it must not wait for the turn to end. `output_dir` holds saved
    full outputs (default `env.temp_dir`).
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, GcliTool],
        env: ToolEnv,
        policy: PolicyChecker,
        mode_getter: Callable[[], str],
        on_mode_change: ModeChangeCallback | None = None,
        on_cancel: CancelCallback | None = None,
        events: ToolEventSink | None = None,
        hooks: ToolHooks | None = None,
        interactive: bool = True,
        truncate_threshold: int = DEFAULT_THRESHOLD,
        output_dir: Path | None = None,
        should_truncate: Callable[[str, GcliTool], bool] = default_should_truncate,
        notify: NoticeSink | None = None,
        on_ask: AskCallback | None = None,
        on_stop: Callable[[str], None] | None = None,
        on_answer: AnswerCallback | None = None,
        before_edit: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self._notice_sink = notify
        self._before_edit = before_edit  # checkpoints: called as an allowed edit starts
        self._tools = dict(tools)
        self._env = env
        self._policy = policy
        self._mode_getter = mode_getter
        self._on_mode_change = on_mode_change
        self._report = CallReporter(events or NullToolEventSink())
        self._hook_stages = HookStages(
            hooks or NoToolHooks(), self._report, self._notify, on_stop=on_stop
        )
        self._interactive = interactive
        self._threshold = truncate_threshold
        self._output_dir = output_dir or env.temp_dir
        self._should_truncate = should_truncate
        self._queue = ApprovalQueue()
        self._approval = ApprovalStage(
            host=env.host,
            policy=policy,
            report=self._report,
            queue=self._queue,
            judge=lambda call, tool: self._evaluate(call, tool, self._mode_getter()),
            change_mode=self._change_mode,
            notify=self._notify,
            on_ask=on_ask,
            on_answer=on_answer,
            on_cancel=on_cancel,
        )
        # Edits run in call order: the next one may be asked while one is written, but it
        # is written after it (the model's second edit may build on its first).
        self._writes = ApprovalQueue()

    @property
    def tools(self) -> Mapping[str, GcliTool]:
        return self._tools

    def add_tools(self, tools: Iterable[GcliTool]) -> None:
        """Adds tools found after the session started (MCP servers); a taken name keeps its tool."""
        for tool in tools:
            self._tools.setdefault(tool.name, tool)

    def remove_tools(self, names: Iterable[str]) -> None:
        """Removes tools a server no longer offers (its list changed)."""
        for name in names:
            self._tools.pop(name, None)

    async def schedule(self, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Runs one call; returns the function response for the model.

        Raises ApprovalCancelled when the user cancelled the permission request
        and no `on_cancel` was given, HookStopRequested when a hook stopped the
        agent, CancelledError when the task was cancelled. Everything else ends
        as `{"error": ...}`.
        """
        call = self._new_call(call_id, name, args)
        response = await self._schedule_call(call)
        for hop in range(1, MAX_TAIL_CALLS + 1):
            if call.tail is None:
                return response
            tail = call.tail
            origin = call.original_name or call.name
            call = self._new_call(f"{call_id}-tail{hop}", tail.name, tail.args, origin)
            response = await self._schedule_call(call)
        if call.tail is not None:
            await self._notify(f"A hook's tail call to {call.tail.name} was not run: too many.")
        return response

    def _new_call(
        self, call_id: str, name: str, args: dict[str, Any], original_name: str | None = None
    ) -> ToolCall:
        tool = self._tools.get(name)
        display = self._display(tool, name, args)
        call = ToolCall(call_id, name, dict(args), self._queue.take(), display)
        call.original_name = original_name
        if name in EDIT_TOOLS:
            call.write_ticket = self._writes.take()
        return call

    async def _schedule_call(self, call: ToolCall) -> dict[str, Any]:
        tool = self._tools.get(call.name)
        try:
            if tool is None:
                available = ", ".join(sorted(self._tools)) or "none"
                await self._report.fail(
                    call, f'Tool "{call.name}" not found. Available tools: {available}.'
                )
            return await self._run(call, tool)
        except CallEnded as done:
            return done.response
        except asyncio.CancelledError:
            await self._report.cancelled(call)
            raise
        finally:
            self._queue.release(call.ticket)
            if call.write_ticket is not None:
                self._writes.release(call.write_ticket)

    # ------------------------------------------------------------ stages

    async def _run(self, call: ToolCall, tool: GcliTool) -> dict[str, Any]:
        await self._check_args(call, tool)
        context = ToolHookContext(tool.mcp_context(), call.original_name)
        before = await self._hook_stages.before(call, context)
        if before.tool_input is not None:  # merged over the model's args, as Gemini CLI
            call.args = {**call.args, **before.tool_input}
            call.display = self._display(tool, call.name, call.args)
            await self._check_args(call, tool)
        mode = self._mode_getter()
        verdict = self._evaluate(call, tool, mode)
        if verdict.decision == "deny":
            await self._report.denied(call, verdict)
        # An MCP tool's arguments mean what its server says; only built-in tools' paths are checked.
        outside = None if tool.mcp_server is not None else outside_workspace(call.args, self._env)
        if outside is not None:
            await self._report.fail(call, outside)
        preview = await self._preview(call, tool)
        call.display = call.display.model_copy(update={"content": preview or call.display.content})
        await self._report.requested(call)
        if verdict.decision == "ask_user" or before.decision == "ask":
            if not self._interactive:
                await self._report.fail(
                    call, "This tool call needs the user's approval, which cannot be asked here."
                )
            await self._approval.approve(call, tool, mode, preview, forced=before.decision == "ask")
        self._queue.release(call.ticket)
        record_run = getattr(self._policy, "record_run", None)
        if record_run is not None:  # a write under .git/ changes what is asked from now on
            record_run(call.name, call.args)
        await self._report.updated(call, None)
        if call.write_ticket is not None:
            await self._writes.wait_turn(call.write_ticket)
            if self._before_edit is not None:
                await self._before_edit(call.name, dict(call.args))
        result = await self._execute_or_escalate(call, tool, preview)
        if before.tool_input:  # the model is told its call was changed
            changed = ", ".join(before.tool_input)
            note = f"\n\n(A hook changed these arguments of the call before it ran: {changed}.)"
            result = dataclasses.replace(result, llm_content=result.llm_content + note)
        if self._should_truncate(call.name, tool):
            cut = await asyncio.to_thread(
                truncate_output,
                result.llm_content,
                output_dir=self._output_dir,
                session_id=self._env.session_id,
                tool_name=call.name,
                call_id=call.call_id,
                threshold=self._threshold,
            )
            result = dataclasses.replace(result, llm_content=cut.text)
        result = await self._hook_stages.after(call, result, context)
        content = result.display or (preview if call.name in EDIT_TOOLS else ())
        await self._report.completed(call, result, content)
        if result.switch_mode is not None and not result.is_error:
            await self._change_mode(result.switch_mode)
        if result.is_error:
            return {"error": result.llm_content}
        if result.media:  # moved out into inline data parts by ToolMediaProcessor
            return {"output": result.llm_content, MEDIA_KEY: result.media}
        return {"output": result.llm_content}

    async def _check_args(self, call: ToolCall, tool: GcliTool) -> None:
        problem = schema_error(tool.parameters_schema(), call.args)
        if problem is None:
            try:
                problem = tool.validate(call.args)
            except Exception as exc:  # a buggy validator must not end the turn
                logger.exception("validate() of %s raised", call.name)
                problem = str(exc)
        if problem is not None:
            await self._report.fail(call, f"Invalid arguments for {call.name}: {problem}")

    def _evaluate(self, call: ToolCall, tool: GcliTool, mode: str) -> PolicyDecision:
        return self._policy.evaluate(
            call.name,
            call.args,
            mode=mode,
            interactive=self._interactive,
            mcp_server=tool.mcp_server,
            read_only=tool.read_only,
        )

    async def _preview(self, call: ToolCall, tool: GcliTool) -> tuple[DisplayContent, ...]:
        try:
            return await tool.preview(call.args, self._env)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:  # the call cannot succeed: tell the model, do not ask the user
            reason = (DisplayText(text=str(exc)),)  # and show the user why
            call.display = call.display.model_copy(update={"content": reason})
            await self._report.fail(call, str(exc))
        except Exception as exc:  # the preview is optional; the call can still be judged without it
            logger.warning("preview of %s failed: %s", call.name, exc)
            return ()

    async def _execute_or_escalate(
        self, call: ToolCall, tool: GcliTool, preview: tuple[DisplayContent, ...]
    ) -> ToolResult:
        """Executes the call; when the sandbox stopped it and the mode lets the user be
        asked, runs it again outside the sandbox if the user says so."""
        result = await self._execute(call, tool, preview)
        if result.sandbox_denial is None or not self._may_escalate():
            return result
        if await self._approval.escalate(call, tool, result.sandbox_denial, result.llm_content):
            return await self._execute(call, tool, preview, outside_sandbox=True)
        return result

    def _may_escalate(self) -> bool:
        """Whether the user may be asked to run a sandboxed command outside: default and
        auto edit (plan mode stays read-only; YOLO asks nothing and stays confined)."""
        return self._interactive and self._mode_getter() in ("default", "autoEdit")

    async def _execute(
        self,
        call: ToolCall,
        tool: GcliTool,
        preview: tuple[DisplayContent, ...],
        *,
        outside_sandbox: bool = False,
    ) -> ToolResult:
        async def progress(content: tuple[DisplayContent, ...]) -> None:
            await self._report.updated(call, call.display.model_copy(update={"content": content}))

        commands = self._env.commands
        env = dataclasses.replace(
            self._env,
            on_progress=progress,
            preview=preview,
            reviewed=call.reviewed,
            extra={**self._env.extra, "call_id": call.call_id},
            commands=commands.unsandboxed() if outside_sandbox and commands else commands,
        )
        try:
            return await tool.execute(call.args, env)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool's failure is the model's information, not the turn's end
            logger.exception("tool %s (%s) raised", call.name, call.call_id)
            return ToolResult(
                llm_content=f"Error executing tool {call.name}: {exc}",
                is_error=True,
                error_type=type(exc).__name__,
            )

    # ------------------------------------------------------------ events

    def _display(self, tool: GcliTool | None, name: str, args: dict[str, Any]) -> ToolDisplay:
        if tool is None:
            return ToolDisplay(title=name)
        try:
            return tool.display(args, self._env)
        except Exception as exc:  # display() is cosmetic; never let it fail a call
            logger.warning("display() of %s failed: %s", name, exc)
            return ToolDisplay(title=name, kind=tool.kind)

    async def _notify(self, message: str | None) -> None:
        if message and self._notice_sink is not None:
            self._notice_sink(message)

    async def _change_mode(self, mode: str) -> None:
        if self._on_mode_change is None:
            return
        result = self._on_mode_change(mode)
        if inspect.isawaitable(result):
            await result
