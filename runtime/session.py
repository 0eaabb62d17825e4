"""AgentSession and the session factory (design: AgentSession, session factory).

`create_session(spec)` builds one session's engine: the ContentGenerator (shared
per process and credentials), the GcliAgentModel, the agent with its ordered
request processors, the plugins for the session's kind, the Runner on a
GcliSessionService, and the AdkAgentProtocol on top. The returned
`AgentSession` owns all of it and closes it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runtime.config import AuthConfig, RuntimeConfig
from runtime.host import Host
from runtime.models.content_generator import ContentGenerator
from runtime.tools.mcp.config import McpServerConfig
from runtime.tools.policy.modes import ApprovalMode, parse_mode

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


class AgentSession:
    """One session's engine and everything it owns."""

    def __init__(self, spec: SessionSpec, generator: ContentGenerator) -> None:
        from google.adk.runners import Runner

        from runtime.adk.agent import GcliLlmAgent
        from runtime.adk.agent_protocol import AdkAgentProtocol
        from runtime.adk.model import GcliAgentModel
        from runtime.adk.processors import gcli_processors
        from runtime.adk.resilience import GcliResilience, ModelState
        from runtime.adk.session_service import GcliSessionService
        from runtime.adk.stream_control import StreamControl
        from runtime.models.availability import ModelAvailabilityService
        from runtime.models.classifier import ClassifierStrategy
        from runtime.models.routing import ModelRouterService
        from runtime.prompt import build_system_prompt
        from runtime.services.masking import ToolOutputMaskingService

        self.spec = spec
        self.id = spec.session_id
        self.config = spec.config
        self.host = spec.host
        self.roots = (spec.config.workspace, *spec.additional_roots)
        self.generator = generator
        self.mode: ApprovalMode = spec.config.approval_mode
        availability = ModelAvailabilityService()
        self.models = ModelState(
            choice=spec.config.model,
            availability=availability,
            # `auto` is routed by the classifier (flash-lite through the same generator)
            router=ModelRouterService.standard(
                availability=availability, classifier=ClassifierStrategy(generator)
            ),
            mode=lambda: self.mode,
            ask=spec.host.choose_fallback,
            notice=lambda text: self.protocol.notice(text),
            on_choice_changed=lambda model: self.protocol.config_changed({"model": model}),
            on_model_announced=lambda model: self.protocol.announce_model_change(model),
            abort_event=lambda: self.protocol.abort_event,
        )
        system_prompt = build_system_prompt(
            spec.config.workspace, spec.config.home, extra_roots=spec.additional_roots
        )
        self.stream_control = StreamControl()
        self.model = GcliAgentModel(
            model=self.models.default_model,
            generator=generator,
            resilience=GcliResilience(self.models),
            control=self.stream_control,
        )
        masking = ToolOutputMaskingService(
            spec.config.temp_dir / "tool-outputs" / f"session-{self.id}"
        )
        self.scheduler = self._scheduler(spec)
        from runtime.adk.tools import to_adk_tools

        tools: list[Any] = to_adk_tools(
            self.scheduler_tools.values(), scheduler_provider=lambda _ctx: self.scheduler
        )
        self.mcp = self._mcp_toolset(spec)
        if self.mcp is not None:
            tools.append(self.mcp)
        self.agent = GcliLlmAgent(
            name="gemini_cli_agent",
            model=self.model,
            instruction=lambda _ctx: system_prompt,
            tools=tools,
            disallow_transfer_to_parent=True,
            disallow_transfer_to_peers=True,
            gcli_processors=gcli_processors(self.models, masking),
        )
        self.session_service = GcliSessionService()
        self.runner = Runner(
            app_name=APP_NAME,
            agent=self.agent,
            session_service=self.session_service,
            plugins=self._plugins(spec),
        )
        self.protocol = AdkAgentProtocol(
            runner=self.runner,
            user_id=USER_ID,
            session_id=self.id,
            current_model=lambda: self.models.default_model,
            on_new_prompt=[self.models.new_prompt, *([self.mcp.flush_notices] if self.mcp else ())],
            control=self.stream_control,
        )

    def _mcp_toolset(self, spec: SessionSpec) -> Any:
        """The client's MCP servers as an ADK toolset (None without any); started by `start()`."""
        if not spec.mcp_servers:
            return None
        from runtime.tools.mcp.client import McpServers
        from runtime.tools.mcp.toolset import GcliMcpToolset

        servers = McpServers(spec.mcp_servers, cwd=spec.config.workspace)
        return GcliMcpToolset(
            servers,
            scheduler=lambda: self.scheduler,
            notice=lambda text: self.protocol.notice(text),
        )

    def _scheduler(self, spec: SessionSpec) -> Any:
        """The design's scheduler for this session: catalog, policy, hooks, editor-routed I/O."""
        from runtime.adk.agent_protocol import StopRequest
        from runtime.adk.tools import ProtocolToolEventSink
        from runtime.host import HeadlessHost
        from runtime.services.secrets import allowlist_from
        from runtime.tools.base import ToolEnv
        from runtime.tools.catalog import build_catalog
        from runtime.tools.io.commands import CommandRunner
        from runtime.tools.io.files import FileAccess
        from runtime.tools.policy.engine import PolicyEngine
        from runtime.tools.scheduling.hooks import CommandToolHooks, NoToolHooks
        from runtime.tools.scheduling.scheduler import Scheduler

        config = spec.config
        self.scheduler_tools = build_catalog()
        env = ToolEnv(
            roots=self.roots,
            host=spec.host,
            session_id=self.id,
            temp_dir=config.temp_dir,
            files=FileAccess(spec.host),
            commands=CommandRunner(spec.host, env_allowlist=allowlist_from(config.settings)),
        )
        self.policy = PolicyEngine(
            workspace_root=config.workspace,
            user_home=config.home,
            plans_dir=config.temp_dir / "plans",
        )
        for problem in self.policy.load_errors:
            logger.warning("policy file problem: %s", problem)
        settings_hooks = config.settings.get("hooks")
        hooks_config = config.settings.get("hooksConfig") or {}
        hooks: Any = NoToolHooks()
        if (
            isinstance(settings_hooks, dict)
            and settings_hooks
            and hooks_config.get("enabled", True)
        ):
            hooks = CommandToolHooks(
                settings_hooks,
                project_dir=config.workspace,
                cwd=config.workspace,
                session_id=self.id,
                disabled=tuple(hooks_config.get("disabled") or ()),
                env_allowlist=allowlist_from(config.settings),
            )
        return Scheduler(
            tools=self.scheduler_tools,
            env=env,
            policy=self.policy,
            mode_getter=lambda: self.mode,
            on_mode_change=self._engine_changed_mode,
            on_cancel=lambda: self.protocol.request_stop(StopRequest(reason="aborted")),
            events=ProtocolToolEventSink(lambda build: self.protocol.emit_external(build)),
            hooks=hooks,
            notify=lambda text: self.protocol.notice(text),
            interactive=not isinstance(spec.host, HeadlessHost),
        )

    def _engine_changed_mode(self, mode: str) -> None:
        mode = parse_mode(mode)
        """The engine switched mode itself ("Allow for this session" on an edit):
        tell the editor."""
        self.set_mode(mode)
        self.protocol.config_changed({"mode": mode})

    def _plugins(self, spec: SessionSpec) -> list[Any]:
        from runtime.adk.agent_protocol import StopRequest
        from runtime.adk.plugins.limits import (
            LimitReached,
            MaxTimeAdkPlugin,
            MaxTurnsAdkPlugin,
            TokenLimitAdkPlugin,
        )
        from runtime.adk.plugins.loop_detection import LoopDetectionAdkPlugin
        from runtime.services.loop_detection import LoopDetectionService, LoopVerdict

        def on_limit(limit: LimitReached) -> None:
            self.protocol.request_stop(
                StopRequest(reason=limit.reason, message=limit.message, code=limit.code)  # type: ignore[arg-type]
            )

        def on_loop(verdict: LoopVerdict) -> None:
            self.protocol.request_stop(
                StopRequest(
                    reason="completed",
                    message=f"Stopped: a loop was detected ({verdict.detail}). "
                    "Rephrase the request or break the task into smaller steps.",
                    code="LOOP_DETECTED",
                )
            )

        plugins: list[Any] = []
        if spec.kind == "main":

            def on_nudge(verdict: LoopVerdict) -> None:
                self.protocol.notice(
                    f"A possible loop was detected ({verdict.detail}); "
                    "the model was asked to step back and check its progress."
                )

            plugins.append(
                LoopDetectionAdkPlugin(
                    LoopDetectionService(), on_loop, control=self.stream_control, on_nudge=on_nudge
                )
            )
        limits = spec.config.limits
        if limits.max_turns:
            plugins.append(MaxTurnsAdkPlugin(limits.max_turns, on_limit))
        if limits.max_tokens:
            plugins.append(TokenLimitAdkPlugin(limits.max_tokens, on_limit))
        if limits.max_time_s:
            plugins.append(MaxTimeAdkPlugin(limits.max_time_s, on_limit))
        return plugins

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

        outputs = self.spec.config.temp_dir / "tool-outputs" / f"session-{self.id}"
        shutil.rmtree(outputs, ignore_errors=True)


async def create_session(spec: SessionSpec) -> AgentSession:
    generator = spec.generator
    if generator is None:
        if spec.auth is None:
            from runtime.errors import AuthRequiredError

            raise AuthRequiredError("no credentials")
        generator = content_generator_for(spec.auth, spec.config.record_responses)
    if spec.mcp_servers:  # the MCP SDK takes ~0.5 s to import: not on the event loop
        import asyncio
        import importlib

        await asyncio.to_thread(importlib.import_module, "runtime.tools.mcp.toolset")
    session = AgentSession(spec, generator)
    await session.start()
    return session
