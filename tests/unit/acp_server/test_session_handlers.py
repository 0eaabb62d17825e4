"""The session lifecycle handlers against a fake connection, in process (real sessions on
a scripted model, a temporary store): new, load, resume, fork, list, close, delete,
the early `session/new`, the mode handlers and the table `server.py` installs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_server import schema
from acp_server.early import EarlySession
from acp_server.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, AcpError
from acp_server.handlers import METHODS, NOTIFICATIONS, modes, sessions
from acp_server.server import serve_on
from acp_server.state import ServerOptions, ServerState
from runtime.config import AgentFlags
from runtime.errors import ConfigError
from runtime.services.recording import load_record
from runtime.session.paths import outputs_dir
from runtime.workspace import WorkspaceError
from tests.unit.acp_server.fake_conn import FakeConn


@pytest.fixture
async def state(tmp_path: Path) -> AsyncIterator[ServerState]:
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    script = tmp_path / "model.jsonl"
    script.write_text("")
    flags = AgentFlags(fake_responses=script, sessions_dir=tmp_path / "sessions")
    conn = FakeConn()
    server = serve_on(conn, ServerOptions(flags=flags, env={"HOME": str(home)}, home=home))  # type: ignore[arg-type]
    server.mark_initialized({"clientCapabilities": {}})
    yield server
    await server.shutdown()


def _conn(state: ServerState) -> FakeConn:
    assert isinstance(state.conn, FakeConn)
    return state.conn


def _cwd(state: ServerState) -> str:
    home = state.options.home
    assert home is not None
    return str(home.parent / "work")


async def _new(state: ServerState, **extra: Any) -> str:
    params = schema.NewSessionRequest(cwd=_cwd(state), mcp_servers=[], **extra)
    answer = await sessions.new_session(state, params)
    return answer.session_id


def _recorded(state: ServerState, title: str | None = "Fix the bug") -> str:
    """A session recorded earlier (one exchange), not open in this process."""
    recording = state.service.store().create("old-1", Path(_cwd(state)))
    recording.record_message({"id": "u1", "type": "user", "content": [{"text": "hello"}]})
    recording.record_message({"id": "g1", "type": "gemini", "content": "hi there"})
    recording.set_metadata(mode="plan", **({"title": title} if title else {}))
    recording.close()
    return "old-1"


def test_the_table_holds_every_method_and_server_installs_it(state: ServerState) -> None:
    conn = _conn(state)
    assert set(conn.methods) == set(METHODS)
    assert set(conn.notifications) == set(NOTIFICATIONS) == {"session/cancel"}
    assert {"initialize", "session/new", "session/load", "session/prompt"} <= set(METHODS)
    assert issubclass(conn.methods["session/new"][0], schema.NewSessionRequest)  # + systemPrompt


async def test_new_answers_modes_and_options_and_announces_the_commands(
    state: ServerState,
) -> None:
    answer = await sessions.new_session(
        state, schema.NewSessionRequest(cwd=_cwd(state), mcp_servers=[])
    )
    data = answer.model_dump(by_alias=True, exclude_none=True)
    assert data["modes"]["currentModeId"] == "default"
    assert [o["id"] for o in data["configOptions"]] == ["mode", "model"]
    session = state.session(answer.session_id)
    assert session.agent.recorder is not None  # recorded from the start
    assert _conn(state).update_kinds(answer.session_id) == ["available_commands_update"]


async def test_new_with_a_relative_or_missing_cwd_is_refused(state: ServerState) -> None:
    with pytest.raises(WorkspaceError, match="must be an absolute path"):
        await sessions.new_session(state, schema.NewSessionRequest(cwd="rel", mcp_servers=[]))
    with pytest.raises(WorkspaceError, match="does not exist"):
        await sessions.new_session(
            state, schema.NewSessionRequest(cwd=_cwd(state) + "/nope", mcp_servers=[])
        )
    assert state.sessions == {}


async def test_load_replays_the_record_then_answers_with_the_recorded_mode(
    state: ServerState,
) -> None:
    session_id = _recorded(state)
    params = schema.LoadSessionRequest(session_id=session_id, cwd=_cwd(state), mcp_servers=[])
    answer = await sessions.load_session(state, params)
    assert answer.modes is not None and answer.modes.current_mode_id == "plan"
    kinds = _conn(state).update_kinds(session_id)
    assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
    assert kinds[-1] == "available_commands_update"
    assert state.session(session_id).agent.mode == "plan"


async def test_a_second_load_finds_the_live_session_and_resume_does_not_replay(
    state: ServerState,
) -> None:
    session_id = _recorded(state)
    load = schema.LoadSessionRequest(session_id=session_id, cwd=_cwd(state), mcp_servers=[])
    await sessions.load_session(state, load)
    first = state.session(session_id)
    _conn(state).sent.clear()
    resume = schema.ResumeSessionRequest(session_id=session_id, cwd=_cwd(state), mcp_servers=[])
    await sessions.resume_session(state, resume)
    assert state.session(session_id) is first
    assert _conn(state).update_kinds(session_id) == ["available_commands_update"]


async def test_load_of_an_unknown_id_or_from_another_workspace_is_refused(
    state: ServerState, tmp_path: Path
) -> None:
    unknown = schema.LoadSessionRequest(session_id="nope", cwd=_cwd(state), mcp_servers=[])
    with pytest.raises(AcpError) as missing:
        await sessions.load_session(state, unknown)
    assert (missing.value.code, missing.value.data) == (RESOURCE_NOT_FOUND, {"sessionId": "nope"})
    session_id = _recorded(state)
    elsewhere = schema.LoadSessionRequest(session_id=session_id, cwd=str(tmp_path), mcp_servers=[])
    with pytest.raises(AcpError) as wrong:
        await sessions.load_session(state, elsewhere)
    assert wrong.value.code == INVALID_PARAMS
    assert wrong.value.data == {"sessionId": session_id, "cwd": _cwd(state)}
    assert state.sessions == {}


async def test_fork_copies_the_record_into_a_new_session(state: ServerState) -> None:
    source = _recorded(state)
    params = schema.ForkSessionRequest(session_id=source, cwd=_cwd(state), mcp_servers=[])
    answer = await sessions.fork_session(state, params)
    assert answer.session_id != source
    path = state.service.store().find(answer.session_id)
    assert path is not None
    record = load_record(path)
    assert [m["id"] for m in record.messages] == ["u1", "g1"]
    assert record.metadata["forkedFrom"] == source
    assert record.title == "Fix the bug (fork)"
    assert record.metadata["mode"] == "plan"


async def test_list_pages_newest_first_with_a_cursor(
    state: ServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runtime.session.service.PAGE_SIZE", 2)
    ids = [await _new(state) for _ in range(3)]
    first = await sessions.list_sessions(state, schema.ListSessionsRequest(cwd=_cwd(state)))
    assert len(first["sessions"]) == 2 and "nextCursor" in first
    assert first["sessions"][0]["title"] is None  # untitled: null on the wire
    rest = await sessions.list_sessions(
        state, schema.ListSessionsRequest(cwd=_cwd(state), cursor=first["nextCursor"])
    )
    assert "nextCursor" not in rest
    listed = [s["sessionId"] for s in first["sessions"] + rest["sessions"]]
    assert sorted(listed) == sorted(ids)
    with pytest.raises(ConfigError, match="cursor is not one this agent gave out"):
        await sessions.list_sessions(state, schema.ListSessionsRequest(cursor="bad"))


async def test_close_ends_the_session_and_an_unknown_close_is_not_found(
    state: ServerState,
) -> None:
    session_id = await _new(state)
    await sessions.close_session(state, schema.CloseSessionRequest(session_id=session_id))
    assert session_id not in state.sessions
    with pytest.raises(AcpError) as again:
        await sessions.close_session(state, schema.CloseSessionRequest(session_id=session_id))
    assert again.value.code == RESOURCE_NOT_FOUND


async def test_delete_removes_the_record_and_the_tool_outputs(state: ServerState) -> None:
    session_id = await _new(state)
    outputs = outputs_dir(state.session(session_id).agent.config.temp_dir, session_id)
    outputs.mkdir(parents=True)
    (outputs / "full.txt").write_text("a long output")
    await sessions.delete_session(state, schema.DeleteSessionRequest(session_id=session_id))
    assert session_id not in state.sessions
    assert state.service.store().find(session_id) is None
    assert not outputs.exists()
    with pytest.raises(AcpError) as again:
        await sessions.delete_session(state, schema.DeleteSessionRequest(session_id=session_id))
    assert again.value.code == RESOURCE_NOT_FOUND


async def test_an_early_session_is_built_under_its_id_or_its_failure_is_told(
    state: ServerState,
) -> None:
    await sessions.open_early(
        state, EarlySession("early-1", {"cwd": _cwd(state), "mcpServers": []})
    )
    assert state.session("early-1").id == "early-1"
    await sessions.open_early(
        state, EarlySession("early-2", {"cwd": "/no/such/dir", "mcpServers": []})
    )
    with pytest.raises(AcpError) as told:
        state.session("early-2")
    assert told.value.code == INTERNAL_ERROR
    assert "does not exist or is not a directory" in told.value.message


async def test_set_mode_and_config_options_change_the_agent_and_tell_the_editor(
    state: ServerState,
) -> None:
    session_id = await _new(state)
    conn = _conn(state)
    conn.sent.clear()
    await modes.set_mode(state, schema.SetSessionModeRequest(session_id=session_id, mode_id="plan"))
    assert state.session(session_id).agent.mode == "plan"
    assert conn.update_kinds(session_id) == ["config_option_update"]
    conn.sent.clear()
    answer = await modes.set_config_option(
        state, modes.SetConfigOptionRequest(sessionId=session_id, configId="mode", value="default")
    )
    assert conn.update_kinds(session_id) == ["current_mode_update"]
    current = answer.model_dump(by_alias=True, exclude_none=True)["configOptions"][0]
    assert current["currentValue"] == "default"
    with pytest.raises(AcpError) as bad:
        await modes.set_mode(
            state, schema.SetSessionModeRequest(session_id=session_id, mode_id="x")
        )
    assert bad.value.code == INVALID_PARAMS
