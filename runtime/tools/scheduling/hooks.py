"""BeforeTool / AfterTool hook slots of the scheduler (Gemini CLI hooks, legacy §6).

`ToolHooks` is what the scheduler calls around every tool call; `NoToolHooks`
does nothing. `CommandToolHooks` runs the `hooks.BeforeTool` / `hooks.AfterTool`
command hooks of the settings through the session's `HookRunner`
(`runtime/services/hooks.py`: JSON on stdin, a JSON or plain-text answer, exit codes).
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
    "HookStopRequested",
    "NoToolHooks",
    "ToolHooks",
    "parse_hook_groups",
]


class HookStopRequested(RuntimeAgentError):
    """A hook answered `continue: false`: the agent must stop; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class BeforeToolOutcome:
    """What BeforeTool hooks decided about a call.

    `decision`: None or "allow" leave it to the policy; "ask" asks the user even
    when the policy allows; "block" refuses the call (`Tool execution blocked:
    <reason>`). `tool_input` replaces the args. `stop` ends the agent's turn
    (`stop_reason`). `system_message` is shown to the user.
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

    "block" replaces the result with an error (`reason`); `additional_context`
    is appended for the model as `<hook_context>…</hook_context>`; `stop` ends
    the turn; `system_message` is shown to the user.
    """

    decision: Literal["allow", "block"] | None = None
    reason: str | None = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None


class ToolHooks(Protocol):
    """The scheduler's hook slots: before the policy check, and after truncation."""

    async def before_tool(self, name: str, args: dict[str, Any]) -> BeforeToolOutcome: ...

    async def after_tool(
        self, name: str, args: dict[str, Any], result: ToolResult
    ) -> AfterToolOutcome: ...


class NoToolHooks:
    """No hooks configured: every call passes unchanged."""

    async def before_tool(self, name: str, args: dict[str, Any]) -> BeforeToolOutcome:
        return BeforeToolOutcome()

    async def after_tool(
        self, name: str, args: dict[str, Any], result: ToolResult
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

    async def before_tool(self, name: str, args: dict[str, Any]) -> BeforeToolOutcome:
        payload = {"tool_name": name, "tool_input": args}
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
            tool_input=inputs[-1] if inputs else None,
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=joined(a.get("stopReason") for a in answers),
            system_message=joined(a.get("systemMessage") for a in answers),
        )

    async def after_tool(
        self, name: str, args: dict[str, Any], result: ToolResult
    ) -> AfterToolOutcome:
        response: dict[str, Any] = {"llmContent": result.llm_content}
        if result.is_error:
            response["error"] = result.llm_content
        payload = {"tool_name": name, "tool_input": args, "tool_response": response}
        answers = await self._runner.run("AfterTool", payload, match=name)
        blocks = [a for a in answers if decision_of(a) == "block"]
        return AfterToolOutcome(
            decision="block" if blocks else None,
            reason=joined(a.get("reason") for a in blocks),
            additional_context=joined(specific(a, "additionalContext") for a in answers),
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=joined(a.get("stopReason") for a in answers),
            system_message=joined(a.get("systemMessage") for a in answers),
        )
