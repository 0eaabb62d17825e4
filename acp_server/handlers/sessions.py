"""`session/new`: validate the workspace, check credentials, build the engine session."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import schema

from acp_server.errors import from_runtime, invalid_params
from acp_server.host import AcpHost
from acp_server.mcp import mcp_servers
from acp_server.session import AcpSession
from runtime.config import resolve_auth, resolve_config
from runtime.errors import AuthRequiredError

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from acp_server.server import AcpServer


def _directory(raw: str, what: str) -> Path:
    shown = raw if len(raw) <= 200 else f"{raw[:200]}… ({len(raw)} chars)"
    path = Path(raw)
    if not path.is_absolute():
        raise invalid_params(f"{what} must be an absolute path, got {shown!r}")
    try:
        usable = path.is_dir()
        resolved = path.resolve() if usable else path
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop of links
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise invalid_params(f"{what} is not a usable directory ({reason}): {shown}") from None
    if not usable:
        raise invalid_params(f"{what} does not exist or is not a directory: {shown}")
    return resolved


def register(server: AcpServer) -> None:
    async def new_session(params: schema.NewSessionRequest) -> dict[str, Any]:
        from runtime.session import SessionSpec, create_session

        cwd = _directory(params.cwd, "cwd")
        extra = tuple(
            _directory(d, "additionalDirectories entry")
            for d in params.additional_directories or []
        )
        flags = server.options.flags
        try:
            auth = resolve_auth(
                server.options.env,
                fake_responses=flags.fake_responses,
                api_key_override=server.api_key_override,
                prefer=server.auth_preference,  # type: ignore[arg-type]
            )
        except AuthRequiredError as exc:
            raise from_runtime(exc) from exc
        config = resolve_config(cwd, flags, env=server.options.env, home=server.options.home)
        session_id = uuid.uuid4().hex
        host = AcpHost(server.engine, session_id, server.client_capabilities)
        runtime = await create_session(
            SessionSpec(
                config=config,
                auth=auth,
                host=host,
                session_id=session_id,
                additional_roots=extra,
                mcp_servers=mcp_servers(params.mcp_servers or []),
            )
        )
        session = AcpSession(server.engine, runtime, host, server.config_options)
        server.sessions[session_id] = session
        return {
            "sessionId": session_id,
            "modes": server.config_options.modes(runtime),
            "configOptions": server.config_options.options(runtime),
        }

    server.engine.register("session/new", schema.NewSessionRequest, new_session)
