"""The ACP server: session registry, negotiated client capabilities, handler wiring."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_server.config_options import ConfigOptions
from acp_server.errors import INTERNAL_ERROR, AcpError, session_not_found
from acp_server.session import AcpSession
from acp_server.transport import JsonRpcEngine
from runtime.config import AgentFlags

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp_server.early import EarlySession
    from runtime.services.recording import SessionStore

logger = logging.getLogger(__name__)


@dataclass
class ServerOptions:
    flags: AgentFlags = field(default_factory=AgentFlags)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    home: Path | None = None


class AcpServer:
    """Holds what outlives one request: client capabilities, credentials, sessions."""

    def __init__(self, engine: JsonRpcEngine, options: ServerOptions) -> None:
        self.engine = engine
        self.options = options
        self.client_capabilities: dict[str, Any] | None = None
        self.initialized = False
        self.api_key_override: str | None = None
        self.auth_preference: str | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.failed_sessions: dict[str, str] = {}
        """Sessions answered early whose engine could not be built: why, for later requests."""
        self.open_early: Callable[[EarlySession], Awaitable[None]]
        self.config_options = ConfigOptions()
        self._store: SessionStore | None = None
        from acp_server.handlers import initialize, modes, prompt, sessions

        initialize.register(self)
        sessions.register(self)
        prompt.register(self)
        modes.register(self)

    def home(self) -> Path:
        return self.options.home or Path(self.options.env.get("HOME") or Path.home())

    def store(self) -> SessionStore:
        """Where sessions are recorded (resolved once: flag, user setting, XDG state dir)."""
        if self._store is None:
            from runtime.config import resolve_sessions_dir
            from runtime.errors import ConfigError
            from runtime.services.recording import SessionStore, default_sessions_dir

            env, home = (
                self.options.env,
                self.options.home or Path(self.options.env.get("HOME") or Path.home()),
            )
            try:
                root = resolve_sessions_dir(self.options.flags, env, home)
            except ConfigError as exc:
                logger.warning("%s; recording sessions in the default folder", exc)
                root = default_sessions_dir(env, home)
            self._store = SessionStore(root)
        return self._store

    def mark_initialized(self, params: dict[str, Any]) -> None:
        caps = params.get("clientCapabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}
        self.initialized = True

    def session(self, session_id: str) -> AcpSession:
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

    async def shutdown(self) -> None:
        sessions = list(self.sessions.values())
        self.sessions.clear()
        results = await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                logger.warning("closing a session failed: %s", result)
