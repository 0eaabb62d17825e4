"""Shared set-up for the model-resilience end-to-end tests (`test_resilience_*.py`, issue #4).

Each test starts the real `adk-acp` process (`python -m acp_server.cli`) with an
isolated HOME (`tmp_path/home`) and workspace (`tmp_path/ws`), an environment
cleared of the developer's Gemini/Vertex settings, the fake Gemini server (in the
test's loop) as its model, and `ADK_ACP_RETRY_DELAY_SCALE=0.001` so the retry
pauses (5-30 s for real) take milliseconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, AcpTestClient, JsonObject
from tests.fakes.gemini_server import FakeGeminiServer, RecordedRequest

AGENT = AGENT_COMMAND
MakeAgent = Callable[..., Awaitable[AcpTestClient]]


PRO = "gemini-2.5-pro"
FLASH = "gemini-2.5-flash"
FLASH_LITE = "gemini-2.5-flash-lite"


@dataclass
class Agent:
    """A started agent with one session."""

    client: AcpTestClient
    session_id: str
    session: JsonObject
    home: Path
    workspace: Path

    async def prompt(self, text: str, *, timeout: float | None = None) -> JsonObject:
        return await self.client.prompt(self.session_id, text, timeout=timeout)

    def text(self) -> str:
        return self.client.text_of(self.session_id)

    def updates(self, kind: str | None = None) -> list[JsonObject]:
        return self.client.updates(self.session_id, kind)


def agent_env(home: Path, fake: FakeGeminiServer, **extra: str | None) -> dict[str, str | None]:
    env: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GEMINI_API_KEY="x",
        GOOGLE_GEMINI_BASE_URL=fake.base_url,
        ADK_ACP_RETRY_DELAY_SCALE="0.001",
    )
    env.update(extra)
    return env


async def start(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    *,
    args: Sequence[str] = (),
    settings: str | None = None,
    env: dict[str, str | None] | None = None,
    **client_options: Any,
) -> Agent:
    """Start `adk-acp` on the fake server, initialize, and open one session in `tmp_path/ws`.

    `settings` is written to `HOME/.gemini/settings.json`; `client_options` go to
    `AcpTestClient` (`permission_policy`, `elicitation_policy`, ...).
    """
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    if settings is not None:
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(settings, encoding="utf-8")
    client = await make_agent(
        [*AGENT, *args], {**agent_env(home, fake), **(env or {})}, **client_options
    )
    await client.initialize()
    session = await client.new_session(workspace.resolve())
    return Agent(client, session["sessionId"], session, home, workspace.resolve())


def model_option(config_options: Sequence[JsonObject]) -> JsonObject:
    """The config option of category `model`."""
    return next(o for o in config_options if o.get("category") == "model")


def function_responses(request: RecordedRequest) -> list[JsonObject]:
    """Every `functionResponse` part in the request's history, oldest first."""
    return [
        part["functionResponse"]
        for content in request.contents
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def function_calls(request: RecordedRequest) -> list[JsonObject]:
    """Every `functionCall` part in the request's history, oldest first."""
    return [
        part["functionCall"]
        for content in request.contents
        for part in content.get("parts", [])
        if "functionCall" in part
    ]


def user_texts(request: RecordedRequest) -> list[str]:
    """The text of each plain user turn (no function responses) in the request."""
    out: list[str] = []
    for content in request.contents:
        if content.get("role", "user") != "user":
            continue
        texts = [p["text"] for p in content.get("parts", []) if "text" in p]
        if texts:
            out.append("".join(texts))
    return out
