"""SessionHub: the sessions of a serving process, independent of its connections.

One hub per `adk-acp serve` process (and the server a warm per-user process would
use): it owns the `SessionService` and every live `AcpSession`, each speaking through
its `SessionChannel`. A connection is one client: a `RemoteState` (the `ServerState`
every handler takes) over its own `JsonRpcConnection`, whose `sessions` are the hub's
sessions its grant may see. Opening, loading or using a session attaches the client
to it; a connection that closes only detaches: turns run on, questions wait for the
next client.

The remote host does not use the client's files or terminals (`fs`, `terminal` are
taken out of the client's capabilities): the agent works on the machine it runs on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from functools import partial
from typing import Any

from acp_server.errors import invalid_params, session_not_found
from acp_server.handlers import METHODS, NOTIFICATIONS
from acp_server.host import AcpHost
from acp_server.remote.channel import SessionChannel, only_to
from acp_server.remote.tokens import Grant
from acp_server.remote.turns import after_reopen, reporting_prompt
from acp_server.session import AcpSession
from acp_server.state import ServerOptions, ServerState, close_all
from acp_server.transport import JsonRpcConnection
from acp_server.updates import ClientUpdates
from runtime.prompt import ClientPrompt
from runtime.session import AgentSession, OpenRequest, SessionService

logger = logging.getLogger(__name__)

LOCAL_ONLY_CAPABILITIES = ("fs", "terminal")
"""Client capabilities a remote agent does not use: its files are its own machine's."""

REPLAY_FROM_META = "replayFrom"
"""`_meta.adkAcp.replayFrom` on `session/resume`: send the updates after this cursor."""


def remote_capabilities(caps: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (caps or {}).items() if k not in LOCAL_ONLY_CAPABILITIES}


class SessionHub:
    """Live sessions by id, each with its channel and the grant key that opened it."""

    def __init__(self, options: ServerOptions, permission_timeout_s: float) -> None:
        self.options = options
        self.permission_timeout_s = permission_timeout_s
        self.service = SessionService(options.flags, options.env, options.home)
        self.sessions: dict[str, AcpSession] = {}
        self.channels: dict[str, SessionChannel] = {}
        self.opening: dict[str, tuple[asyncio.Lock, int]] = {}
        """`ServerState.one_at_a_time`'s locks, shared by every connection."""

    def channel(self, session_id: str) -> SessionChannel:
        channel = self.channels.get(session_id)
        if channel is None:
            channel = SessionChannel(session_id, self.permission_timeout_s)
            self.channels[session_id] = channel
        return channel

    def connect(self, conn: JsonRpcConnection, grant: Grant) -> RemoteState:
        """A new client: its state, with every ACP method answered on `conn`."""
        state = RemoteState(conn, self, grant)
        for name, method in METHODS.items():
            handler: Callable[[Any], Awaitable[Any]] = partial(method.handler, state)
            if name in _OWN_ANSWERS:
                handler = _for_this_client(conn, state, name)
            elif name == "session/prompt":
                handler = reporting_prompt(state, self, conn)
            elif name in _SCOPED:
                handler = _scoped(state, name)
            conn.register(name, method.params, handler)
        for name, notification in NOTIFICATIONS.items():
            conn.register_notification(name, partial(notification, state))
        return state

    def disconnect(self, conn: JsonRpcConnection) -> None:
        for channel in self.channels.values():
            channel.detach(conn)

    def remove(self, session_id: str) -> AcpSession | None:
        self.channels.pop(session_id, None)
        return self.sessions.pop(session_id, None)

    async def stop_turns(self) -> None:
        """Every running turn stopped and its prompt answered (`cancelled`) while its
        clients are still connected: the first step of a server's stop."""
        await asyncio.gather(*(s.stop_turns() for s in list(self.sessions.values())))

    async def shutdown(self) -> None:
        self.channels.clear()
        await close_all(self.sessions)


class HubSessions(MutableMapping[str, AcpSession]):
    """One client's view of the hub's sessions: those whose folder its grant allows.
    Looking a session up attaches the client to it."""

    def __init__(self, hub: SessionHub, state: RemoteState) -> None:
        self._hub = hub
        self._state = state

    def _visible(self, session: AcpSession) -> bool:
        return self._state.grant.allows(str(session.agent.roots[0]))

    def __getitem__(self, session_id: str) -> AcpSession:
        session = self._hub.sessions[session_id]
        if not self._visible(session):
            raise KeyError(session_id)
        self._attach(session_id)
        return session

    def __setitem__(self, session_id: str, session: AcpSession) -> None:
        self._hub.sessions[session_id] = session
        self._attach(session_id)

    def _attach(self, session_id: str) -> None:
        """This client follows the session, sent the updates it opted in to (a v2
        connection's are those `v2.dialect.client_capabilities` set at `initialize`)."""
        takes = ClientUpdates.of(self._state.client_capabilities)
        self._hub.channel(session_id).attach(self._state.conn, takes)

    def __delitem__(self, session_id: str) -> None:
        self[session_id]  # noqa: B018 - raises KeyError for a session this client may not see
        self._hub.remove(session_id)

    def __iter__(self) -> Iterator[str]:
        return iter([sid for sid, s in self._hub.sessions.items() if self._visible(s)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class RemoteState(ServerState):
    """One remote client's `ServerState`: the hub's sessions, its grant's roots."""

    replay_cursors = True

    def __init__(self, conn: JsonRpcConnection, hub: SessionHub, grant: Grant) -> None:
        super().__init__(conn, hub.options, hub.service)
        self.remote_conn = conn
        self.hub = hub
        self.grant = grant
        self.sessions = HubSessions(hub, self)
        self._opening = hub.opening

    def check_folders(self, *folders: str | None) -> None:
        """A folder outside the grant's roots is refused (-32602)."""
        for folder in folders:
            if folder is not None and not self.grant.allows(folder):
                raise invalid_params(
                    f"{folder} is outside the workspace roots this token may use",
                    {"cwd": folder},
                )

    def open_request(
        self,
        cwd: str,
        additional: list[str] | None,
        servers: list[Any] | None,
        client_prompt: ClientPrompt | None = None,
    ) -> OpenRequest:
        self.check_folders(cwd, *(additional or ()))
        request = super().open_request(cwd, additional, servers, client_prompt)
        # a subagent asks in its child session; a client not following subagents is
        # asked in this one (`SessionChannel`)
        caps = {**remote_capabilities(self.client_capabilities), "subagents": {}}
        return dataclasses.replace(
            request,
            host_for=lambda session_id: AcpHost(self.hub.channel(session_id), session_id, caps),
        )

    def adopt(self, agent: AgentSession) -> AcpSession:
        """The session's updates are made with every opt-in; its channel sends each
        client its own form of them (`SessionChannel`), whoever opened it."""
        channel = self.hub.channel(agent.id)
        session = AcpSession(channel, agent, self.config_options, ClientUpdates.every())
        self.sessions[agent.id] = session
        return session

    async def shutdown(self) -> None:
        """The connection closed: detach from every session; the sessions live on."""
        self.hub.disconnect(self.remote_conn)


_OWN_ANSWERS = ("session/load", "session/resume")
_SCOPED = ("session/list", "session/delete")


def _scoped(state: RemoteState, name: str) -> Callable[[Any], Awaitable[Any]]:
    """`session/list` and `session/delete` for a token limited to roots: a list names a
    `cwd` inside them; a delete is of a session open and visible to the token (a record
    elsewhere is not its to remove)."""
    method = METHODS[name]

    async def handler(params: Any) -> Any:
        if state.grant.roots:
            if name == "session/list":
                if params.cwd is None:
                    raise invalid_params("a token limited to workspace roots lists with a cwd")
                state.check_folders(params.cwd)
            elif params.session_id not in state.sessions:
                raise session_not_found(params.session_id)
        return await method.handler(state, params)

    return handler


def _for_this_client(
    conn: JsonRpcConnection, state: RemoteState, name: str
) -> Callable[[Any], Awaitable[Any]]:
    """`session/load` and `session/resume` whose updates (the replay, the commands) go
    to the client that asked alone; after a resume with `_meta.adkAcp.replayFrom`, the
    updates it missed from that cursor on; then the turn state (`turns.after_reopen`)."""
    method = METHODS[name]

    async def handler(params: Any) -> Any:
        with only_to(conn):
            answer = await method.handler(state, params)
            resumed = name == "session/resume"
            cursor = _replay_from(params) if resumed else None
            return after_reopen(state, params.session_id, answer, cursor, resumed)

    return handler


def _replay_from(params: Any) -> int | None:
    meta = getattr(params, "field_meta", None) or {}
    ours = meta.get("adkAcp") if isinstance(meta, dict) else None
    value = ours.get(REPLAY_FROM_META) if isinstance(ours, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
