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
    from runtime.adk.agent_protocol import AdkAgentProtocol, StopRequest
    from runtime.adk.stream_control import StreamControl
    from runtime.models.state import ModelState
    from runtime.services.loop_detection import LoopVerdict
    from runtime.tools.base import GcliTool
    from runtime.tools.mcp.toolset import GcliMcpToolset
    from runtime.tools.policy.engine import PolicyEngine
    from runtime.tools.scheduling.scheduler import Scheduler

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


class SessionLink:
    """What the parts built before the protocol call it through (design: the one route
    for notices). Attached to the session once the protocol exists; calling it
    before is a programming error and says so."""

    def __init__(self) -> None:
        self._session: AgentSession | None = None

    def attach(self, session: AgentSession) -> None:
        self._session = session

    @property
    def session(self) -> AgentSession:
        if self._session is None:
            raise RuntimeError("the session is still being built")
        return self._session

    @property
    def protocol(self) -> AdkAgentProtocol:
        return self.session.protocol

    def mode(self) -> ApprovalMode:
        return self.session.mode

    def notice(self, text: str) -> None:
        """The one route for a notice to the user."""
        self.protocol.notice(text)

    def config_changed(self, config: dict[str, Any]) -> None:
        self.protocol.config_changed(config)

    def announce_model(self, model: str) -> None:
        self.protocol.announce_model_change(model)

    def request_stop(self, stop: StopRequest) -> None:
        self.protocol.request_stop(stop)

    def abort_event(self) -> asyncio.Event | None:
        return self._session.protocol.abort_event if self._session is not None else None

    def engine_changed_mode(self, mode: str) -> None:
        """The engine switched mode itself ("Allow for this session" on an edit)."""
        chosen = parse_mode(mode)
        self.session.set_mode(chosen)
        self.config_changed({"mode": chosen})


# ---------------------------------------------------------------- build steps


def build_model_state(
    spec: SessionSpec, generator: ContentGenerator, link: SessionLink
) -> ModelState:
    """Model choice, availability and routing (`auto` is routed by the classifier)."""
    from runtime.models.availability import ModelAvailabilityService
    from runtime.models.classifier import ClassifierStrategy
    from runtime.models.routing import ModelRouterService
    from runtime.models.state import ModelState

    availability = ModelAvailabilityService()
    return ModelState(
        choice=spec.config.model,
        availability=availability,
        router=ModelRouterService.standard(
            availability=availability, classifier=ClassifierStrategy(generator)
        ),
        mode=link.mode,
        ask=spec.host.choose_fallback,
        notice=link.notice,
        on_choice_changed=lambda model: link.config_changed({"model": model}),
        on_model_announced=link.announce_model,
        abort_event=link.abort_event,
    )


def build_model(models: ModelState, generator: ContentGenerator, control: StreamControl) -> Any:
    """The GcliAgentModel: every model call through the retry + fallback loop."""
    from runtime.adk.model import GcliAgentModel
    from runtime.adk.resilience import GcliResilience

    return GcliAgentModel(
        model=models.default_model,
        generator=generator,
        resilience=GcliResilience(models),
        control=control,
    )


@dataclass(frozen=True)
class SchedulerParts:
    scheduler: Scheduler
    tools: dict[str, GcliTool]
    policy: PolicyEngine


def build_scheduler(
    spec: SessionSpec, roots: tuple[Path, ...], link: SessionLink
) -> SchedulerParts:
    """The design's scheduler: catalog, policy, hooks, editor-routed I/O."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.adk.tools import ProtocolToolEventSink
    from runtime.host import HeadlessHost
    from runtime.services.secrets import allowlist_from
    from runtime.tools.base import ToolEnv
    from runtime.tools.catalog import build_catalog
    from runtime.tools.io.commands import CommandRunner
    from runtime.tools.io.files import FileAccess
    from runtime.tools.policy.engine import PolicyEngine
    from runtime.tools.scheduling.hooks import CommandToolHooks, NoToolHooks, ToolHooks
    from runtime.tools.scheduling.scheduler import Scheduler

    config = spec.config
    allowlist = allowlist_from(config.settings)
    env = ToolEnv(
        roots=roots,
        host=spec.host,
        session_id=spec.session_id,
        temp_dir=config.temp_dir,
        files=FileAccess(spec.host),
        commands=CommandRunner(spec.host, env_allowlist=allowlist),
    )
    policy = PolicyEngine(
        workspace_root=config.workspace, user_home=config.home, plans_dir=config.temp_dir / "plans"
    )
    for problem in policy.load_errors:
        logger.warning("policy file problem: %s", problem)
    settings_hooks = config.settings.get("hooks")
    hooks_config = config.settings.get("hooksConfig") or {}
    hooks: ToolHooks = NoToolHooks()
    if isinstance(settings_hooks, dict) and settings_hooks and hooks_config.get("enabled", True):
        hooks = CommandToolHooks(
            settings_hooks,
            project_dir=config.workspace,
            cwd=config.workspace,
            session_id=spec.session_id,
            disabled=tuple(hooks_config.get("disabled") or ()),
            env_allowlist=allowlist,
        )
    tools = build_catalog()
    scheduler = Scheduler(
        tools=tools,
        env=env,
        policy=policy,
        mode_getter=link.mode,
        on_mode_change=link.engine_changed_mode,
        on_cancel=lambda: link.request_stop(StopRequest(reason="aborted")),
        events=ProtocolToolEventSink(lambda build: link.protocol.emit_external(build)),
        hooks=hooks,
        notify=link.notice,
        interactive=not isinstance(spec.host, HeadlessHost),
    )
    return SchedulerParts(scheduler=scheduler, tools=dict(tools), policy=policy)


def build_mcp(spec: SessionSpec, scheduler: Scheduler, link: SessionLink) -> GcliMcpToolset | None:
    """The client's MCP servers as an ADK toolset (None without any); started by `start()`."""
    if not spec.mcp_servers:
        return None
    from runtime.tools.mcp.client import McpServers
    from runtime.tools.mcp.toolset import GcliMcpToolset

    servers = McpServers(spec.mcp_servers, cwd=spec.config.workspace)
    return GcliMcpToolset(servers, scheduler=lambda: scheduler, notice=link.notice)


def build_plugins(spec: SessionSpec, control: StreamControl, link: SessionLink) -> list[Any]:
    """The guards of the session's kind: loop detection (main sessions) and the limits."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.adk.plugins.limits import (
        LimitReached,
        MaxTimeAdkPlugin,
        MaxTurnsAdkPlugin,
        TokenLimitAdkPlugin,
    )
    from runtime.adk.plugins.loop_detection import LoopDetectionAdkPlugin
    from runtime.services.loop_detection import LoopDetectionService

    def on_limit(limit: LimitReached) -> None:
        stop = StopRequest(reason=limit.reason, message=limit.message, code=limit.code)  # type: ignore[arg-type]
        link.request_stop(stop)

    def on_loop(verdict: LoopVerdict) -> None:
        message = (
            f"Stopped: a loop was detected ({verdict.detail}). "
            "Rephrase the request or break the task into smaller steps."
        )
        link.request_stop(StopRequest(reason="completed", message=message, code="LOOP_DETECTED"))

    def on_nudge(verdict: LoopVerdict) -> None:
        link.notice(
            f"A possible loop was detected ({verdict.detail}); "
            "the model was asked to step back and check its progress."
        )

    plugins: list[Any] = []
    if spec.kind == "main":
        detector = LoopDetectionService()
        plugins.append(
            LoopDetectionAdkPlugin(detector, on_loop, control=control, on_nudge=on_nudge)
        )
    limits = spec.config.limits
    if limits.max_turns:
        plugins.append(MaxTurnsAdkPlugin(limits.max_turns, on_limit))
    if limits.max_tokens:
        plugins.append(TokenLimitAdkPlugin(limits.max_tokens, on_limit))
    if limits.max_time_s:
        plugins.append(MaxTimeAdkPlugin(limits.max_time_s, on_limit))
    return plugins


def build_agent(
    spec: SessionSpec,
    model: Any,
    models: ModelState,
    parts: SchedulerParts,
    mcp: GcliMcpToolset | None,
) -> Any:
    """The LlmAgent with the system prompt, the tools (through the scheduler) and the
    ordered request processors (masking, then routing, after `contents`)."""
    from runtime.adk.agent import GcliLlmAgent
    from runtime.adk.processors import gcli_processors
    from runtime.adk.tools import to_adk_tools
    from runtime.prompt import build_system_prompt
    from runtime.services.masking import ToolOutputMaskingService

    system_prompt = build_system_prompt(
        spec.config.workspace, spec.config.home, extra_roots=spec.additional_roots
    )
    masking = ToolOutputMaskingService(tool_outputs_dir(spec))
    scheduler = parts.scheduler
    tools: list[Any] = to_adk_tools(parts.tools.values(), scheduler_provider=lambda _ctx: scheduler)
    if mcp is not None:
        tools.append(mcp)
    return GcliLlmAgent(
        name="gemini_cli_agent",
        model=model,
        instruction=lambda _ctx: system_prompt,
        tools=tools,
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
        gcli_processors=gcli_processors(models, masking),
    )


def tool_outputs_dir(spec: SessionSpec) -> Path:
    """Where full tool outputs (truncated or masked) are kept while the session lives."""
    return spec.config.temp_dir / "tool-outputs" / f"session-{spec.session_id}"


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
    from google.adk.runners import Runner

    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.session_service import GcliSessionService
    from runtime.adk.stream_control import StreamControl

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
