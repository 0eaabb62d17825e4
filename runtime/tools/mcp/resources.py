"""The model's way to MCP resources: `list_mcp_resources` and `read_mcp_resource`
(Gemini CLI's tools of those names, read-only, allowed without asking). They reach the
resources of every connected server, whatever else it offers (a server of resources
only has no tools of its own), and are offered while some connected server has
resources. The user's way is `@<uri>` in a prompt (`toolset.mention_resources`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp import types as mcp_types

from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.mcp.client import McpConnection
from runtime.tools.mcp.servers import McpServers

LIST_TOOL = "list_mcp_resources"
READ_TOOL = "read_mcp_resource"


def _resources(servers: McpServers) -> list[tuple[McpConnection, mcp_types.Resource]]:
    return [(c, r) for c in servers.ready_connections() for r in c.resources]


class _ResourceTool(GcliTool):
    """A tool over the session's servers, with one string parameter."""

    parameter: tuple[str, str, bool]  # name, description, required
    read_only = True  # offered in plan mode beside the servers' read-only tools

    def __init__(self, servers: McpServers) -> None:
        self.servers = servers

    def parameters_schema(self) -> dict[str, Any]:
        name, description, required = self.parameter
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: {"type": "string", "description": description}},
        }
        return schema | ({"required": [name]} if required else {})


class ListMcpResourcesTool(_ResourceTool):
    name = LIST_TOOL
    kind = "search"
    description = "Lists all available resources exposed by connected MCP servers."
    parameter = ("serverName", "Optional: list only the resources of this server.", False)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        server = args.get("serverName")
        title = f"List MCP resources of {server}" if server else "List MCP resources"
        return ToolDisplay(title=title, kind=self.kind)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        server = args.get("serverName")
        found = [(c, r) for c, r in _resources(self.servers) if not server or c.name == server]
        if not found:
            text = f"No resources found for server: {server}" if server else "No MCP resources."
            return ToolResult(llm_content=text)
        lines = ["Available MCP resources (server: uri | name | description):"]
        for connection, resource in found:
            fields = [f"{connection.name}: {resource.uri}", resource.name]
            if resource.description:
                fields.append(resource.description)
            lines.append("- " + " | ".join(fields))
        return ToolResult(llm_content="\n".join(lines))


class ReadMcpResourceTool(_ResourceTool):
    name = READ_TOOL
    kind = "read"
    description = "Reads the content of a specified Model Context Protocol (MCP) resource."
    parameter = ("uri", "The URI of the MCP resource to read.", True)

    def validate(self, args: dict[str, Any]) -> str | None:
        uri = args.get("uri")
        return None if isinstance(uri, str) and uri else "'uri' must be a non-empty string"

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=f"Read MCP resource {args.get('uri', '')}", kind=self.kind)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        uri = str(args.get("uri"))
        owner = next((c for c, r in _resources(self.servers) if str(r.uri) == uri), None)
        if owner is None:
            return ToolResult(
                llm_content=f"Resource not found for URI: {uri} (list_mcp_resources lists them)",
                is_error=True,
                error_type="mcp_resource_not_found",
            )
        try:
            result = await owner.read_resource(uri)
        except Exception as exc:  # noqa: BLE001 - the model hears why, the turn goes on
            return ToolResult(
                llm_content=f"Reading {uri} from the MCP server '{owner.name}' failed: {exc}",
                is_error=True,
                error_type="mcp_error",
            )
        texts = []
        for item in result.contents:
            if isinstance(item, mcp_types.TextResourceContents):
                texts.append(item.text)
            else:
                mime = item.mime_type or "application/octet-stream"
                texts.append(f"[binary data ({mime}), not shown]")
        return ToolResult(llm_content="\n".join(texts) or f"The resource {uri} is empty.")


def resource_tools(servers: McpServers, taken: Iterable[str] = ()) -> list[GcliTool]:
    """Both tools while a connected server has resources (names already taken: none)."""
    used = set(taken)
    if not _resources(servers) or LIST_TOOL in used or READ_TOOL in used:
        return []
    return [ListMcpResourcesTool(servers), ReadMcpResourceTool(servers)]
