"""AgentSession and the session factory (design: AgentSession, session factory).

`create_session(spec)` builds one session's engine in small steps, each a
`build_*` function that takes what it needs and returns its part: the model
state (`build_model_state`), the GcliAgentModel (`build_model`), the scheduler
with its catalog, policy and hooks (`build_scheduler`), the client's MCP servers
(`build_mcp`), the plugins for the session's kind (`build_plugins`), the agent
with its ordered request processors (`build_agent`), and the Runner on a
GcliSessionService under the AdkAgentProtocol. The parts built before the
protocol reach it through a `SessionLink`, attached once the protocol exists:
the one route for notices, stops and config changes. The returned
`AgentSession` owns every part, exposes the AgentProtocol (send, abort,
subscribe) by delegation, and closes it all.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runtime.config import AuthConfig, RuntimeConfig
from runtime.host import Host
from runtime.models.content_generator import ContentGenerator
from runtime.protocol import (
    AgentEvent,
    AgentSend,
    SendResult,
    Subscriber,
    Unsubscribe,
    UpdateSend,
)
from runtime.tools.mcp.config import McpServerConfig
from runtime.tools.policy.modes import ApprovalMode, parse_mode

if TYPE_CHECKING:
    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.stream_control import StreamControl
    from runtime.models.state import ModelState
    from runtime.session_build import SchedulerParts
    from runtime.tools.mcp.toolset import GcliMcpToolset

logger = logging.getLogger(__name__)

APP_NAME = "adk_acp"
USER_ID = "user"

SessionKind = Literal["main", "subagent"]

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
    mcp_servers: tuple[McpServerConfig, ...] = ()


# ---------------------------------------------------------------- the session


class AgentSession:
    """One session's engine and everything it owns; the AgentProtocol by delegation."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        generator: ContentGenerator,
        models: ModelState,
        model: Any,
        control: StreamControl,
        scheduler: SchedulerParts,
        mcp: GcliMcpToolset | None,
        agent: Any,
        session_service: Any,
        runner: Any,
        protocol: AdkAgentProtocol,
    ) -> None:
        self.spec = spec
        self.id = spec.session_id
        self.config = spec.config
        self.host = spec.host
        self.roots = (spec.config.workspace, *spec.additional_roots)
        self.generator = generator
        self.mode: ApprovalMode = spec.config.approval_mode
        self.models = models
        self.model = model
        self.stream_control = control
        self.scheduler = scheduler.scheduler
        self.scheduler_tools = scheduler.tools
        self.policy = scheduler.policy
        self.mcp = mcp
        self.agent = agent
        self.session_service = session_service
        self.runner = runner
        self.protocol = protocol

    # ------------------------------------------------------------ AgentProtocol

    async def send(self, payload: AgentSend) -> SendResult:
        """A message starts a stream; an update changes the session (model, mode,
        title) and is confirmed by a `session_update` event."""
        if isinstance(payload, UpdateSend):
            if payload.model:
                self.choose_model(payload.model)
            mode = (payload.config or {}).get("mode")
            if mode is not None:
                self.set_mode(parse_mode(mode))
        return await self.protocol.send(payload)

    def subscribe(self, callback: Subscriber) -> Unsubscribe:
        return self.protocol.subscribe(callback)

    async def abort(self) -> None:
        await self.protocol.abort()

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        return self.protocol.events

    # ------------------------------------------------------------ session state

    async def start(self) -> None:
        await self.session_service.create_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=self.id
        )
        if self.mcp is not None:
            self.mcp.servers.start()

    @property
    def model_choice(self) -> str:
        return self.models.choice

    def choose_model(self, model: str) -> None:
        """The user picked a model (or `auto`) for the rest of the session."""
        self.models.choose(model)
        self.model.model = self.models.default_model

    def set_mode(self, mode: ApprovalMode) -> None:
        old, self.mode = self.mode, mode
        self.models.mode_changed(old, mode)

    async def close(self) -> None:
        await self.protocol.abort()
        try:
            await self.runner.close()
        finally:
            if self.mcp is not None:
                await self.mcp.servers.close()
            await asyncio.to_thread(self._remove_tool_outputs)

    def _remove_tool_outputs(self) -> None:
        """Full tool outputs (truncated or masked) live as long as their session."""
        import shutil

        from runtime.session_build import tool_outputs_dir

        shutil.rmtree(tool_outputs_dir(self.spec), ignore_errors=True)


async def create_session(spec: SessionSpec) -> AgentSession:
    """Build, wire and start one session (see the module docstring for the steps)."""
    generator = spec.generator
    if generator is None:
        if spec.auth is None:
            from runtime.errors import AuthRequiredError

            raise AuthRequiredError("no credentials")
        generator = content_generator_for(spec.auth, spec.config.record_responses)
    if spec.mcp_servers:  # the MCP SDK takes ~0.5 s to import: not on the event loop
        import importlib

        await asyncio.to_thread(importlib.import_module, "runtime.tools.mcp.toolset")
    session = assemble_session(spec, generator)
    await session.start()
    return session


def assemble_session(spec: SessionSpec, generator: ContentGenerator) -> AgentSession:
    """Run the build steps (`runtime.session_build`) and wire the parts into a session."""
    from google.adk.runners import Runner

    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.session_service import GcliSessionService
    from runtime.adk.stream_control import StreamControl
    from runtime.session_build import (
        SessionLink,
        build_agent,
        build_mcp,
        build_model,
        build_model_state,
        build_plugins,
        build_scheduler,
    )

    link = SessionLink()
    control = StreamControl()
    roots = (spec.config.workspace, *spec.additional_roots)
    models = build_model_state(spec, generator, link)
    model = build_model(models, generator, control)
    scheduler = build_scheduler(spec, roots, link)
    mcp = build_mcp(spec, scheduler.scheduler, link)
    agent = build_agent(spec, model, models, scheduler, mcp)
    session_service = GcliSessionService()
    runner = Runner(
        app_name=APP_NAME,
        agent=agent,
        session_service=session_service,
        plugins=build_plugins(spec, control, link),
    )
    protocol = AdkAgentProtocol(
        runner=runner,
        user_id=USER_ID,
        session_id=spec.session_id,
        current_model=lambda: models.default_model,
        on_new_prompt=[models.new_prompt, *([mcp.flush_notices] if mcp else ())],
        control=control,
    )
    session = AgentSession(
        spec=spec,
        generator=generator,
        models=models,
        model=model,
        control=control,
        scheduler=scheduler,
        mcp=mcp,
        agent=agent,
        session_service=session_service,
        runner=runner,
        protocol=protocol,
    )
    link.attach(session)
    return session
