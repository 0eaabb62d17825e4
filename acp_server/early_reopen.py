"""`session/load` and `session/resume` answered before the server has loaded (the cold
path of an editor that reopens its last thread right after `initialize`, as Zed does).

While the loader thread imports pygls and the engine, a plain load or resume of a
session recorded in the JSONL files is answered from here, from the record alone: the
replay (`replay.py`, the very updates the full handler sends), then the answer with the
recorded mode and model. The engine behind it is opened from the record as soon as the
server is up (`handlers.sessions.open_early`), before any later line is handled, so a
prompt simply waits for what remains of it; the slash commands are announced then.
Anything else (a PostgreSQL store, a Gemini CLI chat not yet imported, an unknown id,
another workspace, missing credentials, bad settings) is left to the full handler, which
answers with the proper error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from acp_server.early import EarlySession, plain_request
from acp_server.stdio import Output

if TYPE_CHECKING:
    from runtime.config import RuntimeConfig
    from runtime.services.recording import ConversationRecord, SessionStore

logger = logging.getLogger(__name__)

REOPEN_METHODS = ("session/load", "session/resume")


def answer_session_reopen(
    line: bytes, output: Output, flags: Any, env: dict[str, str], init_params: dict[str, Any]
) -> EarlySession | None:
    """Answer `line` if it is a plain load or resume of a recorded session (see the
    module docstring); None leaves it to the server."""
    plain = plain_request(line, REOPEN_METHODS, frozenset({"sessionId"}))
    if plain is None:
        return None
    request_id, method, params, cwd = plain
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None
    from runtime.config import resolve_auth, resolve_config, resolve_sessions_dir, resolve_store_url
    from runtime.errors import RuntimeAgentError
    from runtime.services.recording import SessionStore

    home = Path(env.get("HOME") or Path.home())
    try:
        if resolve_store_url(flags, env, home) is not None:
            return None  # a database: its lease is taken by the engine's open
        resolve_auth(env, fake_responses=flags.fake_responses)
        config = resolve_config(cwd, flags, env=env)
        files = SessionStore(resolve_sessions_dir(flags, env, home))
    except RuntimeAgentError:
        return None
    try:  # a record the replay cannot read is the server's to answer, with its error
        lines = _answer_lines(request_id, method, files, session_id, cwd, config, init_params)
    except Exception:  # noqa: BLE001 - nothing is sent yet: the full handler answers
        logger.exception("session %s left to the server", session_id)
        return None
    if lines is None:
        return None
    for message in lines:
        output.send(message)
    return EarlySession(session_id=session_id, params=params, method=method)


def _answer_lines(
    request_id: str | int,
    method: str,
    files: SessionStore,
    session_id: str,
    cwd: Path,
    config: RuntimeConfig,
    init_params: dict[str, Any],
) -> list[dict[str, Any]] | None:
    """The replay's notifications and the answer, all built before any is sent; None
    when the record is not there or belongs to another workspace."""
    from runtime.services.recording import load_record

    path = files.find(session_id)
    if path is None:
        return None
    record = load_record(path)
    if record.cwd is not None and Path(record.cwd) != cwd:
        return None
    config = config.restored(record.metadata)
    view = SimpleNamespace(mode=config.approval_mode, model_choice=config.model)
    from acp_server.config_options import ConfigOptions

    options = ConfigOptions()
    lines: list[dict[str, Any]] = []
    if method == "session/load":
        lines = _replay(files, record, config.approval_mode, options.options(view), init_params)  # type: ignore[arg-type]
    result = {
        "modes": options.modes(view),  # type: ignore[arg-type]
        "configOptions": options.options(view),  # type: ignore[arg-type]
    }
    return [*lines, {"jsonrpc": "2.0", "id": request_id, "result": result}]


def _replay(
    files: SessionStore,
    record: ConversationRecord,
    mode: str,
    config_options: list[dict[str, Any]],
    init_params: dict[str, Any],
) -> list[dict[str, Any]]:
    """The record's `session/update`s, as `handlers.sessions.load_session` sends them."""
    import asyncio

    from acp_server.replay import ChildUpdate, replay_updates
    from acp_server.schema.base import dump
    from acp_server.updates import ClientUpdates
    from runtime.services.session_store import FileRecordStore, subagent_records

    caps = init_params.get("clientCapabilities")
    client = ClientUpdates.of(caps if isinstance(caps, dict) else {})
    runs = (
        asyncio.run(subagent_records(FileRecordStore(files), record.messages))
        if client.subagents
        else {}
    )
    lines: list[dict[str, Any]] = []
    for update in replay_updates(
        record.messages,
        record.metadata,
        mode=mode,
        config_options=config_options,
        client=client,
        children=lambda child_id: runs.get(child_id, ()),
    ):
        session_id, shown = (
            (update.session_id, update.update)
            if isinstance(update, ChildUpdate)
            else (record.session_id, update)
        )
        params = {"sessionId": session_id, "update": dump(shown)}
        lines.append({"jsonrpc": "2.0", "method": "session/update", "params": params})
    return lines
