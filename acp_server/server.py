"""The ACP server, wired: a `ServerState` over the JSON-RPC connection, and every row of
the handler tables (`acp_server.handlers.METHODS`, `NOTIFICATIONS`) installed on it."""

from __future__ import annotations

from functools import partial

from acp_server.handlers import METHODS, NOTIFICATIONS
from acp_server.state import ServerOptions, ServerState
from acp_server.transport import JsonRpcConnection

__all__ = ["ServerOptions", "ServerState", "serve_on"]


def serve_on(conn: JsonRpcConnection, options: ServerOptions) -> ServerState:
    """The server's state, with every ACP method answered on `conn`."""
    state = ServerState(conn, options)
    for name, method in METHODS.items():
        conn.register(name, method.params, partial(method.handler, state))
    for name, notification in NOTIFICATIONS.items():
        conn.register_notification(name, partial(notification, state))
    return state
