"""The session lifecycle's public face: `spec`, `agent_session`, `factory` (with its
`build` steps, `link`, `parts`, `paths`) and `service` (see ARCHITECTURE.md)."""

from runtime.session.agent_session import AgentSession, SessionFactory, compression_notice
from runtime.session.factory import content_generator_for, create_session
from runtime.session.service import (
    SessionNotFoundError,
    SessionPage,
    SessionService,
    WrongWorkspaceError,
)
from runtime.session.spec import (
    APP_NAME,
    USER_ID,
    AuthChoice,
    OpenRequest,
    SessionKind,
    SessionSpec,
)

__all__ = [
    "APP_NAME",
    "USER_ID",
    "AgentSession",
    "AuthChoice",
    "OpenRequest",
    "SessionFactory",
    "SessionKind",
    "SessionNotFoundError",
    "SessionPage",
    "SessionService",
    "SessionSpec",
    "WrongWorkspaceError",
    "compression_notice",
    "content_generator_for",
    "create_session",
]
