"""Settings, model resolution and credentials, as Gemini CLI resolves them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.config import DEFAULT_MODEL, AgentFlags, resolve_auth, resolve_config
from runtime.errors import AuthRequiredError, ConfigError


def _settings(folder: Path, data: dict[str, object]) -> None:
    (folder / ".gemini").mkdir(parents=True, exist_ok=True)
    (folder / ".gemini" / "settings.json").write_text(json.dumps(data))


def test_model_precedence(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    assert resolve_config(ws, AgentFlags(), env={}, home=home).model == DEFAULT_MODEL
    _settings(home, {"model": {"name": "user-model"}})
    assert resolve_config(ws, AgentFlags(), env={}, home=home).model == "user-model"
    _settings(ws, {"model": {"name": "ws-model"}})
    assert resolve_config(ws, AgentFlags(), env={}, home=home).model == "ws-model"
    assert (
        resolve_config(ws, AgentFlags(), env={"GEMINI_MODEL": "env-model"}, home=home).model
        == "env-model"
    )
    flagged = resolve_config(
        ws, AgentFlags(model="flag-model"), env={"GEMINI_MODEL": "e"}, home=home
    )
    assert flagged.model == "flag-model"


def test_settings_allow_comments_and_reject_garbage(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(
        '{\n // a comment\n "model": {"name": "a//b"}}'
    )
    assert resolve_config(tmp_path, AgentFlags(), env={}, home=tmp_path / "h").model == "a//b"
    (tmp_path / ".gemini" / "settings.json").write_text("{nope")
    with pytest.raises(ConfigError):
        resolve_config(tmp_path, AgentFlags(), env={}, home=tmp_path / "h")


def test_limits_from_settings_and_flags(tmp_path: Path) -> None:
    _settings(tmp_path, {"model": {"maxSessionTurns": 7}})
    cfg = resolve_config(tmp_path, AgentFlags(max_time_s=30), env={}, home=tmp_path / "h")
    assert cfg.limits.max_turns == 7 and cfg.limits.max_time_s == 30


def test_auth_resolution() -> None:
    assert resolve_auth({"GEMINI_API_KEY": "k"}).kind == "api_key"
    assert resolve_auth({"GOOGLE_API_KEY": "g"}).api_key == "g"
    base = resolve_auth({"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"})
    assert base.base_url == "http://127.0.0.1:9"
    vertex = resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"})
    assert (vertex.kind, vertex.project, vertex.location) == ("vertex", "p", "global")
    assert resolve_auth({}, fake_responses=Path("x")).kind == "fake"
    assert resolve_auth({}, api_key_override="meta").api_key == "meta"
    with pytest.raises(AuthRequiredError, match="GEMINI_API_KEY"):
        resolve_auth({})
    with pytest.raises(AuthRequiredError, match="GOOGLE_CLOUD_PROJECT"):
        resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "1"})
