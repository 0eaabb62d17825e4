"""`early.answer_session_new`: the `session/new` answered before the server has loaded."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from acp_server.early import answer_session_new
from acp_server.errors import AUTH_REQUIRED
from acp_server.stdio import Output
from runtime.config import AgentFlags


def _new(cwd: Path) -> str:
    params = {"cwd": str(cwd), "mcpServers": []}
    return json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})


def _sent(stream: io.BytesIO) -> dict[str, object]:
    (line,) = stream.getvalue().splitlines()
    return dict(json.loads(line))


def test_without_credentials_it_answers_auth_required_itself(tmp_path: Path) -> None:
    stream = io.BytesIO()
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    early = answer_session_new(_new(tmp_path).encode(), Output(stream), AgentFlags(), env)
    assert early is not None and early.refused
    answer = _sent(stream)
    assert answer["id"] == 2
    error = answer["error"]
    assert isinstance(error, dict) and error["code"] == AUTH_REQUIRED
    assert "GEMINI_API_KEY" in error["message"]


def test_with_a_key_it_answers_a_session(tmp_path: Path) -> None:
    stream = io.BytesIO()
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "GEMINI_API_KEY": "k"}
    early = answer_session_new(_new(tmp_path).encode(), Output(stream), AgentFlags(), env)
    assert early is not None and not early.refused
    result = _sent(stream)["result"]
    assert isinstance(result, dict) and result["sessionId"] == early.session_id


def test_answering_early_imports_only_the_light_modules(tmp_path: Path) -> None:
    """The answer is for the time pydantic, pygls and ADK load on other threads: in a
    fresh interpreter, it imports none of them (the errors' module included)."""
    home = tmp_path / "home"
    home.mkdir()
    script = (
        "import io, json, sys\n"
        "from acp_server.early import answer_session_new\n"
        "from acp_server.stdio import Output\n"
        "from runtime.config import AgentFlags\n"
        f"line = {_new(tmp_path)!r}.encode()\n"
        "for env in ({'HOME': sys.argv[1], 'GEMINI_API_KEY': 'k'}, {'HOME': sys.argv[1]}):\n"
        "    assert answer_session_new(line, Output(io.BytesIO()), AgentFlags(), env)\n"
        "heavy = ('pydantic', 'pygls', 'google', 'runtime.protocol')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "                        or m == 'runtime.protocol')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
