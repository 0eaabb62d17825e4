"""The session lifecycle (design: AgentSession, session factory): the public face.

`spec` (what a session is made of), `agent_session` (the session over its typed
parts), `factory` with its `build` steps and `link`, `paths`, and `service`
(open, reopen, fork, list and delete recorded sessions).
"""

from runtime.session.agent_session import AgentSession, SessionFactory, compression_notice
from runtime.session.factory import content_generator_for, create_session
from runtime.session.spec import APP_NAME, USER_ID, SessionKind, SessionSpec

__all__ = [
    "APP_NAME",
    "USER_ID",
    "AgentSession",
    "SessionFactory",
    "SessionKind",
    "SessionSpec",
    "compression_notice",
    "content_generator_for",
    "create_session",
]
