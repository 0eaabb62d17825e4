"""BeforeTool / AfterTool hook slots of the scheduler (Gemini CLI hooks).

`ToolHooks` is what the scheduler calls around every tool call; `NoToolHooks`
does nothing. `CommandToolHooks` runs the `hooks.BeforeTool` / `hooks.AfterTool`
command hooks of the settings through the session's `HookRunner`
(`runtime/services/hooks.py`: JSON on stdin, a JSON or plain-text answer, exit codes).

Input, as Gemini CLI's: `tool_name`, `tool_input`, `mcp_context` (MCP tools:
`server_name`, `tool_name`, and `command`/`args`/`cwd` or `url`),
`original_request_name` (a tail call: the name the model called) and, after the
call, `tool_response {llmContent, returnDisplay, error?: {message, type}}`. An
AfterTool answer's `hookSpecificOutput.tailToolCallRequest {name, args}` asks the
scheduler to run that call next, in place of this one's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from runtime.errors import RuntimeAgentError
from runtime.services.hooks import (
    DEFAULT_HOOK_TIMEOUT_MS,
    HookRunner,
    context_text,
    decision_of,
    joined,
    parse_hook_groups,
    specific,
)
from runtime.tools.base import ToolResult

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_MS",
    "AfterToolOutcome",
    "BeforeToolOutcome",
    "CommandToolHooks",
    "NO_CONTEXT",
    "HookStopRequested",
    "NoToolHooks",
    "TailCallRequest",
    "ToolHookContext",
    "ToolHooks",
    "parse_hook_groups",
]


class HookStopRequested(RuntimeAgentError):
    """A hook answered `continue: false`: the agent must stop; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ToolHookContext:
    """What a tool hook is told beside the name and args: the MCP server of an MCP
    tool (`mcp_context`) and, for a tail call, the name the model called."""

    mcp_context: Mapping[str, Any] | None = None
    original_request_name: str | None = None

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.mcp_context is not None:
            out["mcp_context"] = dict(self.mcp_context)
        if self.original_request_name is not None:
            out["original_request_name"] = self.original_request_name
        return out


@dataclass(frozen=True)
class TailCallRequest:
    """An AfterTool hook's `tailToolCallRequest`: the call to run next, whose result
    the model gets instead of the first call's."""

    name: str
    args: dict[str, Any]


def _tail_call(value: Any) -> TailCallRequest | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return None
    args = value.get("args")
    return TailCallRequest(value["name"], dict(args) if isinstance(args, Mapping) else {})


def _return_display(result: ToolResult) -> str:
    texts: list[str] = []
    for item in result.display:
        text = getattr(item, "text", None) or getattr(item, "ansi", None)
        if text:
            texts.append(text)
        elif getattr(item, "type", None) == "diff":
            texts.append(getattr(item, "after_text", ""))
    return "\n".join(texts) if texts else result.llm_content


@dataclass(frozen=True)
class BeforeToolOutcome:
    """What BeforeTool hooks decided about a call.

    `decision`: None or "allow" leave it to the policy; "ask" asks the user even
    when the policy allows; "block" refuses the call (`Tool execution blocked:
    <reason>`). `tool_input` is merged over the args (its keys win). `stop` ends
    the agent's turn (`stop_reason`). `system_message` is shown to the user.
    """

    decision: Literal["allow", "ask", "block"] | None = None
    reason: str | None = None
    tool_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None


@dataclass(frozen=True)
class AfterToolOutcome:
    """What AfterTool hooks made of a result.

    "block" replaces the result with an error (`Tool result blocked: <reason>`);
    `additional_context` is appended for the model as `<hook_context>…</hook_context>`;
    `stop` ends the turn; `system_message` is shown to the user; `tail_call` runs next.
    """

    decision: Literal["allow", "block"] | None = None
    reason: str | None = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None
    tail_call: TailCallRequest | None = None


NO_CONTEXT = ToolHookContext()


class ToolHooks(Protocol):
    """The scheduler's hook slots: before the policy check, and after truncation."""

    async def before_tool(
        self, name: str, args: dict[str, Any], context: ToolHookContext = NO_CONTEXT
    ) -> BeforeToolOutcome: ...

    async def after_tool(
        self,
        name: str,
        args: dict[str, Any],
        result: ToolResult,
        context: ToolHookContext = NO_CONTEXT,
    ) -> AfterToolOutcome: ...


class NoToolHooks:
    """No hooks configured: every call passes unchanged."""

    async def before_tool(
        self, name: str, args: dict[str, Any], context: ToolHookContext = NO_CONTEXT
    ) -> BeforeToolOutcome:
        return BeforeToolOutcome()

    async def after_tool(
        self,
        name: str,
        args: dict[str, Any],
        result: ToolResult,
        context: ToolHookContext = NO_CONTEXT,
    ) -> AfterToolOutcome:
        return AfterToolOutcome()


# ---------------------------------------------------------------- command hooks


class CommandToolHooks:
    """Runs the settings' BeforeTool / AfterTool command hooks for one session."""

    def __init__(
        self,
        settings_hooks: Mapping[str, Any] | None = None,
        *,
        runner: HookRunner | None = None,
        project_dir: Path | None = None,
        cwd: Path | None = None,
        session_id: str = "",
        transcript_path: str = "",
        disabled: Sequence[str] = (),
        env_allowlist: Sequence[str] = (),
    ) -> None:
        if runner is None:
            assert settings_hooks is not None and cwd is not None
            runner = HookRunner(
                settings_hooks,
                project_dir=project_dir or cwd,
                cwd=cwd,
                session_id=session_id,
                transcript_path=transcript_path,
                disabled=disabled,
                env_allowlist=env_allowlist,
            )
        self._runner = runner

    async def before_tool(
        self, name: str, args: dict[str, Any], context: ToolHookContext = NO_CONTEXT
    ) -> BeforeToolOutcome:
        payload = {"tool_name": name, "tool_input": args, **context.fields()}
        answers = await self._runner.run("BeforeTool", payload, match=name, chain_key="tool_input")
        blocks = [a for a in answers if decision_of(a) == "block"]
        inputs = [
            specific(a, "tool_input")
            for a in answers
            if isinstance(specific(a, "tool_input"), dict)
        ]
        decision: Literal["allow", "ask", "block"] | None = None
        if blocks:
            decision = "block"
        elif any(decision_of(a) == "ask" for a in answers):
            decision = "ask"
        return BeforeToolOutcome(
            decision=decision,
            reason=joined(a.get("reason") for a in (blocks or answers)),
            tool_input={k: v for i in inputs for k, v in i.items()} if inputs else None,
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=joined(a.get("stopReason") for a in answers),
            system_message=joined(a.get("systemMessage") for a in answers),
        )

    async def after_tool(
        self,
        name: str,
        args: dict[str, Any],
        result: ToolResult,
        context: ToolHookContext = NO_CONTEXT,
    ) -> AfterToolOutcome:
        response: dict[str, Any] = {
            "llmContent": result.llm_content,
            "returnDisplay": _return_display(result),
        }
        if result.is_error:
            response["error"] = {
                "message": result.llm_content,
                "type": result.error_type or "execution_failed",
            }
        payload = {
            "tool_name": name,
            "tool_input": args,
            "tool_response": response,
            **context.fields(),
        }
        answers = await self._runner.run("AfterTool", payload, match=name)
        blocks = [a for a in answers if decision_of(a) == "block"]
        tails = [t for a in answers if (t := _tail_call(specific(a, "tailToolCallRequest")))]
        return AfterToolOutcome(
            decision="block" if blocks else None,
            reason=joined(a.get("reason") for a in blocks),
            additional_context=joined(context_text(a) for a in answers),
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=joined(a.get("stopReason") for a in answers),
            system_message=joined(a.get("systemMessage") for a in answers),
            tail_call=tails[-1] if tails else None,
        )
