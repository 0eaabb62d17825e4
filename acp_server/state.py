"""ServerState: what outlives one request (client capabilities, the auth choice, the
session registry) and the `SessionService` the lifecycle handlers go through.

Every handler takes it as its first argument; `server.py` makes one per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_server.config_options import ConfigOptions
from acp_server.errors import INTERNAL_ERROR, AcpError, session_not_found
from acp_server.host import AcpHost
from acp_server.mcp import mcp_servers
from acp_server.session import AcpSession
from acp_server.updates import ClientUpdates
from runtime.config import AgentFlags
from runtime.prompt import ClientPrompt
from runtime.session import AgentSession, AuthChoice, OpenRequest, SessionService

if TYPE_CHECKING:
    from acp_server.transport import JsonRpcConnection

logger = logging.getLogger(__name__)


@dataclass
class ServerOptions:
    flags: AgentFlags = field(default_factory=AgentFlags)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    home: Path | None = None


class ServerState:
    """Client capabilities, the auth choice, the live sessions and the session service."""

    replay_cursors = False
    """Whether sessions keep numbered updates to replay from a cursor (the hub's do)."""

    def __init__(
        self,
        conn: JsonRpcConnection,
        options: ServerOptions,
        service: SessionService | None = None,
    ) -> None:
        self.conn = conn
        self.options = options
        self.client_capabilities: dict[str, Any] | None = None
        self.auth = AuthChoice()
        self.sessions: MutableMapping[str, AcpSession] = {}
        """A plain dict on stdio; the hub's sessions a client may see under `serve`."""
        self.failed_sessions: dict[str, str] = {}
        """Sessions answered early whose engine could not be built: why, for later requests."""
        self.config_options = ConfigOptions()
        self.service = service or SessionService(options.flags, options.env, options.home)
        self._opening: dict[str, tuple[asyncio.Lock, int]] = {}

    def mark_initialized(self, params: dict[str, Any]) -> None:
        caps = params.get("clientCapabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}

    def session(self, session_id: str) -> AcpSession:
        """The live session, or the error a request about `session_id` is answered with."""
        session = self.sessions.get(session_id)
        if session is None and session_id in self.failed_sessions:
            raise AcpError(
                INTERNAL_ERROR,
                f"The session could not be started: {self.failed_sessions[session_id]}",
                {"sessionId": session_id},
            )
        if session is None:
            raise session_not_found(session_id)
        return session

    def open_request(
        self,
        cwd: str,
        additional: list[str] | None,
        servers: list[Any] | None,
        client_prompt: ClientPrompt | None = None,
    ) -> OpenRequest:
        """A client's opening as the session service takes it: an `AcpHost` per session
        (and the client's system prompt, if it sent one)."""
        return OpenRequest(
            cwd=cwd,
            host_for=lambda session_id: AcpHost(self.conn, session_id, self.client_capabilities),
            additional_directories=tuple(additional or ()),
            mcp_servers=mcp_servers(servers or []),
            auth=self.auth,
            client_prompt=client_prompt,
        )

    def adopt(self, agent: AgentSession) -> AcpSession:
        """Register a freshly opened engine session under its id."""
        session = AcpSession(
            self.conn, agent, self.config_options, ClientUpdates.of(self.client_capabilities)
        )
        self.sessions[agent.id] = session
        return session

    @contextlib.asynccontextmanager
    async def one_at_a_time(self, session_id: str) -> AsyncIterator[None]:
        """Two loads (or resumes) of one session sent back to back are served one after
        the other: the second finds the engine the first built (one engine, one set of
        MCP servers), and the first is answered before the second replays."""
        async with one_at_a_time(self._opening, session_id):
            yield

    async def shutdown(self) -> None:
        await close_all(self.sessions)
        await self.service.aclose()


@contextlib.asynccontextmanager
async def one_at_a_time(
    opening: dict[str, tuple[asyncio.Lock, int]], session_id: str
) -> AsyncIterator[None]:
    """`ServerState.one_at_a_time` on the locks in `opening` (the serve hub's upkeep
    takes them too: a session is not let go while it is being opened)."""
    lock, users = opening.get(session_id) or (asyncio.Lock(), 0)
    opening[session_id] = (lock, users + 1)
    try:
        async with lock:
            if users:  # the load before this one is answered before this one replays
                await asyncio.sleep(0)
            yield
    finally:
        lock, users = opening[session_id]
        if users <= 1:
            del opening[session_id]
        else:
            opening[session_id] = (lock, users - 1)


async def close_all(sessions: MutableMapping[str, AcpSession]) -> None:
    """Close every session (at once) and empty `sessions`; failures are logged."""
    closing = list(sessions.values())
    sessions.clear()
    results = await asyncio.gather(*(s.close() for s in closing), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            logger.warning("closing a session failed: %s", result)
