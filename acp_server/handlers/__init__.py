"""The ACP methods: one module-level async function each, `(state, params) -> answer`.

`METHODS` maps a method name to its params model (validated before the call; None:
the raw params) and its function; `NOTIFICATIONS` does the same for notifications.
`server.py` installs both on the connection; nothing else registers a method.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from acp_server import schema, system_prompt
from acp_server.handlers import initialize, modes, prompt, sessions, titles

if TYPE_CHECKING:
    from acp_server.state import ServerState


class Method(NamedTuple):
    params: type[BaseModel] | None
    handler: Callable[[ServerState, Any], Awaitable[Any]]


METHODS: dict[str, Method] = {
    "initialize": Method(initialize.InitializeParams, initialize.initialize),
    "authenticate": Method(schema.AuthenticateRequest, initialize.authenticate),
    "logout": Method(None, initialize.logout),
    "session/new": Method(system_prompt.NewSessionParams, sessions.new_session),
    "session/load": Method(system_prompt.LoadSessionParams, sessions.load_session),
    "session/resume": Method(system_prompt.ResumeSessionParams, sessions.resume_session),
    "session/fork": Method(system_prompt.ForkSessionParams, sessions.fork_session),
    "session/list": Method(schema.ListSessionsRequest, sessions.list_sessions),
    "session/close": Method(schema.CloseSessionRequest, sessions.close_session),
    "session/delete": Method(schema.DeleteSessionRequest, sessions.delete_session),
    "session/prompt": Method(schema.PromptRequest, prompt.prompt),
    "session/set_mode": Method(schema.SetSessionModeRequest, modes.set_mode),
    "session/set_config_option": Method(modes.SetConfigOptionRequest, modes.set_config_option),
    "session/set_model": Method(modes.SetModelRequest, modes.set_model),
    "session/set_title": Method(titles.SetTitleRequest, titles.set_title),
}

NOTIFICATIONS: dict[str, Callable[[ServerState, Any], Awaitable[None]]] = {
    "session/cancel": prompt.cancel,
}
