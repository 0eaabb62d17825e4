"""The session lifecycle over ACP: `session/new`, `load`, `resume`, `fork`, `list`,
`close`, `delete`, and the engine of a `session/new`, `load` or `resume` answered early
(`early.py`, `early_reopen.py`).

The work is the `SessionService`'s (`runtime.session.service`); these turn its
answers into ACP ones. `load` replays the record as `session/update`s and answers
after the last one; `resume` reopens without replay; `fork` opens a copy of the
record. An unknown id is answered with -32002 and nothing is created.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acp_server import schema
from acp_server.errors import AcpError, from_runtime, invalid_params, session_not_found
from acp_server.replay import ChildUpdate, replay_updates
from acp_server.system_prompt import client_prompt_of
from runtime.errors import RuntimeAgentError
from runtime.session import SessionNotFoundError, WrongWorkspaceError

if TYPE_CHECKING:
    from acp_server.early import EarlySession
    from acp_server.session import AcpSession
    from acp_server.state import ServerState
    from runtime.services.recording import ConversationRecord, SessionSummary

logger = logging.getLogger(__name__)


def acp_error(exc: SessionNotFoundError | WrongWorkspaceError) -> AcpError:
    """The lifecycle's own errors as ACP answers (-32002 with the id; -32602 with the
    workspace the session belongs to)."""
    if isinstance(exc, SessionNotFoundError):
        return session_not_found(exc.session_id)
    return invalid_params(str(exc), {"sessionId": exc.session_id, "cwd": exc.workspace})


def _answer(state: ServerState, session: AcpSession) -> dict[str, Any]:
    return {
        "modes": state.config_options.modes(session.agent),
        "configOptions": state.config_options.options(session.agent),
    }


async def new_session(
    state: ServerState, params: schema.NewSessionRequest
) -> schema.NewSessionResponse:
    session_id = uuid.uuid4().hex
    request = state.open_request(
        params.cwd, params.additional_directories, params.mcp_servers, client_prompt_of(params)
    )
    session = state.adopt(await state.service.open(session_id, request))
    session.announce_commands()
    return schema.NewSessionResponse.model_validate(
        {"sessionId": session_id, **_answer(state, session)}
    )


async def _reopen(
    state: ServerState, params: schema.LoadSessionRequest | schema.ResumeSessionRequest
) -> tuple[AcpSession, ConversationRecord]:
    """The live session, or one opened from its record (one at a time per id)."""
    request = state.open_request(
        params.cwd, params.additional_directories, params.mcp_servers, client_prompt_of(params)
    )
    async with state.one_at_a_time(params.session_id):
        live = state.sessions.get(params.session_id)
        try:
            agent, record = await state.service.reopen(
                params.session_id, request, live.agent if live else None
            )
        except (SessionNotFoundError, WrongWorkspaceError) as exc:
            raise acp_error(exc) from exc
        return live or state.adopt(agent), record


async def load_session(
    state: ServerState, params: schema.LoadSessionRequest
) -> schema.LoadSessionResponse:
    session, record = await _reopen(state, params)
    options = state.config_options.options(session.agent)
    runs = await state.service.subagent_records(record.messages) if session.client.subagents else {}
    for update in replay_updates(
        record.messages,
        record.metadata,
        mode=session.agent.mode,
        config_options=options,
        client=session.client,
        plans=session.plans,
        children=lambda child_id: runs.get(child_id, ()),
    ):
        if isinstance(update, ChildUpdate):
            session.conn.notify(
                "session/update", {"sessionId": update.session_id, "update": update.update}
            )
        else:
            session.send_update(update)
    session.announce_commands()
    return schema.LoadSessionResponse.model_validate(_answer(state, session))


async def resume_session(
    state: ServerState, params: schema.ResumeSessionRequest
) -> schema.ResumeSessionResponse:
    session, _ = await _reopen(state, params)
    session.announce_commands()
    return schema.ResumeSessionResponse.model_validate(_answer(state, session))


async def fork_session(
    state: ServerState, params: schema.ForkSessionRequest
) -> schema.ForkSessionResponse:
    request = state.open_request(
        params.cwd, params.additional_directories, params.mcp_servers, client_prompt_of(params)
    )
    source = state.sessions.get(params.session_id)
    try:
        agent = await state.service.fork(
            params.session_id, request, source.agent if source else None
        )
    except (SessionNotFoundError, WrongWorkspaceError) as exc:
        raise acp_error(exc) from exc
    session = state.adopt(agent)
    session.announce_commands()
    return schema.ForkSessionResponse.model_validate(
        {"sessionId": agent.id, **_answer(state, session)}
    )


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _listed(summary: SessionSummary) -> dict[str, Any]:
    """One `SessionInfo`, as a plain dict: an untitled session keeps `"title": null`."""
    return {
        "sessionId": summary.session_id,
        "cwd": summary.cwd,
        "title": summary.title,
        "updatedAt": _iso(summary.updated_at),
        **({"_meta": {"source": summary.source}} if summary.source != "adk-acp" else {}),
        **(
            {"additionalDirectories": list(summary.additional_directories)}
            if summary.additional_directories
            else {}
        ),
    }


async def list_sessions(state: ServerState, params: schema.ListSessionsRequest) -> dict[str, Any]:
    """Newest first, a page at a time (the answer is a plain dict, see `_listed`)."""
    page = await state.service.list(params.cwd, params.cursor)
    result: dict[str, Any] = {"sessions": [_listed(s) for s in page.sessions]}
    if page.next_cursor is not None:
        result["nextCursor"] = page.next_cursor
    return result


async def close_session(
    state: ServerState, params: schema.CloseSessionRequest
) -> schema.CloseSessionResponse:
    session = state.sessions.pop(params.session_id, None)
    if session is None:
        raise session_not_found(params.session_id)
    await session.close()
    return schema.CloseSessionResponse()


async def delete_session(
    state: ServerState, params: schema.DeleteSessionRequest
) -> schema.DeleteSessionResponse:
    session = state.sessions.pop(params.session_id, None)
    if session is not None:
        await session.close()
    if not await state.service.remove(params.session_id) and session is None:
        raise session_not_found(params.session_id)
    return schema.DeleteSessionResponse()


async def open_early(state: ServerState, early: EarlySession) -> None:
    """The engine of a `session/new`, `load` or `resume` answered before the server was up
    (`early.py`, `early_reopen.py`); if it cannot be built, later requests about it are
    told why."""
    try:
        if early.method == "session/new":
            params = schema.NewSessionRequest.model_validate(early.params)
            request = state.open_request(
                params.cwd, params.additional_directories, params.mcp_servers
            )
            session = state.adopt(await state.service.open(early.session_id, request))
        else:
            reopened = (
                schema.LoadSessionRequest
                if early.method == "session/load"
                else schema.ResumeSessionRequest
            ).model_validate(early.params)
            session, record = await _reopen(state, reopened)
            if early.method == "session/load":
                session.plans.replay(record.metadata)  # the plans the early replay showed
    except Exception as exc:  # noqa: BLE001 - told to whoever uses the session next
        logger.exception("the early session %s could not be built", early.session_id)
        told = from_runtime(exc) if isinstance(exc, RuntimeAgentError) else exc
        state.failed_sessions[early.session_id] = getattr(told, "message", None) or str(exc)
        return
    session.announce_commands()
