"""V2Dialect: one connection speaking ACP v2 (the `transport.Dialect` set at `initialize`).

Its requests are answered by the v1 handlers installed on the connection
(`JsonRpcConnection.methods`, the hub's wrappers under `serve` included), their params
and answers translated; what the agent sends is translated by `updates.V2Updates`.

- `session/prompt`: the prompt is inserted at once (a `user_message` with a new
  `messageId` and a `running` state to the session's v2 clients) and answered with that
  id; the v1 turn runs on in a task whose end is an `idle` state update with the stop
  reason (`error` with the error's code and message when the turn failed);
- `session/resume`: `replayFrom` absent: no replay (v1 `session/resume`); `start`: the
  record replayed (v1 `session/load`); `{"type": "_adkAcp/cursor", "cursor": n}` under
  `serve`: the updates after the hub's cursor `n` (`_meta.adkAcp.cursor` on each update,
  the hub's `replayFrom` machinery); any other cursor is refused (-32602). Then the
  state snapshot, then the answer;
- `session/new`, `fork`, `list`, `close`, `delete`, `set_config_option` as v1's, shapes
  adapted (`systemPrompt` on new, resume and fork is v1's);
- `auth/login` is v1's `authenticate` (the terminal method refused, -32602), `auth/logout`
  v1's `logout`;
- a permission request or a form (`elicitation/create`: v1's fallback-model question,
  asked when the client offers `elicitation.form`) is `requires_action` while it waits,
  `running` once answered (of the session a subagent's child session runs in, for its
  questions).
v1's other methods (`session/load`, `set_mode`, `authenticate`, ...) are not served.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from acp_server.errors import METHOD_NOT_FOUND, AcpError, invalid_params
from acp_server.v2.updates import (
    V2Updates,
    config_options_v2,
    new_message_id,
    permission_request_v2,
)
from runtime.errors import RuntimeAgentError

if TYPE_CHECKING:
    from acp_server.session import AcpSession
    from acp_server.state import ServerState
    from acp_server.transport import JsonRpcConnection

logger = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]

CURSOR_TYPE = "_adkAcp/cursor"
"""A `replayFrom` of this agent's own (a hub cursor), beside v2's `start`."""

PASSED_THROUGH = ("initialize", "session/list", "session/close", "session/delete")

V2_ONLY = ("auth/login", "auth/logout")
"""Methods v1 does not have: registered on the connection when it turns to v2 (not
found for v1, should the connection turn back at another `initialize`)."""

CLIENT_CAPABILITIES: dict[str, Any] = {"session": {"compaction": {}}, "subagents": {}}
"""The v1 capabilities a v2 client is served with: no `fs`, no `terminal` (the agent
works on its own files); of v1's opt-ins those whose shape is v2's: `compaction_update`
and subagent sessions (`subagent_update`, the child's updates under its own id; v2's
baseline). The other v2 updates are made from the plain ones."""

ASKING = ("session/request_permission", "elicitation/create")
"""The agent's requests that hold the turn until the user answers (`requires_action`)."""


def client_capabilities(v2: Any) -> dict[str, Any]:
    """The v1 capabilities of a v2 client whose `initialize` offered `v2`: the fixed ones,
    and `elicitation` (forms) when it offers `elicitation.form`."""
    caps = dict(CLIENT_CAPABILITIES)
    elicitation = v2.get("elicitation") if isinstance(v2, dict) else None
    if isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict):
        caps["elicitation"] = {"form": {}}
    return caps


class V2Dialect:
    """ACP v2 on one connection (see the module docstring)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.conn: JsonRpcConnection = state.conn
        self.updates = V2Updates()
        self._states: dict[str, str] = {}
        """The last state each session was reported in on this connection."""
        self._parents: dict[str, str] = {}
        """A subagent's child session -> the session it runs in (`subagent_update`)."""
        self._turns: set[asyncio.Task[None]] = set()
        self._own: dict[str, Handler] = {
            "session/new": self._new,
            "session/fork": self._fork,
            "auth/login": self._login,
            "auth/logout": self._logout,
            "session/resume": self._resume,
            "session/prompt": self._prompt,
            "session/set_config_option": self._set_config_option,
        }
        for name in V2_ONLY:
            if name not in self.conn.methods:
                self.conn.register(name, None, _not_in_v1(name))

    # ------------------------------------------------------------ requests in

    def method(
        self, name: str, params_model: type[BaseModel] | None, fn: Handler
    ) -> tuple[type[BaseModel] | None, Handler] | None:
        if name in PASSED_THROUGH:
            return params_model, fn
        own = self._own.get(name)
        return None if own is None else (None, own)

    def _parsed(self, name: str, params: Any) -> tuple[Any, Handler]:
        """The v1 handler of `name` (as installed) and `params` as it takes them."""
        model, fn = self.conn.methods[name]
        if model is None:
            return params, fn
        try:
            return model.model_validate(params if isinstance(params, dict) else {}), fn
        except ValidationError as exc:
            raise invalid_params(f"Invalid params for {name}: {exc.errors()[0]['msg']}") from exc

    async def _v1(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call the v1 handler of `name` with v1 params; its answer as JSON."""
        from acp_server.transport import dump

        parsed, fn = self._parsed(name, params)
        answer = dump(await fn(parsed))
        return answer if isinstance(answer, dict) else {}

    async def _new(self, params: Any) -> dict[str, Any]:
        answer = await self._v1("session/new", _opening(params))
        return {
            "sessionId": answer.get("sessionId"),
            "configOptions": config_options_v2(answer.get("configOptions", [])),
        }

    async def _fork(self, params: Any) -> dict[str, Any]:
        answer = await self._v1("session/fork", _opening(params))
        return {
            "sessionId": answer.get("sessionId"),
            "configOptions": config_options_v2(answer.get("configOptions", [])),
        }

    async def _login(self, params: Any) -> dict[str, Any]:
        """v1's `authenticate` with the method (and `_meta`, a key in it) v2 names."""
        login = dict(params) if isinstance(params, dict) else {}
        await self._v1("authenticate", login)
        return {}

    async def _logout(self, params: Any) -> dict[str, Any]:
        await self._v1("logout", {})
        return {}

    async def _resume(self, params: Any) -> dict[str, Any]:
        opening = _opening(params)
        replay = opening.pop("replayFrom", None)
        kind = replay.get("type") if isinstance(replay, dict) else None
        if replay is None:
            answer = await self._v1("session/resume", opening)
        elif kind == "start":
            answer = await self._v1("session/load", opening)
        elif kind == CURSOR_TYPE and self.state.replay_cursors and _cursor(replay) is not None:
            meta = dict(opening.get("_meta") or {})
            meta["adkAcp"] = {**(meta.get("adkAcp") or {}), "replayFrom": _cursor(replay)}
            answer = await self._v1("session/resume", {**opening, "_meta": meta})
        else:
            raise invalid_params(f"replayFrom {replay!r} is not supported by this agent")
        session = self.state.session(str(opening.get("sessionId")))
        self.conn.notify("session/update", _state_update(session.id, session.running))
        return {"configOptions": config_options_v2(answer.get("configOptions", []))}

    async def _set_config_option(self, params: Any) -> dict[str, Any]:
        v1 = dict(params) if isinstance(params, dict) else {}
        if v1.get("type") == "id":
            del v1["type"]
        answer = await self._v1("session/set_config_option", v1)
        return {"configOptions": config_options_v2(answer.get("configOptions", []))}

    async def _prompt(self, params: Any) -> dict[str, Any]:
        """Insert the message, answer with its id; the turn runs on (module docstring)."""
        parsed, fn = self._parsed("session/prompt", params)
        session = self.state.session(parsed.session_id)
        message_id = new_message_id()
        inserted = {
            "sessionUpdate": "user_message",
            "messageId": message_id,
            "content": params["prompt"],
        }
        for conn in _v2_clients(session):
            conn.notify("session/update", {"sessionId": session.id, "update": inserted})
            conn.notify("session/update", _state_update(session.id, True))
        task = asyncio.ensure_future(self._turn(session, fn, parsed))
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        return {"messageId": message_id}

    async def _turn(self, session: AcpSession, fn: Handler, parsed: Any) -> None:
        idle: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle"}
        try:
            answer = await fn(parsed)
            stop = answer.stop_reason if hasattr(answer, "stop_reason") else "end_turn"
            idle["stopReason"] = stop
        except (AcpError, RuntimeAgentError) as exc:
            from acp_server.errors import from_runtime

            error = exc if isinstance(exc, AcpError) else from_runtime(exc)
            idle |= {"stopReason": "error", "error": {"code": error.code, "message": error.message}}
        except Exception as exc:  # noqa: BLE001 - told to the client as the turn's error
            from acp_server.errors import INTERNAL_ERROR

            logger.exception("a v2 turn failed")
            idle |= {"stopReason": "error", "error": {"code": INTERNAL_ERROR, "message": str(exc)}}
        for conn in _v2_clients(session):
            conn.notify("session/update", {"sessionId": session.id, "update": idle})

    # ------------------------------------------------------------ messages out

    def notify(self, method: str, params: Any) -> None:
        if method == "session/update" and isinstance(params, dict):
            session_id = str(params.get("sessionId"))
            update = self.updates.update(session_id, params.get("update") or {})
            if update is None:
                return
            if update.get("sessionUpdate") == "state_update":
                self._states[session_id] = str(update.get("state"))
            if update.get("sessionUpdate") == "subagent_update":
                self._parents[str(update.get("sessionId"))] = session_id
            params = {**params, "update": update}
        self.conn.protocol.notify(method, params)

    async def request(self, method: str, params: Any, msg_id: str | None) -> Any:
        send = self.conn.protocol.send_request_async
        if method not in ASKING or not isinstance(params, dict):
            return await send(method, params, msg_id=msg_id)
        session_id = self._foreground(str(params.get("sessionId")))
        waiting = self._states.get(session_id) == "running"
        if waiting:
            self.notify("session/update", _state(session_id, "requires_action"))
        if method == "session/request_permission":
            params = permission_request_v2(params)
        answer = await send(method, params, msg_id=msg_id)
        if waiting and self._states.get(session_id) == "requires_action":
            self.notify("session/update", _state(session_id, "running"))
        return answer

    def _foreground(self, session_id: str) -> str:
        """The session whose foreground a question in `session_id` holds: its own, or for
        a subagent's child session the one the subagent runs in (nested too)."""
        seen = {session_id}
        while session_id not in self._states and session_id in self._parents:
            session_id = self._parents[session_id]
            if session_id in seen:
                break
            seen.add(session_id)
        return session_id


def _not_in_v1(name: str) -> Handler:
    async def not_found(params: Any) -> Any:
        raise AcpError(METHOD_NOT_FOUND, f"Method not found: {name}")

    return not_found


def _opening(params: Any) -> dict[str, Any]:
    """v2 session opening params as v1's: `mcpServers` always there, stdio entries untyped."""
    opening = dict(params) if isinstance(params, dict) else {}
    servers = opening.get("mcpServers") or []
    opening["mcpServers"] = [
        {"args": [], "env": [], **{k: v for k, v in s.items() if k != "type"}}
        if isinstance(s, dict) and s.get("type") == "stdio"
        else s
        for s in servers
    ]
    return opening


def _cursor(replay: dict[str, Any]) -> int | None:
    value = replay.get("cursor")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _state(session_id: str, state: str) -> dict[str, Any]:
    return {"sessionId": session_id, "update": {"sessionUpdate": "state_update", "state": state}}


def _state_update(session_id: str, running: bool) -> dict[str, Any]:
    return _state(session_id, "running" if running else "idle")


def _v2_clients(session: AcpSession) -> list[JsonRpcConnection]:
    """The v2 connections a session's updates reach: its one connection on stdio, its
    attached clients speaking v2 under `serve` (a v1 client there gets no v2-only update)."""
    link: Any = session.conn
    clients = getattr(link, "clients", None)
    return [c for c in (clients if clients is not None else [link]) if c.dialect is not None]
