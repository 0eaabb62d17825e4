"""What a client that comes back learns about a hub session's turns (the remote
layer's `SessionHub`; issue 24).

- A turn whose prompting client is gone when it ends (the connection dropped, the
  turn ran on) is reported to whoever is attached, and into the channel's log, as a
  `session_info_update` carrying `_meta.adkAcp.turnState` (ACP v2's `state_update`
  words: `{"state": "idle", "stopReason": ...}`), so a client that resumes with
  `replayFrom` receives it after the updates it missed.
- Every turn's stop reason is kept in the record's metadata (`adkAcpLastTurn`), so
  another instance sharing the store knows it too.
- After a `session/load` or `session/resume` (and its replay), the client that asked
  is sent the current turn state (`running`, `requires_action` or `idle` with the
  last stop reason, a snapshot: not a new completion), which a resume's answer also
  carries in its `_meta`.
- A `replayFrom` cursor older than what this instance's channel logs
  (`SessionChannel.log_start`: since it opened, or since the oldest update it kept) is
  a time in the session's history: the record is replayed from there up to the log's
  start (`record_window`: after the last turn that ended by the cursor, as each turn's
  end is kept in the record, `adkAcpTurnEnds`), then the log; each update once, in
  order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from acp_server.errors import AcpError
from acp_server.handlers import METHODS
from acp_server.replay import ChildUpdate, replay_updates
from acp_server.transport import JsonRpcConnection, dump
from acp_server.updates import turn_state, turn_state_update

if TYPE_CHECKING:
    from acp_server.config_options import ConfigOptions
    from acp_server.remote.channel import SessionChannel
    from acp_server.session import AcpSession
    from acp_server.state import ServerState


class SessionHub(Protocol):
    """What this module reads of the hub (`hub.SessionHub`, which imports this one)."""

    @property
    def sessions(self) -> dict[str, AcpSession]: ...
    @property
    def channels(self) -> dict[str, SessionChannel]: ...
    def channel(self, session_id: str) -> SessionChannel: ...


class RemoteState(Protocol):
    """What this module reads of a client's state (`hub.RemoteState`)."""

    @property
    def hub(self) -> SessionHub: ...
    @property
    def remote_conn(self) -> JsonRpcConnection: ...
    @property
    def config_options(self) -> ConfigOptions: ...


logger = logging.getLogger(__name__)

LAST_TURN_KEY = "adkAcpLastTurn"
"""Record metadata: `{"stopReason": ...}` (or `{"error": ...}`) of the last turn."""
TURN_ENDS_KEY = "adkAcpTurnEnds"
"""Record metadata: `[cursor, messages]` per turn (the newest `TURN_ENDS_KEPT`): the
cursor of the turn's last update and how many messages the record held then, so a
client's cursor tells which turns it saw to their end (`record_window`)."""
TURN_ENDS_KEPT = 200


def reporting_prompt(
    state: ServerState, hub: SessionHub, conn: JsonRpcConnection
) -> Callable[[Any], Awaitable[Any]]:
    """`session/prompt`, whose end is kept and, when its client is gone, reported."""
    method = METHODS["session/prompt"]

    async def handler(params: Any) -> Any:
        try:
            answer = await method.handler(state, params)
        except AcpError as exc:
            turn_ended(hub, params.session_id, conn, {"error": exc.message})
            raise
        stop = dump(answer).get("stopReason")
        if isinstance(stop, str):
            turn_ended(hub, params.session_id, conn, {"stopReason": stop})
        return answer

    return handler


def turn_ended(
    hub: SessionHub, session_id: str, conn: JsonRpcConnection, end: dict[str, str]
) -> None:
    session = hub.sessions.get(session_id)
    if session is None or session.running:  # closed, or a queued message runs on
        return
    recorder = session.agent.recorder
    channel = hub.channels.get(session_id)
    if recorder is not None:
        recording = recorder.recording
        ends = recording.metadata.get(TURN_ENDS_KEY)
        ends = ends if isinstance(ends, list) else []
        if channel is not None:
            ends = [*ends, [channel.cursor, len(list(recording.messages))]][-TURN_ENDS_KEPT:]
        recording.set_metadata(**{LAST_TURN_KEY: end, TURN_ENDS_KEY: ends})
    if channel is not None and conn not in channel.clients:
        found = turn_state("idle", end.get("stopReason"), end.get("error"))
        update = turn_state_update(found)
        channel.notify("session/update", {"sessionId": session_id, "update": update})


def state_of(hub: SessionHub, session: AcpSession) -> dict[str, Any]:
    """The session's turn state now (see the module docstring)."""
    channel = hub.channels.get(session.id)
    if session.running:
        return turn_state("requires_action" if channel and channel.asking else "running")
    recorder = session.agent.recorder
    last = recorder.recording.metadata.get(LAST_TURN_KEY) if recorder is not None else None
    last = last if isinstance(last, dict) else {}
    stop, error = last.get("stopReason"), last.get("error")
    return turn_state(
        "idle", stop if isinstance(stop, str) else None, error if isinstance(error, str) else None
    )


def after_reopen(
    state: RemoteState, session_id: str, answer: Any, cursor: int | None, resumed: bool
) -> Any:
    """A load's or resume's end, sent to the asking client alone (inside `only_to`):
    what it missed from `cursor`, then the turn state; a resume's answer with it."""
    hub = state.hub
    session = hub.sessions.get(session_id)
    if session is None:
        return answer
    channel = hub.channel(session_id)
    if cursor is not None:
        if cursor < channel.log_start:
            replay_record_since(state, session, cursor, channel.log_start)
        channel.replay_since(state.remote_conn, cursor)
    found = state_of(hub, session)
    session.send_update(turn_state_update(found))
    if resumed and hasattr(answer, "model_copy"):
        meta = dict(answer.field_meta or {})
        meta["adkAcp"] = {**(meta.get("adkAcp") or {}), "turnState": found}
        return answer.model_copy(update={"field_meta": meta})
    return answer


def replay_record_since(state: RemoteState, session: AcpSession, cursor: int, until: int) -> None:
    """What the record holds between `cursor` and `until` (microseconds since the
    epoch; from `until` on the channel's log has every update), see `record_window`."""
    recorder = session.agent.recorder
    if recorder is None:
        return
    recording = recorder.recording
    messages = list(recording.messages)
    ends = recording.metadata.get(TURN_ENDS_KEY)
    start, end = record_window(messages, cursor, until, ends if isinstance(ends, list) else None)
    for update in replay_updates(
        messages[start:end],
        recording.metadata,
        mode=session.agent.mode,
        config_options=state.config_options.options(session.agent),
        client=session.client,
        plans=session.plans,
    ):
        if not isinstance(update, ChildUpdate):
            session.send_update(update)


def record_window(
    messages: list[Any], cursor: int, until: int, ends: list[Any] | None = None
) -> tuple[int, int]:
    """The record's messages a client that saw everything up to `cursor` is missing,
    up to `until` (what the channel's log holds from then on is sent from the log).
    It starts after the last turn that ended at or before `cursor` (`ends`: the
    `TURN_ENDS_KEY` pairs, each turn's last update's cursor and the record's length
    then), else at the prompt of the turn running at `cursor` (the record has no finer
    steps than a message); it stops at the first message recorded at or after `until`."""
    start = first_of_turn_at(messages, cursor)
    for end in ends or []:
        if (
            isinstance(end, list) and len(end) == 2 and all(isinstance(n, int) for n in end)
            and end[0] <= cursor and start <= end[1] <= len(messages)
        ):  # fmt: skip
            start = end[1]
    stop = _at(until)
    end_index = next(
        (i for i in range(start, len(messages)) if (t := _time(messages[i].get("timestamp")))
         is not None and t >= stop),
        len(messages),
    )  # fmt: skip
    return start, end_index


def first_of_turn_at(messages: list[Any], cursor: int) -> int:
    """The index of the user message that started the turn running at `cursor` (the
    last one recorded at or before it); 0 if none was."""
    at = _at(cursor)
    start = 0
    for index, message in enumerate(messages):
        if message.get("type") != "user":
            continue
        stamp = _time(message.get("timestamp"))
        if stamp is None or stamp > at:
            break
        start = index
    return start


def _at(cursor: int) -> datetime:
    return datetime.fromtimestamp(cursor / 1_000_000, UTC)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
