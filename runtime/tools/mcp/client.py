"""Connections to a session's MCP servers: start, list tools, call, stop; failures reported.

Built on the `mcp` SDK's `ClientSession` and its HTTP transports, with our own stdio
transport (`mcp.stdio`). ADK's `McpToolset` / `MCPSessionManager` are not used:
their tools run through ADK's own tool execution (our calls must go through the
scheduler: policy, approvals, hooks, truncation); their stdio sessions use the
connect timeout as the read timeout of every call (a call longer than ~5 s fails)
and hide the server process (it could not be killed at agent exit); an HTTP
connection first probes for mTLS through `google.auth.default` (a metadata-server
lookup on machines without gcloud credentials); and a toolset that fails is
dropped with a log line only, where the user must be told.

Concurrency: the SDK (anyio) requires its task groups to be entered and left by one
task, so each server lives in one task (`McpConnection._run`) that connects,
publishes the tool list, then waits until the session closes or the server goes
away. Calls are made from the tool's own task through the live `ClientSession`.
Servers start concurrently; each has a start-up timeout. A server that cannot be
started, times out, or exits later is logged, and a notice for the user is queued
(`servers.McpServers.take_notices`); the session goes on without it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from mcp import ClientSession
from mcp import types as mcp_types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from runtime.tools.mcp.config import (
    MCP_CALL_TIMEOUT_S,
    MCP_START_TIMEOUT_S,
    McpHttpServer,
    McpOAuth,
    McpServerConfig,
    McpSseServer,
    McpStdioServer,
    uses_oauth,
)
from runtime.tools.mcp.offers import describe_error, is_auth_failure, list_offers, list_tools
from runtime.tools.mcp.stdio import StdioServerProcess, describe_exit

logger = logging.getLogger(__name__)


@functools.cache
def _client_info() -> mcp_types.Implementation:
    """Who we are to MCP servers: the installed distribution's version (one source of
    truth: `acp_server.__version__`, which the package metadata is built from)."""
    try:
        version = metadata.version("adk-acp")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = "0+unknown"
    return mcp_types.Implementation(name="adk-acp", version=version)


CLOSE_GRACE_S = 1.5
HTTP_TIMEOUT_S = 30.0
# How long a dead connection waits for its process to be reaped, to report the exit
# code rather than "its output ended" (runs in the connection's own task, not in a turn;
# half a second was too short on a loaded machine).
_EXIT_WAIT_S = 3.0

State = Literal["new", "starting", "ready", "failed", "closed"]


class McpUnavailable(Exception):
    """The server is not connected (it failed to start, stopped, or was closed)."""


class McpConnection:
    """One MCP server of one session.

    `connect()` starts it and returns once it is ready (its tools listed in `tools`),
    has failed (`failure` says why), or the start-up timeout passed. `call_tool`
    raises `McpUnavailable` when the server is not connected, `MCPError` for
    protocol errors (timeouts, a connection closed mid-call). `on_lost` is called
    when a connected server goes away by itself.
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        cwd: Path,
        start_timeout: float = MCP_START_TIMEOUT_S,
        call_timeout: float = MCP_CALL_TIMEOUT_S,
        on_lost: Callable[[McpConnection], None] | None = None,
        oauth_dir: Path | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self._oauth_dir = oauth_dir
        self._on_notice = on_notice
        self._authorizing_until: float | None = None
        self.name = config.name
        self.cwd = cwd
        self.tools: tuple[mcp_types.Tool, ...] = ()
        self.failure: str | None = None
        self.state: State = "new"
        self._start_timeout = start_timeout
        self._call_timeout = config.options.timeout_s or call_timeout
        self._on_lost = on_lost
        self.prompts: tuple[mcp_types.Prompt, ...] = ()
        self.resources: tuple[mcp_types.Resource, ...] = ()
        self.tools_changed = False
        self.restarts = 0
        self._session: ClientSession | None = None
        self._process: StdioServerProcess | None = None
        self._ready: asyncio.Future[None] | None = None
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    async def connect(self) -> bool:
        """Starts the server and waits for it (bounded by the start-up timeout). True when ready."""
        self.state = "starting"
        self._wake = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(), name=f"mcp-server-{self.name}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._start_timeout
        while not (self._ready.done() or self._task.done()):
            # the start-up timeout, or longer while the user is asked to authorize
            left = max(deadline, self._authorizing_until or 0.0) - loop.time()
            if left <= 0:
                break
            await asyncio.wait(
                {self._ready, self._task},
                timeout=min(left, 1.0),
                return_when=asyncio.FIRST_COMPLETED,
            )
        if self._ready.done():
            return True
        if not self._task.done():
            self.failure = f"no answer within {self._start_timeout:g} s"
            await self._cancel()
        self.state = "failed"
        self.failure = self.failure or "failed to start"
        return False

    async def call_tool(
        self, name: str, args: dict[str, Any], progress: ProgressFnT | None = None
    ) -> mcp_types.CallToolResult:
        """One `tools/call`; the server's `notifications/progress` for it go to `progress`."""
        session = self._session
        if session is None or self.state != "ready":
            raise McpUnavailable(self.failure or "not connected")
        try:
            return await session.call_tool(
                name, args, read_timeout_seconds=self._call_timeout, progress_callback=progress
            )
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._wake.set()  # the connection's task reports the server as lost
                await self._until_lost(_EXIT_WAIT_S + 2)  # so the user hears of it this turn
            raise

    async def _until_lost(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.state == "ready" and loop.time() < deadline:
            await asyncio.sleep(0.05)

    async def _on_message(self, message: Any) -> None:
        """Server notifications: a changed tool list is listed again between turns."""
        root = getattr(message, "root", message)
        if isinstance(root, mcp_types.ToolListChangedNotification):
            logger.info("MCP server %s: its tool list changed", self.name)
            self.tools_changed = True

    async def refresh_tools(self) -> bool:
        """Lists the tools again after a `tools/list_changed`; True when it did."""
        session = self._session
        if not self.tools_changed or session is None or self.state != "ready":
            return False
        self.tools_changed = False
        try:
            self.tools = await list_tools(session)
        except Exception as exc:  # noqa: BLE001 - keep the old list, say why in the log
            logger.warning("MCP server %s: listing its tools again failed: %s", self.name, exc)
            return False
        return True

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> mcp_types.GetPromptResult:
        session = self._session
        if session is None or self.state != "ready":
            raise McpUnavailable(self.failure or "not connected")
        return await session.get_prompt(name, arguments)

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        session = self._session
        if session is None or self.state != "ready":
            raise McpUnavailable(self.failure or "not connected")
        return await session.read_resource(uri)

    async def close(self) -> None:
        """Stops the server (gracefully when connected; at once while starting)."""
        self._closing = True
        task = self._task
        if task is None or task.done():
            self.state = "closed"
            return
        if self.state == "ready":
            self._wake.set()
            done, _ = await asyncio.wait({task}, timeout=CLOSE_GRACE_S)
            if done:
                self.state = "closed"
                return
        await self._cancel()
        self.state = "closed"

    # ------------------------------------------------------------ the connection's task

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                session, initialized = await self._open(stack)
                self.tools, self.prompts, self.resources = await list_offers(
                    self.name, session, initialized
                )
                self._session, self.state = session, "ready"
                assert self._ready is not None
                self._ready.set_result(None)
                await self._wake.wait()
                self._session = None
                if not self._closing:
                    await self._lost("the connection ended")
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none ends the session
            await self._failed(exc)
        finally:
            self._session = None

    async def _open(self, stack: AsyncExitStack) -> tuple[ClientSession, Any]:
        """The initialized session, on `stack`. A settings `url` without `type` is tried
        over streamable HTTP first, then over SSE (as Gemini CLI does)."""
        config = self.config
        if not (isinstance(config, McpHttpServer) and config.sse_fallback):
            return await self._initialize(stack, self._transport(config))
        attempt = AsyncExitStack()
        try:
            opened = await self._initialize(attempt, self._transport(config))
        except Exception as exc:  # noqa: BLE001 - the reason is logged, SSE is tried next
            if is_auth_failure(exc):
                raise
            logger.info(
                "MCP server %s: streamable HTTP failed (%s); trying SSE",
                self.name,
                describe_error(exc),
            )
            with suppress(Exception):
                await attempt.aclose()
            sse = McpSseServer(
                config.name, config.url, config.headers, config.options, oauth=config.oauth
            )
            return await self._initialize(stack, self._transport(sse))
        await stack.enter_async_context(attempt)
        return opened

    async def _initialize(
        self, stack: AsyncExitStack, transport: AbstractAsyncContextManager[tuple[Any, Any]]
    ) -> tuple[ClientSession, Any]:
        read, write = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(
            ClientSession(read, write, client_info=_client_info(), message_handler=self._on_message)
        )
        return session, await session.initialize()

    async def _failed(self, exc: Exception) -> None:
        reason = describe_error(exc)
        logger.debug("MCP server %s failed", self.name, exc_info=exc)
        if self._process is not None and self._process.pid is not None:
            await self._process.wait_exit(_EXIT_WAIT_S)
            if self._process.returncode is not None:
                reason = describe_exit(self._process, with_stderr=True)
        if self.state == "starting":
            self.failure = reason
        elif self.state == "ready" and not self._closing:
            await self._lost(reason)

    async def _lost(self, reason: str) -> None:
        if self._process is not None:
            await self._process.wait_exit(_EXIT_WAIT_S)
            reason = describe_exit(self._process, with_stderr=False)
        self.state, self.failure = "failed", reason
        logger.warning("MCP server %s stopped: %s", self.name, reason)
        if self._on_lost is not None:
            self._on_lost(self)

    @asynccontextmanager
    async def _transport(self, config: McpServerConfig) -> AsyncIterator[tuple[Any, Any]]:
        if isinstance(config, McpStdioServer):
            cwd = Path(config.cwd) if config.cwd else self.cwd
            self._process = StdioServerProcess(config, cwd=cwd, on_exit=self._wake.set)
            async with self._process.open() as streams:
                yield streams
        elif isinstance(config, McpHttpServer):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=self._call_timeout),
                auth=self._auth(config),
            )
            async with client, streamable_http_client(config.url, http_client=client) as streams:
                yield streams[0], streams[1]
        else:
            assert isinstance(config, McpSseServer)
            from mcp.client.sse import sse_client

            async with sse_client(
                config.url,
                headers=dict(config.headers) or None,
                timeout=self._start_timeout,
                sse_read_timeout=self._call_timeout,
                auth=self._auth(config),
            ) as streams:
                yield streams[0], streams[1]

    def _auth(self, config: McpHttpServer | McpSseServer) -> Any:
        """The SDK's OAuth provider for a remote server (None when it does not use OAuth)."""
        if self._oauth_dir is None or not uses_oauth(config.oauth, config.headers):
            return None
        from runtime.tools.mcp.oauth import AUTH_TIMEOUT_S, McpOAuthProvider

        def authorizing(waiting: bool) -> None:
            loop = asyncio.get_running_loop()
            self._authorizing_until = loop.time() + AUTH_TIMEOUT_S + 5 if waiting else None

        return McpOAuthProvider(
            server=self.name,
            url=config.url,
            settings=config.oauth or McpOAuth(),
            store_dir=self._oauth_dir,
            show=self._on_notice or (lambda text: logger.warning("%s", text)),
            on_authorizing=authorizing,
        )

    async def _cancel(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_GRACE_S)
