"""AgentSession and the session factory (design: AgentSession, session factory).

`create_session(spec)` builds one session's engine: the ContentGenerator (shared
per process and credentials), the GcliAgentModel, the agent with its ordered
request processors, the plugins for the session's kind, the Runner on a
GcliSessionService, and the AdkAgentProtocol on top. The returned
`AgentSession` owns all of it and closes it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runtime.config import DEFAULT_CONTEXT_WINDOW, AuthConfig, RuntimeConfig
from runtime.host import Host
from runtime.models.content_generator import ContentGenerator

logger = logging.getLogger(__name__)

APP_NAME = "adk_acp"
USER_ID = "user"

SessionKind = Literal["main", "subagent"]
_MODES = ("default", "autoEdit", "yolo", "plan")

_generators: dict[tuple[Any, ...], ContentGenerator] = {}


def content_generator_for(auth: AuthConfig, record_to: Path | None = None) -> ContentGenerator:
    """One generator per credentials (and recording file) per process."""
    key = (auth, record_to)
    cached = _generators.get(key)
    if cached is not None:
        return cached
    generator: ContentGenerator
    if auth.kind == "fake":
        from runtime.models.fake_generator import FakeContentGenerator

        assert auth.fake_responses is not None
        generator = FakeContentGenerator(auth.fake_responses)
    else:
        from runtime.models.genai_generator import GenaiContentGenerator

        generator = GenaiContentGenerator(auth)
    if record_to is not None:
        from runtime.models.recording_generator import RecordingContentGenerator

        generator = RecordingContentGenerator(generator, record_to)
    _generators[key] = generator
    return generator


@dataclass
class SessionSpec:
    """What a new session is made of. `generator` overrides the credentials (tests)."""

    config: RuntimeConfig
    auth: AuthConfig | None
    host: Host
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    additional_roots: tuple[Path, ...] = ()
    generator: ContentGenerator | None = None
    kind: SessionKind = "main"


class AgentSession:
    """One session's engine and everything it owns."""

    def __init__(self, spec: SessionSpec, generator: ContentGenerator) -> None:
        from runtime.adk.agent import GcliLlmAgent
        from runtime.adk.agent_protocol import AdkAgentProtocol
        from runtime.adk.model import GcliAgentModel
        from runtime.adk.session_service import GcliSessionService
        from runtime.prompt import build_system_prompt

        self.spec = spec
        self.id = spec.session_id
        self.config = spec.config
        self.model_choice = spec.config.model
        self.model_name = "gemini-2.5-pro" if spec.config.model == "auto" else spec.config.model
        self.mode = spec.config.approval_mode if spec.config.approval_mode in _MODES else "default"
        self.roots = (spec.config.workspace, *spec.additional_roots)
        self.generator = generator
        system_prompt = build_system_prompt(
            spec.config.workspace, spec.config.home, extra_roots=spec.additional_roots
        )
        self.model = GcliAgentModel(model=self.model_name, generator=generator)
        self.agent = GcliLlmAgent(
            name="gemini_cli_agent",
            model=self.model,
            instruction=lambda _ctx: system_prompt,
            disallow_transfer_to_parent=True,
            disallow_transfer_to_peers=True,
        )
        self.session_service = GcliSessionService()
        from google.adk.runners import Runner

        self.runner = Runner(
            app_name=APP_NAME,
            agent=self.agent,
            session_service=self.session_service,
            plugins=[],
        )
        self.protocol = AdkAgentProtocol(
            runner=self.runner,
            user_id=USER_ID,
            session_id=self.id,
            current_model=lambda: self.model_name,
            context_window=DEFAULT_CONTEXT_WINDOW,
        )

    async def start(self) -> None:
        await self.session_service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=self.id)

    def choose_model(self, model: str) -> None:
        """The user picked a model (or `auto`) for the rest of the session."""
        self.model_choice = model
        self.model_name = "gemini-2.5-pro" if model == "auto" else model
        self.model.model = self.model_name

    def set_mode(self, mode: str) -> None:
        self.mode = mode

    async def close(self) -> None:
        await self.protocol.abort()
        await self.runner.close()


async def create_session(spec: SessionSpec) -> AgentSession:
    generator = spec.generator
    if generator is None:
        if spec.auth is None:
            from runtime.errors import AuthRequiredError

            raise AuthRequiredError("no credentials")
        generator = content_generator_for(spec.auth, spec.config.record_responses)
    session = AgentSession(spec, generator)
    await session.start()
    return session
