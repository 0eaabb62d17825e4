"""Plan mode's tools and helpers (design C3: plan mode).

In plan mode the model explores read-only and writes its plan as a Markdown file in
the session's plans folder (the one write plan mode allows); each such write is
also sent as the editor's plan (`plan_entries_from_markdown`: the checklist or
numbered steps). `exit_plan_mode(plan_path)` shows the plan to the user in a
permission request of kind `switch_mode` and, on approval, switches the session to
Auto edit or Default (`ToolResult.switch_mode`; the scheduler applies it and the
editor gets the mode and config updates). "Keep planning" leaves plan mode on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runtime.host import PermissionOption, PermissionRequest
from runtime.protocol import DisplayText, ToolDisplay, ToolLocation
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, required_str
from runtime.tools.builtin.results import error_result

EXIT_PLAN_MODE = "exit_plan_mode"
_STEP = re.compile(r"^\s*(?:[-*+]\s+(\[( |x|X|~)\]\s+)?|\d+[.)]\s+)(.+?)\s*$")

OPTIONS = (
    PermissionOption(option_id="autoEdit", name="Yes, and auto-accept edits", kind="allow_always"),
    PermissionOption(option_id="default", name="Yes, and approve each edit", kind="allow_once"),
    PermissionOption(option_id="plan", name="No, keep planning", kind="reject_once"),
)


def plans_dir(env: ToolEnv) -> Path:
    return env.temp_dir / "plans"


def plan_entries_from_markdown(text: str) -> list[dict[str, str]]:
    """The plan's steps as ACP plan entries: list items (checked ones completed)."""
    entries = []
    for line in text.splitlines():
        match = _STEP.match(line)
        if match is None:
            continue
        mark = (match.group(2) or " ").lower()
        status = {"x": "completed", "~": "in_progress"}.get(mark, "pending")
        entries.append({"content": match.group(3), "status": status, "priority": "medium"})
    return entries


def plan_id(path: Path) -> str:
    """The stable id of a plan file's plan (its file name), as the editor's plan operations
    name it; the todo list is `TODOS_PLAN_ID`."""
    return f"plan:{path.name}"


def plan_fields(path: Path, text: str) -> dict[str, Any]:
    """A plan file's plan as `ToolResult` fields: its entries, its id, its Markdown."""
    return {
        "plan": plan_entries_from_markdown(text),
        "plan_id": plan_id(path),
        "plan_markdown": text,
    }


def is_plan_file(path: Path, env: ToolEnv) -> bool:
    try:
        return path.suffix == ".md" and path.resolve().parent == plans_dir(env).resolve()
    except OSError:
        return False


class ExitPlanModeTool(GcliTool):
    name = EXIT_PLAN_MODE
    kind = "switch_mode"
    description = (
        "Ask the user to approve the plan and leave plan mode. Call it once the plan is "
        "written as a Markdown file in the plans folder; give that file's path."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "plan_path": {
                    "type": "string",
                    "description": "The path of the plan's Markdown file in the plans folder.",
                }
            },
            "required": ["plan_path"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        try:
            required_str(args, "plan_path")
        except ArgError as exc:
            return str(exc)
        return None

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = args.get("plan_path")
        locations = (ToolLocation(path=str(raw)),) if isinstance(raw, str) else ()
        return ToolDisplay(
            title="Ready to start? Review the plan", kind="switch_mode", locations=locations
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        raw = Path(required_str(args, "plan_path"))
        path = raw if raw.is_absolute() else plans_dir(env) / raw.name
        if not is_plan_file(path, env):
            return error_result(
                f"The plan must be a Markdown file in {plans_dir(env)}; got {raw}.",
                "invalid_plan_path",
            )
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            return error_result(
                f"Cannot read the plan {path}: {exc.strerror or exc}", "plan_unreadable"
            )
        request = PermissionRequest(
            tool_call_id=str(env.extra.get("call_id") or f"exit-plan-{path.name}"),
            title="Ready to start? Review the plan",
            kind="switch_mode",
            options=OPTIONS,
            locations=(ToolLocation(path=str(path)),),
            raw_input={"plan_path": str(path)},
            content=(DisplayText(text=text),),
            tool_name=EXIT_PLAN_MODE,
        )
        outcome = await env.host.request_permission(request)
        choice = outcome.option_id
        if choice in ("autoEdit", "default"):
            label = "Auto edit" if choice == "autoEdit" else "Default"
            return ToolResult(
                llm_content=f"The user approved the plan; the session is now in {label} mode. "
                "Carry out the plan step by step.",
                display=(DisplayText(text=f"Plan approved: {label} mode."),),
                switch_mode=choice,
                **plan_fields(path, text),
            )
        if choice is None:
            return error_result("The plan review was cancelled.", "cancelled")
        return ToolResult(
            llm_content="The user wants to keep planning: stay in plan mode, ask what to "
            "change and update the plan file.",
            display=(DisplayText(text="Still planning."),),
            **plan_fields(path, text),
        )
