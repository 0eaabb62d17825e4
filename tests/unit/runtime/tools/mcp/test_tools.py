"""MCP tools without a server: names, schemas, results, wrapping, the session/new
conversion, and the scheduler's treatment of MCP tools."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from mcp import types as mcp_types

from acp_server import schema
from acp_server.capabilities import agent_capabilities
from acp_server.mcp import mcp_servers
from runtime.host import HeadlessHost
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.mcp.client import McpConnection
from runtime.tools.mcp.config import McpHttpServer, McpSseServer, McpStdioServer
from runtime.tools.mcp.toolset import (
    mcp_tool_name,
    parameters_schema,
    tool_kind,
    tool_result,
    valid_name,
    wrap_tools,
)
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.scheduling.scheduler import Scheduler


def tool(name: str, **fields: Any) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=name, input_schema=fields.pop("input_schema", {"type": "object"}), **fields
    )


def connection(name: str, *tools: mcp_types.Tool) -> McpConnection:
    conn = McpConnection(McpStdioServer(name, "unused"), cwd=Path("/"))
    conn.tools = tools
    return conn


# ---------------------------------------------------------------- names and schemas


def test_names_are_mcp_server_tool_made_valid_for_the_gemini_api() -> None:
    assert mcp_tool_name("github", "create_issue") == "mcp_github_create_issue"
    assert mcp_tool_name("Google Drive", "search/files") == "mcp_Google_Drive_search_files"
    long = mcp_tool_name("server", "x" * 80)
    assert len(long) == 63 and long.startswith("mcp_server_xxxx") and "___" in long
    assert valid_name("a.b-c_d") == "a.b-c_d"


def test_the_input_schema_becomes_an_object_schema_without_its_schema_keyword() -> None:
    given = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
             "properties": {"q": {"type": "string"}}, "required": ["q"]}  # fmt: skip
    assert parameters_schema(given) == {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]
    }  # fmt: skip
    assert "$schema" in given  # the tool's own schema is left alone
    assert parameters_schema(None) == {"type": "object", "properties": {}}
    assert parameters_schema({"properties": []}) == {"type": "object", "properties": {}}


def test_read_only_tools_are_of_kind_read() -> None:
    readonly = mcp_types.ToolAnnotations(read_only_hint=True)
    assert tool_kind(tool("a", annotations=readonly)) == "read"
    assert (
        tool_kind(tool("a", annotations=mcp_types.ToolAnnotations(read_only_hint=False))) == "other"
    )
    assert tool_kind(tool("a")) == "other"


def test_wrapping_names_tools_per_server_and_skips_names_already_taken() -> None:
    first = connection("a_b", tool("c", description="  Does C.  "))
    second = connection("a", tool("b_c"), tool("d"))
    wrapped = wrap_tools([first, second], taken={"mcp_a_d"})
    assert [t.name for t in wrapped] == ["mcp_a_b_c"]
    only = wrapped[0]
    assert (only.mcp_server, only.server_tool_name, only.description) == ("a_b", "c", "Does C.")
    nameless = wrap_tools([connection("s", tool("t"))])[0]
    assert nameless.description == "The 't' tool of the 's' MCP server."


# ---------------------------------------------------------------- results


def text(value: str) -> mcp_types.TextContent:
    return mcp_types.TextContent(type="text", text=value)


def test_text_parts_are_joined_and_other_content_is_summarized() -> None:
    data = base64.b64encode(b"12345678").decode()
    result = mcp_types.CallToolResult(
        content=[
            text("first"),
            mcp_types.ImageContent(type="image", data=data, mime_type="image/png"),
            mcp_types.AudioContent(type="audio", data=data, mime_type="audio/wav"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="resource text"),
            ),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.BlobResourceContents(uri="file:///b.bin", blob=data),
            ),
            mcp_types.ResourceLink(type="resource_link", name="doc", uri="https://example.com/doc"),
        ]
    )
    out = tool_result("t", result)
    assert not out.is_error
    assert out.llm_content.splitlines() == [
        "first",
        "[Tool 't' returned image data (image/png, 9 bytes), attached]",
        "[Tool 't' returned audio data (audio/wav, 9 bytes), attached]",
        "resource text",
        "[Tool 't' returned the resource file:///b.bin (application/octet-stream, 9 bytes), "
        "not shown]",
        "Resource link: doc at https://example.com/doc",
    ]
    assert out.display[0].text == out.llm_content  # type: ignore[union-attr]


def test_is_error_makes_a_failed_result_and_structured_content_is_kept() -> None:
    failed = tool_result("t", mcp_types.CallToolResult(content=[text("bad input")], is_error=True))
    assert failed.is_error and failed.llm_content == "MCP tool 't' reported an error: bad input"
    assert failed.error_type == "mcp_tool_error"
    structured = tool_result("t", mcp_types.CallToolResult(content=[], structured_content={"n": 1}))
    assert structured.llm_content == '{"n": 1}' and structured.raw_output == {
        "structuredContent": {"n": 1}
    }
    empty = tool_result("t", mcp_types.CallToolResult(content=[]))
    assert empty.llm_content == "MCP tool 't' returned no content." and empty.display == ()
    huge = tool_result("t", mcp_types.CallToolResult(content=[text("x" * 30_000)]))
    assert len(huge.llm_content) == 30_000 and len(huge.display[0].text) < 21_000  # type: ignore[union-attr]


async def test_a_call_to_a_server_that_is_not_connected_is_a_failed_result(tmp_path: Path) -> None:
    [wrapped] = wrap_tools([connection("s", tool("t"))])
    env = ToolEnv(roots=(tmp_path,), host=HeadlessHost(), session_id="s", temp_dir=tmp_path)
    result = await wrapped.execute({}, env)
    assert result.is_error and result.error_type == "mcp_server_unavailable"
    assert (
        result.llm_content
        == "The MCP server 's' is not available (not connected); 't' cannot be called."
    )


# ---------------------------------------------------------------- the scheduler


class PathTool(GcliTool):
    """A tool with a `path` argument, built-in or (with `mcp_server`) from an MCP server."""

    kind = "other"
    description = "takes a path"

    def __init__(self, name: str, mcp_server: str | None) -> None:
        self.name = name
        if mcp_server is not None:
            self.mcp_server = mcp_server

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"path": {"type": "string"}}}

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=self.name)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        return ToolResult(llm_content=f"used {args['path']}")


async def test_mcp_tools_are_added_later_and_their_paths_are_not_workspace_checked(
    tmp_path: Path,
) -> None:
    builtin = PathTool("builtin", None)
    scheduler = Scheduler(
        tools={"builtin": builtin},
        env=ToolEnv(roots=(tmp_path,), host=HeadlessHost(), session_id="s", temp_dir=tmp_path),
        policy=PolicyEngine(workspace_root=tmp_path),
        mode_getter=lambda: "yolo",
    )
    scheduler.add_tools([PathTool("mcp_s_t", "s"), PathTool("builtin", "s")])
    assert scheduler.tools["builtin"] is builtin  # a taken name keeps its tool
    outside = await scheduler.schedule("c1", "builtin", {"path": "/etc/hosts"})
    assert "outside the workspace" in outside["error"]
    assert await scheduler.schedule("c2", "mcp_s_t", {"path": "/etc/hosts"}) == {
        "output": "used /etc/hosts"
    }


def test_mcp_tools_ask_by_default_and_follow_gemini_cli_style_rules(tmp_path: Path) -> None:
    policy = PolicyEngine(workspace_root=tmp_path)
    ask = policy.evaluate("mcp_s_t", {}, mode="default", mcp_server="s")
    assert ask.decision == "ask_user"
    assert policy.evaluate("mcp_s_t", {}, mode="yolo", mcp_server="s").decision == "allow"
    assert policy.evaluate("mcp_s_t", {}, mode="plan", mcp_server="s").decision == "deny"
    policies = tmp_path / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / "p.toml").write_text(
        '[[rule]]\nmcpName = "s"\ndecision = "allow"\npriority = 1\n'
        '[[rule]]\ntoolName = "mcp_*_danger"\ndecision = "deny"\npriority = 2\n',
        encoding="utf-8",
    )
    policy.reload()
    assert policy.evaluate("mcp_s_t", {}, mode="default", mcp_server="s").decision == "allow"
    assert policy.evaluate("mcp_s_danger", {}, mode="default", mcp_server="s").decision == "deny"
    assert policy.evaluate("mcp_x_t", {}, mode="default", mcp_server="x").decision == "ask_user"


# ---------------------------------------------------------------- session/new


def test_session_new_entries_become_runtime_configs() -> None:
    request = schema.NewSessionRequest.model_validate(
        {
            "cwd": "/w",
            "mcpServers": [
                {"name": "local", "command": "/bin/srv", "args": ["-v"],
                 "env": [{"name": "TOKEN", "value": "t"}]},
                {"type": "http", "name": "web", "url": "https://h/mcp",
                 "headers": [{"name": "Authorization", "value": "Bearer x"}]},
                {"type": "sse", "name": "events", "url": "https://h/sse", "headers": []},
            ],
        }
    )  # fmt: skip
    assert mcp_servers(request.mcp_servers) == (
        McpStdioServer("local", "/bin/srv", ("-v",), (("TOKEN", "t"),)),
        McpHttpServer("web", "https://h/mcp", (("Authorization", "Bearer x"),)),
        McpSseServer("events", "https://h/sse", ()),
    )
    assert agent_capabilities()["mcpCapabilities"] == {"http": True, "sse": True}


def test_settings_servers_take_their_transport_from_the_entry(tmp_path: Path) -> None:
    from runtime.tools.mcp.config import servers_from_settings

    settings = {
        "mcpServers": {
            "local": {"command": "run-it", "args": ["a"], "cwd": "sub"},
            "streamable": {"httpUrl": "https://h/mcp"},
            "typed": {"url": "https://h/mcp", "type": "http", "headers": {"X-A": "1"}},
            "events": {"url": "https://h/sse"},
            "events-typed": {"url": "https://h/sse", "type": "sse"},
            "nothing": {"trust": True},
        }
    }
    servers = {c.name: c for c in servers_from_settings(settings, tmp_path)}
    assert {name: type(c) for name, c in servers.items()} == {
        "local": McpStdioServer,
        "streamable": McpHttpServer,
        "typed": McpHttpServer,
        "events": McpHttpServer,  # no `type`: streamable HTTP first, then SSE
        "events-typed": McpSseServer,
    }
    fallback = {n: getattr(c, "sse_fallback", None) for n, c in servers.items()}
    assert fallback == {
        "local": None,
        "streamable": False,
        "typed": False,
        "events": True,
        "events-typed": None,
    }
