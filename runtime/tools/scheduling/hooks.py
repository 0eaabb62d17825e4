"""BeforeTool / AfterTool hook slots of the scheduler (Gemini CLI hooks, legacy §6).

`ToolHooks` is what the scheduler calls around every tool call; `NoToolHooks`
does nothing. `CommandToolHooks` runs the `hooks.BeforeTool` / `hooks.AfterTool`
command hooks of the settings: JSON on stdin, a JSON (or plain text) answer on
stdout, exit codes 0 (allow), 1 (allow with a warning), 2 and others (deny).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from runtime.errors import RuntimeAgentError
from runtime.protocol import now_iso
from runtime.services.secrets import child_environment
from runtime.tools.base import ToolResult

logger = logging.getLogger(__name__)

DEFAULT_HOOK_TIMEOUT_MS = 60_000


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


@dataclass(frozen=True)
class CommandHook:
    command: str
    name: str | None = None
    timeout_ms: int = DEFAULT_HOOK_TIMEOUT_MS
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HookGroup:
    """Hooks sharing a matcher (a regex on the tool name; "" and "*" match all)."""

    matcher: str
    hooks: tuple[CommandHook, ...]
    sequential: bool = False

    def applies_to(self, tool_name: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        try:
            return re.search(self.matcher, tool_name) is not None
        except re.error:
            return self.matcher == tool_name


@dataclass(frozen=True)
class HookAnswer:
    """One hook's parsed output; `failed` when it timed out or could not run (no decision)."""

    output: dict[str, Any]
    failed: bool = False


def parse_hook_groups(
    settings_hooks: Mapping[str, Any], event: str, disabled: Sequence[str] = ()
) -> tuple[HookGroup, ...]:
    """The command hooks for `event` from the settings' `hooks` object (bad entries skipped)."""
    groups: list[HookGroup] = []
    for entry in settings_hooks.get(event, []) or []:
        if not isinstance(entry, Mapping):
            logger.warning("hooks.%s: ignoring a non-object entry", event)
            continue
        hooks = []
        for raw in entry.get("hooks", []) or []:
            if (
                not isinstance(raw, Mapping)
                or raw.get("type", "command") != "command"
                or not raw.get("command")
            ):
                logger.warning("hooks.%s: ignoring hook %r (only command hooks run)", event, raw)
                continue
            if raw.get("name") in disabled or raw.get("command") in disabled:
                continue
            env = raw.get("env") or {}
            hooks.append(
                CommandHook(
                    command=str(raw["command"]),
                    name=raw.get("name"),
                    timeout_ms=int(raw.get("timeout", DEFAULT_HOOK_TIMEOUT_MS)),
                    env={str(k): str(v) for k, v in env.items()}
                    if isinstance(env, Mapping)
                    else {},
                )
            )
        if hooks:
            groups.append(
                HookGroup(
                    str(entry.get("matcher", "") or ""), tuple(hooks), bool(entry.get("sequential"))
                )
            )
    return tuple(groups)


def _parse_output(stdout: str, stderr: str, exit_code: int) -> dict[str, Any]:
    text = stdout.strip() or stderr.strip()
    try:
        parsed = json.loads(text) if text else None
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        if exit_code not in (0, 1) and not parsed.get("decision"):
            parsed = {**parsed, "decision": "deny", "reason": parsed.get("reason") or text}
        return parsed
    if exit_code == 0:
        return {"systemMessage": text} if text else {}
    if exit_code == 1:
        logger.warning("hook exited with 1: %s", text)
        return {"systemMessage": text} if text else {}
    return {"decision": "deny", "reason": text or f"hook exited with code {exit_code}"}


class CommandToolHooks:
    """Runs the settings' BeforeTool / AfterTool command hooks for one session."""

    def __init__(
        self,
        settings_hooks: Mapping[str, Any],
        *,
        project_dir: Path,
        cwd: Path,
        session_id: str,
        transcript_path: str = "",
        disabled: Sequence[str] = (),
        env_allowlist: Sequence[str] = (),
    ) -> None:
        self._env_allowlist = tuple(env_allowlist)
        self._before = parse_hook_groups(settings_hooks, "BeforeTool", disabled)
        self._after = parse_hook_groups(settings_hooks, "AfterTool", disabled)
        self._project_dir = project_dir
        self._cwd = cwd
        self._session_id = session_id
        self._transcript_path = transcript_path

    async def before_tool(self, name: str, args: dict[str, Any]) -> BeforeToolOutcome:
        payload = {"tool_name": name, "tool_input": args}
        answers = await self._run_event("BeforeTool", self._before, name, payload, chain_input=True)
        blocks = [a for a in answers if _decision(a) == "block"]
        inputs = [
            _specific(a, "tool_input")
            for a in answers
            if isinstance(_specific(a, "tool_input"), dict)
        ]
        decision: Literal["allow", "ask", "block"] | None = None
        if blocks:
            decision = "block"
        elif any(_decision(a) == "ask" for a in answers):
            decision = "ask"
        return BeforeToolOutcome(
            decision=decision,
            reason=_joined(a.get("reason") for a in (blocks or answers)),
            tool_input=inputs[-1] if inputs else None,
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=_joined(a.get("stopReason") for a in answers),
            system_message=_joined(a.get("systemMessage") for a in answers),
        )

    async def after_tool(
        self, name: str, args: dict[str, Any], result: ToolResult
    ) -> AfterToolOutcome:
        response: dict[str, Any] = {"llmContent": result.llm_content}
        if result.is_error:
            response["error"] = result.llm_content
        payload = {"tool_name": name, "tool_input": args, "tool_response": response}
        answers = await self._run_event("AfterTool", self._after, name, payload, chain_input=False)
        blocks = [a for a in answers if _decision(a) == "block"]
        return AfterToolOutcome(
            decision="block" if blocks else None,
            reason=_joined(a.get("reason") for a in blocks),
            additional_context=_joined(_specific(a, "additionalContext") for a in answers),
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=_joined(a.get("stopReason") for a in answers),
            system_message=_joined(a.get("systemMessage") for a in answers),
        )

    async def _run_event(
        self,
        event: str,
        groups: tuple[HookGroup, ...],
        tool_name: str,
        payload: dict[str, Any],
        *,
        chain_input: bool,
    ) -> list[dict[str, Any]]:
        selected = [g for g in groups if g.applies_to(tool_name)]
        hooks = [h for g in selected for h in g.hooks]
        if not hooks:
            return []
        base = {
            "session_id": self._session_id,
            "transcript_path": self._transcript_path,
            "cwd": str(self._cwd),
            "hook_event_name": event,
            "timestamp": now_iso(),
        }
        if any(g.sequential for g in selected):
            answers: list[HookAnswer] = []
            current = dict(payload)
            for hook in hooks:
                answer = await self._run_one(hook, {**base, **current})
                answers.append(answer)
                new_input = _specific(answer.output, "tool_input")
                if chain_input and isinstance(new_input, dict):
                    current["tool_input"] = new_input
        else:
            answers = list(
                await asyncio.gather(*(self._run_one(h, {**base, **payload}) for h in hooks))
            )
        return [a.output for a in answers if not a.failed]

    async def _run_one(self, hook: CommandHook, data: dict[str, Any]) -> HookAnswer:
        env = {
            **child_environment(self._env_allowlist),
            "GEMINI_PROJECT_DIR": str(self._project_dir),
            "GEMINI_CWD": str(self._cwd),
            "GEMINI_SESSION_ID": self._session_id,
            **hook.env,
        }
        try:
            process = await asyncio.create_subprocess_shell(
                hook.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._cwd,
                env=env,
                start_new_session=True,  # own process group: a timeout kills its children too
            )
        except OSError as exc:
            logger.warning("hook %s could not start: %s", hook.name or hook.command, exc)
            return HookAnswer({}, failed=True)
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(json.dumps(data).encode()), timeout=hook.timeout_ms / 1000
            )
        except TimeoutError:
            logger.warning(
                "hook %s timed out after %d ms", hook.name or hook.command, hook.timeout_ms
            )
            await _kill(process)
            return HookAnswer({}, failed=True)
        except asyncio.CancelledError:
            await _kill(process)
            raise
        code = process.returncode if process.returncode is not None else -1
        return HookAnswer(
            _parse_output(stdout.decode(errors="replace"), stderr.decode(errors="replace"), code)
        )


async def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        try:
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        except ProcessLookupError:
            logger.debug("hook process %d already gone", process.pid)
        await process.wait()


def _decision(output: Mapping[str, Any]) -> str | None:
    match output.get("decision"):
        case "block" | "deny":
            return "block"
        case "ask":
            return "ask"
        case "approve" | "allow":
            return "allow"
        case _:
            return None


def _specific(output: Mapping[str, Any], key: str) -> Any:
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, Mapping) and key in specific:
        return specific[key]
    return output.get(key)


def _joined(values: Any) -> str | None:
    texts = [str(v) for v in values if v]
    return "\n".join(texts) if texts else None
