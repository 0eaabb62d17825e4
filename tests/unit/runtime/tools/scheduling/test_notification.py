"""The Notification hook's `message` and `details` for each kind of confirmation
(`runtime/tools/scheduling/notification.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.host import PermissionRequest
from runtime.protocol import DisplayDiff, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.scheduling.notification import permission_notification


class Tool(GcliTool):
    """A tool as the notification sees it: a name and, for an MCP tool, its server."""

    kind = "other"
    description = "a tool"

    def __init__(
        self, name: str, *, mcp_server: str | None = None, server_tool_name: str = ""
    ) -> None:
        self.name = name
        self.mcp_server = mcp_server
        self.server_tool_name = server_tool_name

    def mcp_context(self) -> dict[str, Any] | None:
        if self.mcp_server is None:
            return None
        return {"server_name": self.mcp_server, "tool_name": self.server_tool_name}

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=self.name)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        return ToolResult(llm_content="")


def ask(title: str, args: dict[str, Any], *content: Any) -> PermissionRequest:
    return PermissionRequest(
        tool_call_id="c1", title=title, kind="other", options=(), raw_input=args, content=content
    )


@pytest.mark.parametrize(
    ("tool", "request_", "details", "message"),
    [
        pytest.param(
            Tool("run_shell_command"),
            ask("cat a | grep x; FOO=1 cat b", {"command": "cat a | grep x; FOO=1 cat b"}),
            {"type": "exec", "command": "cat a | grep x; FOO=1 cat b", "rootCommand": "cat, grep"},
            "Tool cat a | grep x; FOO=1 cat b requires execution",
            id="exec-roots-once-each",
        ),
        pytest.param(
            Tool("write_file"),
            ask(
                "Write new.txt",
                {},
                DisplayDiff(path="/w/new.txt", before_text=None, after_text="hi\n"),
            ),
            {"type": "edit", "fileName": "new.txt", "originalContent": None, "newContent": "hi\n"},
            "Tool Write new.txt requires editing",
            id="edit-new-file",
        ),
        pytest.param(
            Tool("mcp_demo_echo", mcp_server="demo", server_tool_name="echo"),
            ask("demo: echo", {"text": "hi"}),
            {"type": "mcp", "serverName": "demo", "toolName": "echo", "toolDisplayName": "echo"},
            "Tool demo: echo requires MCP",
            id="mcp",
        ),
        pytest.param(
            Tool("exit_plan_mode"),
            ask("Leave plan mode", {}),
            {"type": "exit_plan_mode", "title": "Leave plan mode"},
            "Tool requires confirmation",
            id="exit-plan-mode",
        ),
    ],
)
def test_details_by_kind(
    tool: Tool, request_: PermissionRequest, details: dict[str, Any], message: str
) -> None:
    note = permission_notification(request_, tool)
    assert note["notification_type"] == "ToolPermission"
    assert note["message"] == message
    assert {k: note["details"].get(k) for k in details} == details
    assert note["details"]["title"] == request_.title
