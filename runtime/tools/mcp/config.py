"""MCP server configurations as the runtime knows them (no ACP types, no MCP SDK import).

The editor sends its MCP servers in `session/new`; `acp_server` converts each entry
to one of these and puts them in `SessionSpec.mcp_servers`. Importing this module is
cheap: the MCP SDK is loaded only when a session actually has servers.
"""

from __future__ import annotations

from dataclasses import dataclass

MCP_START_TIMEOUT_S = 10.0
"""How long a server may take to start, answer `initialize` and list its tools."""

MCP_CALL_TIMEOUT_S = 600.0
"""How long one `tools/call` may take (Gemini CLI's default MCP timeout, 10 minutes)."""


@dataclass(frozen=True)
class McpStdioServer:
    """A local server the agent starts: `command args...` with `env` added to the agent's
    environment (minus its API keys). It runs in the session's workspace directory."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class McpHttpServer:
    """A remote server over streamable HTTP, with extra request `headers`."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class McpSseServer:
    """A remote server over the older HTTP+SSE transport, with extra request `headers`."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()


McpServerConfig = McpStdioServer | McpHttpServer | McpSseServer
