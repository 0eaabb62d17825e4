"""The Notification hook's input for a permission request (Gemini CLI's
`ToolPermission` notification): `message` and `details`, by kind of confirmation.

- a shell command: `{type: "exec", title, command, rootCommand}` (`rootCommand`: the
  command each part of the line runs, joined with ", ");
- an edit: `{type: "edit", title, fileName, filePath, fileDiff, originalContent,
  newContent, isModifying}` (from the call's diff preview);
- an MCP tool: `{type: "mcp", title, serverName, toolName, toolDisplayName}`;
- web_fetch: `{type: "info", title, prompt, urls}` (its `notification_details`);
- exit_plan_mode: `{type: "exit_plan_mode", title}`; any other tool: `{type: "info", title}`.
"""

from __future__ import annotations

import difflib
from pathlib import PurePath
from typing import Any

from runtime.host import PermissionRequest
from runtime.protocol import DisplayDiff
from runtime.tools.base import GcliTool

_VERBS = {"edit": "editing", "exec": "execution", "mcp": "MCP", "info": "information"}


def _kind(request: PermissionRequest, tool: GcliTool) -> str:
    if tool.mcp_server is not None:
        return "mcp"
    if tool.name == "run_shell_command":
        return "exec"
    if tool.name == "exit_plan_mode":
        return "exit_plan_mode"
    if any(isinstance(c, DisplayDiff) for c in request.content):
        return "edit"
    return "info"


def _root_commands(command: str) -> str:
    from runtime.tools.policy.shell_safety import root_command, split_commands

    roots: list[str] = []
    for part in split_commands(command):
        root = root_command(part.text)
        if root and root not in roots:
            roots.append(root)
    return ", ".join(roots)


def _edit_details(request: PermissionRequest) -> dict[str, Any]:
    diff = next(c for c in request.content if isinstance(c, DisplayDiff))
    before = diff.before_text or ""
    name = PurePath(diff.path).name
    patch = difflib.unified_diff(
        before.splitlines(keepends=True),
        diff.after_text.splitlines(keepends=True),
        fromfile=f"{name}\tCurrent",
        tofile=f"{name}\tProposed",
    )
    return {
        "fileName": name,
        "filePath": diff.path,
        "fileDiff": "".join(patch),
        "originalContent": diff.before_text,
        "newContent": diff.after_text,
        "isModifying": False,
    }


def permission_notification(request: PermissionRequest, tool: GcliTool) -> dict[str, Any]:
    """The Notification hook's event fields for `request` (about a call of `tool`)."""
    kind = _kind(request, tool)
    args = request.raw_input or {}
    details: dict[str, Any] = {"type": kind, "title": request.title}
    if kind == "exec":
        command = str(args.get("command", ""))
        details |= {"command": command, "rootCommand": _root_commands(command)}
    elif kind == "edit":
        details |= _edit_details(request)
    elif kind == "mcp":
        server_tool = (tool.mcp_context() or {}).get("tool_name", tool.name)
        details |= {
            "serverName": tool.mcp_server,
            "toolName": server_tool,
            "toolDisplayName": server_tool,
        }
    else:  # web_fetch: its prompt and URLs (`GcliTool.notification_details`)
        details |= tool.notification_details(args)
    verb = _VERBS.get(kind)
    message = f"Tool {request.title} requires {verb}" if verb else "Tool requires confirmation"
    return {"notification_type": "ToolPermission", "message": message, "details": details}
