"""`early_reopen.answer_session_reopen`: a load or resume answered from the record before
the server has loaded, and what it leaves to the server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from acp_server.early_reopen import answer_session_reopen
from acp_server.stdio import Output
from runtime.config import AgentFlags
from runtime.services.recording import SessionStore

SESSION = "a" * 32
INIT: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True)
    env = {"HOME": str(home), "GEMINI_API_KEY": "k"}
    store = SessionStore(home / ".local" / "state" / "adk-acp" / "sessions")
    recording = store.create(SESSION, workspace)
    recording.record_message({"type": "user", "content": [{"text": "hello"}]})
    recording.record_message({"type": "gemini", "id": "m1", "content": "Hi there."})
    recording.set_metadata(title="hello", mode="plan")
    recording.close()
    return workspace, env


def _line(method: str, workspace: Path, session_id: str = SESSION) -> bytes:
    params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()


def _answer(
    line: bytes, env: dict[str, str], flags: AgentFlags | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    stream = io.BytesIO()
    early = answer_session_reopen(line, Output(stream), flags or AgentFlags(), env, INIT)
    return early, [json.loads(raw) for raw in stream.getvalue().splitlines()]


def test_a_load_replays_the_record_then_answers_with_its_mode(tmp_path: Path) -> None:
    workspace, env = _setup(tmp_path)
    early, sent = _answer(_line("session/load", workspace), env)
    assert early is not None and early.session_id == SESSION and early.method == "session/load"
    *updates, answer = sent
    assert answer["id"] == 7 and answer["result"]["modes"]["currentModeId"] == "plan"
    kinds = [u["params"]["update"]["sessionUpdate"] for u in updates]
    assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
    assert {"session_info_update", "current_mode_update", "config_option_update"} <= set(kinds)
    assert all(u["method"] == "session/update" for u in updates)
    assert all(u["params"]["sessionId"] == SESSION for u in updates)


def test_a_resume_answers_without_replay(tmp_path: Path) -> None:
    workspace, env = _setup(tmp_path)
    early, sent = _answer(_line("session/resume", workspace), env)
    assert early is not None and early.method == "session/resume"
    [answer] = sent
    assert answer["result"]["modes"]["currentModeId"] == "plan"


def test_what_the_record_cannot_answer_is_left_to_the_server(tmp_path: Path) -> None:
    workspace, env = _setup(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    left = [
        _answer(_line("session/load", workspace, "b" * 32), env),  # unknown id
        _answer(_line("session/load", elsewhere), env),  # another workspace's
        _answer(_line("session/load", workspace), {"HOME": env["HOME"]}),  # no credentials
        _answer(_line("session/load", workspace), env, AgentFlags(store="postgresql://h/db")),
        _answer(_line("session/prompt", workspace), env),
    ]
    assert left == [(None, [])] * len(left)


def test_a_record_the_replay_cannot_read_sends_nothing_and_is_left_to_the_server(
    tmp_path: Path,
) -> None:
    workspace, env = _setup(tmp_path)
    store = SessionStore(Path(env["HOME"]) / ".local" / "state" / "adk-acp" / "sessions")
    path = store.find(SESSION)
    assert path is not None
    bad_call = {"id": "c1", "name": "read_file", "locations": [{"path": "a", "line": "x"}]}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"type": "gemini", "id": "m2", "toolCalls": [bad_call]}) + "\n")
    assert _answer(_line("session/load", workspace), env) == (None, [])
