"""MCP server entries of `session/new` (ACP vocabulary) → the runtime's server configs."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp_server import schema

if TYPE_CHECKING:
    from runtime.tools.mcp.config import McpServerConfig

logger = logging.getLogger(__name__)


def mcp_servers(entries: list[Any]) -> tuple[McpServerConfig, ...]:
    """The session's MCP servers as runtime configs (stdio, http, sse; other kinds are skipped)."""
    from runtime.tools.mcp.config import McpHttpServer, McpSseServer, McpStdioServer

    configs: list[McpServerConfig] = []
    for entry in entries:
        if isinstance(entry, schema.McpServerStdio):
            env = tuple((v.name, v.value) for v in entry.env or [])
            configs.append(McpStdioServer(entry.name, entry.command, tuple(entry.args or []), env))
        elif isinstance(entry, schema.HttpMcpServer | schema.SseMcpServer):
            headers = tuple((h.name, h.value) for h in entry.headers or [])
            kind = McpHttpServer if isinstance(entry, schema.HttpMcpServer) else McpSseServer
            configs.append(kind(entry.name, entry.url, headers))
        else:
            what = type(entry).__name__
            logger.warning("MCP server %r of kind %s is not supported", entry.name, what)
    return tuple(configs)
