"""The MCP servers of one session (`McpServers`): started together without holding up
`session/new`, awaited by a prompt for at most `MCP_PROMPT_WAIT_S`, a server that
fails or stops told to the user once (`take_notices`), a stdio server that stops
restarted once after `RESTART_DELAY_S`. Each server is an `McpConnection` (`client`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from runtime.tools.mcp.client import McpConnection
from runtime.tools.mcp.config import (
    MCP_CALL_TIMEOUT_S,
    MCP_PROMPT_WAIT_S,
    MCP_START_TIMEOUT_S,
    McpServerConfig,
    McpStdioServer,
)

logger = logging.getLogger(__name__)

START_DELAY_S = 0.01
RESTART_DELAY_S = 1.0
"""The pause before a stdio server that stopped is started again (once)."""


class McpServers:
    """The MCP servers of one session.

    `start()` begins connecting every server at once and returns; `wait_ready()`
    returns when each is connected or has failed (at most the start-up timeout after
    `start()`, or sooner when given a bound; a cancelled waiter does not stop the
    connecting); `on_ready` is called as each server is ready. `take_notices()`
    returns, once, the messages for the user about servers that failed or stopped.
    With `oauth_dir`, remote servers may use OAuth (`oauth`), their tokens kept there.
    """

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        *,
        cwd: Path,
        start_timeout: float = MCP_START_TIMEOUT_S,
        call_timeout: float = MCP_CALL_TIMEOUT_S,
        prompt_wait: float = MCP_PROMPT_WAIT_S,
        oauth_dir: Path | None = None,
    ) -> None:
        self.prompt_wait = prompt_wait
        self._notices: list[str] = []
        self.connections: list[McpConnection] = []
        seen: set[str] = set()
        for config in configs:
            if config.name in seen:
                self._notices.append(
                    f"MCP server '{config.name}' is listed twice; only the first is used."
                )
                continue
            seen.add(config.name)
            self.connections.append(
                McpConnection(
                    config,
                    cwd=cwd,
                    start_timeout=start_timeout,
                    call_timeout=call_timeout,
                    on_lost=self._lost,
                    oauth_dir=oauth_dir,
                    on_notice=self._tell,
                )
            )
        self._starting: asyncio.Task[None] | None = None
        self._started_at = 0.0
        self._restarting: set[asyncio.Task[None]] = set()
        self.on_ready: Callable[[], None] | None = None
        self.on_notice: Callable[[str], None] | None = None
        """Shows a message at once (an authorization link); without it, it is queued."""

    def _tell(self, text: str) -> None:
        if self.on_notice is not None:
            self.on_notice(text)
        else:
            self._notices.append(text)

    def start(self) -> None:
        if self._starting is None:
            self._started_at = asyncio.get_running_loop().time()
            self._starting = asyncio.create_task(self._connect_all(), name="mcp-servers-start")

    async def wait_ready(self, within: float | None = None) -> None:
        """Returns when every server is connected or has failed, or (with `within`) once
        `within` seconds have passed since `start()`, whichever comes first."""
        self.start()
        assert self._starting is not None
        if within is None:
            await asyncio.wait({self._starting})
            return
        left = self._started_at + within - asyncio.get_running_loop().time()
        if left > 0:
            await asyncio.wait({self._starting}, timeout=left)

    async def wait_for_prompt(self) -> None:
        """What a prompt waits for: the servers, at most `prompt_wait` s after `start()`
        (a server still starting then is late: its tools join when it is ready)."""
        await self.wait_ready(self.prompt_wait)

    def ready_connections(self) -> list[McpConnection]:
        return [c for c in self.connections if c.state == "ready"]

    def starting_connections(self) -> list[McpConnection]:
        """Servers still starting (late for a prompt that did not wait for them)."""
        return [c for c in self.connections if c.state in ("new", "starting")]

    def take_notices(self) -> list[str]:
        notices, self._notices = self._notices, []
        return notices

    async def close(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        for task in list(self._restarting):
            task.cancel()
        results = await asyncio.gather(
            *(c.close() for c in self.connections), return_exceptions=True
        )
        for connection, result in zip(self.connections, results, strict=True):
            if isinstance(result, Exception):
                logger.warning("MCP server %s did not close cleanly: %s", connection.name, result)

    async def _connect_all(self) -> None:
        # Spawning server processes costs a few ms each: let the answer to session/new
        # (written by a callback scheduled as the handler returns) go out first.
        await asyncio.sleep(START_DELAY_S)
        await asyncio.gather(*(self._connect(c) for c in self.connections))

    async def _connect(self, connection: McpConnection) -> None:
        if await connection.connect():
            logger.info("MCP server %s: %d tool(s)", connection.name, len(connection.tools))
            if self.on_ready is not None:
                self.on_ready()  # its prompts become commands
            return
        logger.warning("MCP server %s is unavailable: %s", connection.name, connection.failure)
        verb = "started" if isinstance(connection.config, McpStdioServer) else "reached"
        self._notices.append(
            f"MCP server '{connection.name}' could not be {verb} ({connection.failure}); "
            "continuing without its tools."
        )

    def _lost(self, connection: McpConnection) -> None:
        """A connected server went away: a stdio server is restarted once (after a
        pause), and the user is told either way."""
        if isinstance(connection.config, McpStdioServer) and connection.restarts == 0:
            self._notices.append(
                f"MCP server '{connection.name}' stopped ({connection.failure}); restarting it."
            )
            task = asyncio.create_task(
                self._restart(connection), name=f"mcp-restart-{connection.name}"
            )
            self._restarting.add(task)
            task.add_done_callback(self._restarting.discard)
            return
        self._notices.append(
            f"MCP server '{connection.name}' stopped ({connection.failure}); "
            "its tools are unavailable for the rest of this session."
        )

    async def _restart(self, connection: McpConnection) -> None:
        connection.restarts += 1
        await asyncio.sleep(RESTART_DELAY_S)
        if await connection.connect():
            logger.info("MCP server %s restarted", connection.name)
            self._notices.append(f"MCP server '{connection.name}' was restarted.")
        else:
            self._notices.append(
                f"MCP server '{connection.name}' could not be restarted ({connection.failure}); "
                "its tools are unavailable for the rest of this session."
            )
