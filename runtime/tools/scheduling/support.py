"""The scheduler's contracts (event sink, policy checker, call outcome), its
per-call reporting, and the checks it makes before any I/O (argument shape,
workspace paths)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from runtime.protocol import DisplayContent, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.engine import PolicyDecision
from runtime.tools.policy.rules import Decision, PolicyRule
from runtime.tools.policy.shell_safety import SHELL_TOOL_NAME

CANCELLED_MESSAGE = "The user cancelled this tool call."
CallStatus = Literal["completed", "failed", "cancelled"]


@dataclass(frozen=True)
class ToolCallOutcome:
    """How a call ended. `display` is the final display (the diff of an edit, the
    output of a command); `llm_content` is what the model got; `raw_output` and
    `plan` come from the tool's result."""

    status: CallStatus
    display: ToolDisplay
    llm_content: str
    is_error: bool
    raw_output: dict[str, Any] | None = None
    plan: list[dict[str, str]] | None = None


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


class PolicyChecker(Protocol):
    """The part of `PolicyEngine` the scheduler uses."""

    def evaluate(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        mode: str,
        interactive: bool = True,
        mcp_server: str | None = None,
    ) -> PolicyDecision: ...

    def add_session_rule(
        self, tool_name: str, args: dict[str, Any], *, mode: str, decision: Decision = "allow"
    ) -> PolicyRule: ...

    def save_rule(self, tool_name: str, args: dict[str, Any], *, mode: str) -> PolicyRule: ...


ModeChangeCallback = Callable[[str], Awaitable[None] | None]
CancelCallback = Callable[[], Awaitable[None] | None]


def default_should_truncate(name: str, tool: GcliTool) -> bool:
    """Shell output and MCP results are cut when too large (other tools page themselves)."""
    return (
        name == SHELL_TOOL_NAME
        or name.startswith("mcp_")
        or getattr(tool, "mcp_server", None) is not None
    )


class CallEnded(Exception):
    """Scheduler internal: the call ended early; `response` is its function response."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__("call ended")
        self.response = response


@dataclass
class ToolCall:
    """Scheduler internal: one call in flight and what has been reported about it."""

    call_id: str
    name: str
    args: dict[str, Any]
    ticket: int
    display: ToolDisplay
    requested: bool = False
    finished: bool = False


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
        )
        await self._finished(call, outcome)

    async def fail(self, call: ToolCall, message: str, *, end: bool = True) -> dict[str, Any]:
        """Reports the call as failed with `message`, then raises CallEnded (with
        `end=False`, returns the function response instead)."""
        await self.requested(call)
        outcome = ToolCallOutcome(
            status="failed", display=call.display, llm_content=message, is_error=True
        )
        await self._finished(call, outcome)
        if end:
            raise CallEnded({"error": message})
        return {"error": message}

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


# Arguments that name a file or directory, in Gemini CLI's tools.
PATH_ARGUMENTS: tuple[str, ...] = ("file_path", "dir_path", "path")

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: str | list[str]) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        types = _JSON_TYPES.get(name)
        if types is None:
            return True  # a type we do not check
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def schema_error(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The first problem of `args` against a tool's top-level JSON schema, or None.

    Checks required properties, the JSON types of given properties and, when the
    schema says `additionalProperties: false`, unknown properties.
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    missing = [name for name in schema.get("required") or [] if name not in args]
    if missing:
        return f"missing required parameter(s): {', '.join(missing)}"
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"unknown parameter {name!r}"
            continue
        expected = spec.get("type") if isinstance(spec, dict) else None
        if expected is not None and not _type_ok(value, expected):
            return f"parameter {name!r} must be of type {expected}"
    return None


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def outside_workspace(args: dict[str, Any], env: ToolEnv) -> str | None:
    """A message when a path argument resolves outside every workspace root (and the
    project temp dir), else None. Relative paths are taken from the first root."""
    allowed = [root.resolve() for root in env.roots] + [env.temp_dir.resolve()]
    for key in PATH_ARGUMENTS:
        value = args.get(key)
        if not isinstance(value, str) or not value:
            continue
        candidate = Path(value).expanduser()
        resolved = (candidate if candidate.is_absolute() else env.cwd / candidate).resolve()
        if not any(_within(resolved, base) for base in allowed):
            roots = ", ".join(str(r) for r in env.roots)
            return f"Path {value} is outside the workspace ({roots}); only its files can be used."
    return None
