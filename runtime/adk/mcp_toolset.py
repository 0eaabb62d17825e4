"""The ADK face of a session's MCP servers (`GcliMcpToolset`), over the scheduler
tools of `runtime/tools/mcp/toolset.py` (`McpSessionTools`).

ADK sees MCP tools only through this `BaseToolset`: each offered tool is a
`GcliAdkTool`, so every call goes through the session's scheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset

from runtime.adk.tools import GcliAdkTool, to_adk_tools
from runtime.tools.mcp.servers import McpServers
from runtime.tools.mcp.toolset import McpSessionTools

if TYPE_CHECKING:
    from runtime.tools.scheduling.scheduler import Scheduler


class GcliMcpToolset(BaseToolset):
    """The session's MCP tools as ADK tools (see `McpSessionTools` for what is offered
    when). The ADK tools are made again only when the MCP tools were rewrapped.
    `close` does nothing: the session closes the servers.
    """

    def __init__(
        self,
        servers: McpServers,
        *,
        scheduler: Callable[[], Scheduler],
        notice: Callable[[str], None],
        mode: Callable[[], str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> None:
        super().__init__()
        self.tools = McpSessionTools(
            servers, scheduler=scheduler, notice=notice, mode=mode, allowed=allowed
        )
        self._scheduler = scheduler
        self._adk_tools: dict[str, GcliAdkTool] = {}
        self._generation = 0
        self._use_invocation_cache = False  # a server's list may change within a turn

    @property
    def servers(self) -> McpServers:
        return self.tools.servers

    def flush_notices(self) -> None:
        """Shows the user what went wrong with servers since the last time (each once)."""
        self.tools.flush_notices()

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        offered = await self.tools.offered()
        if self._generation != self.tools.generation:
            wrapped = to_adk_tools(
                self.tools.wrapped, scheduler_provider=lambda _ctx: self._scheduler()
            )
            self._adk_tools = {tool.name: tool for tool in wrapped}
            self._generation = self.tools.generation
        return [self._adk_tools[tool.name] for tool in offered]

    async def close(self) -> None:
        return None
