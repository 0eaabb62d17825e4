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
from runtime.errors import StreamActiveError
from runtime.host import Host
from runtime.models.content_generator import ContentGenerator
from runtime.protocol import (
    AgentEvent,
    AgentSend,
    MessageSend,
    SendResult,
    Subscriber,
    Unsubscribe,
    UpdateSend,
)
from runtime.services.record import is_typed_prompt
from runtime.services.recording import ChatRecordingService, Message
from runtime.tools.mcp.config import McpServerConfig
from runtime.tools.policy.modes import ApprovalMode, parse_mode

if TYPE_CHECKING:
    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.mcp_toolset import GcliMcpToolset
    from runtime.adk.plugins.steering import InjectionService
    from runtime.adk.recorder import SessionRecorder
    from runtime.adk.stream_control import StreamControl
    from runtime.models.state import ModelState
    from runtime.prompt import SystemPrompt
    from runtime.services.compression import CompressionResult
    from runtime.services.hooks import HookRunner
    from runtime.session_build import SchedulerParts

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
    start_source: Literal["startup", "resume", "clear"] = "startup"
    """Why the session starts (SessionStart's `source`): new, or loaded/resumed/forked."""
    recording: ChatRecordingService | None = None
    """Where the session is recorded (None: not recorded, as in the engine's own tests)."""
    history: tuple[Message, ...] = ()
    """The recorded messages a loaded or resumed session starts from."""
    system_prompt: str | None = None
    """A subagent's own system prompt (else the agent's, with the context files)."""
    tool_names: tuple[str, ...] | None = None
    """A subagent's built-in tools (None: all of them)."""
    extra_tools: tuple[Any, ...] = ()
    """Tools of this session only (a subagent's `complete_task`)."""


# ---------------------------------------------------------------- the session


def compression_notice(result: CompressionResult) -> str:
    return (
        f"Compressed the conversation: about {result.tokens_before:,} → "
        f"{result.tokens_after:,} tokens (older turns summarized; the full record is kept)."
    )


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
        recorder: SessionRecorder | None = None,
        prompt: SystemPrompt | None = None,
        injection: InjectionService | None = None,
        hooks: HookRunner | None = None,
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
        self.recorder = recorder
        self.prompt = prompt
        self.injection = injection
        self.hooks = hooks

    # ------------------------------------------------------------ AgentProtocol

    async def send(self, payload: AgentSend) -> SendResult:
        """A message starts a stream; an update changes the session (model, mode,
        title) and is confirmed by a `session_update` event."""
        if isinstance(payload, MessageSend) and self.mcp is not None:
            from runtime.tools.mcp.toolset import mention_resources

            content = await mention_resources(self.mcp.servers, payload.content)
            payload = payload.model_copy(update={"content": content})
        if isinstance(payload, MessageSend) and not self.protocol.active:
            await self.maybe_compress()
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
        live = await self.session_service.create_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=self.id
        )
        if self.spec.history:
            await self.restore(list(self.spec.history), live)
        if self.recorder is not None:
            self.session_service.on_append = self.recorder.on_adk_event
        from runtime.session_build import startup_notices

        for text in startup_notices(self.spec, self.policy):
            self.protocol.pending_notice(text)
        await self.session_start(self.spec.start_source)
        if self.mcp is not None:
            self.mcp.servers.start()

    async def restore(self, messages: list[Message], live: Any = None) -> None:
        """Start the model's history over from recorded messages (load, resume, rewind,
        compression): the live ADK session gets one event per recorded turn."""
        from runtime.adk.history import events_from_record

        if live is None:
            live = await self.session_service.get_session(
                app_name=APP_NAME, user_id=USER_ID, session_id=self.id
            )
        events = events_from_record(messages, agent_name=self.agent.name)
        await self.session_service.replace_events(live, events)

    @property
    def model_choice(self) -> str:
        return self.models.choice

    def choose_model(self, model: str) -> None:
        """The user picked a model (or `auto`) for the rest of the session."""
        self.models.choose(model)
        self.model.model = self.models.default_model
        if self.recorder is not None:
            self.recorder.recording.set_metadata(modelChoice=model)

    def set_mode(self, mode: ApprovalMode) -> None:
        old, self.mode = self.mode, mode
        self.models.mode_changed(old, mode)
        if self.recorder is not None:
            self.recorder.recording.set_metadata(mode=mode)

    def steer(self, parts: tuple[Any, ...]) -> int | None:
        """Queue a message for the running turn (InjectionService); None: no turn runs
        or this session cannot steer, send it as a prompt instead."""
        if self.injection is None or not self.protocol.active:
            return None
        return self.injection.add(parts)

    # ------------------------------------------------------------ history (slash commands)

    def _recording(self) -> ChatRecordingService:
        if self.recorder is None:
            from runtime.errors import RuntimeAgentError

            raise RuntimeAgentError("this session is not recorded")
        return self.recorder.recording

    def _idle(self) -> None:
        if self.protocol.active:
            raise StreamActiveError("a prompt is running; wait for it or cancel it first")

    async def rewind(self, turns: int = 1) -> list[Message]:
        """Drop the last `turns` exchanges (each from a typed prompt on): the record
        (ChatRecordingService.rewindTo) and the model's history. Returns what went."""
        self._idle()
        return await self._drop_turns(turns)

    async def _drop_turns(self, turns: int) -> list[Message]:
        recording = self._recording()
        prompts = [m for m in recording.messages if is_typed_prompt(m)]
        if not prompts or turns < 1:
            return []
        removed = recording.rewind_to(prompts[-min(turns, len(prompts))]["id"])
        await self.restore(recording.messages)
        return removed

    async def clear_context(self) -> None:
        """Forget the conversation inside a running prompt (an AfterAgent hook's
        `clearContext`): the model's history and the record start over, between two
        model turns; the editor keeps what it showed."""
        if self.recorder is not None:
            await self._drop_turns(10**9)
            return
        live = await self.session_service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=self.id
        )
        await self.session_service.replace_events(live, [])

    def last_prompt_tokens(self) -> int:
        # Counts from before a compression summary no longer apply.
        return self._recording().last_input_tokens()

    async def compress(self, trigger: str = "manual") -> CompressionResult:
        """Summarize the older history (ChatCompressionService); raises
        CompressionError, history untouched, when it cannot."""
        from runtime.adk.history import history_messages, message_contents
        from runtime.services.compression import ChatCompressionService

        self._idle()
        recording = self._recording()
        from runtime.services.compression import NOTHING_TO_COMPRESS, CompressionError, split_point
        from runtime.services.hooks import fire

        history = history_messages(recording.messages)
        if split_point(history) is None:  # PreCompress fires only when there is something
            raise CompressionError(NOTHING_TO_COMPRESS)
        pre = await fire(self.hooks, "PreCompress", {"trigger": trigger}, trigger)
        if pre.system_message:
            self.protocol.notice(pre.system_message)
        contents = [message_contents(m, agent_name=self.agent.name) for m in history]
        service = ChatCompressionService(self.generator)
        result = await service.compress(
            history, contents, self.models.default_model, self.last_prompt_tokens()
        )
        recording.record_message(
            {
                "type": "compression",
                "summary": result.summary,
                "keptFrom": result.kept_from,
                "tokensBefore": result.tokens_before,
                "tokensAfter": result.tokens_after,
            }
        )
        await self.restore(recording.messages)
        return result

    async def maybe_compress(self) -> None:
        """Compress before a prompt when the last one used `threshold` of the window."""
        from runtime.models.catalog import context_window
        from runtime.services.compression import CompressionError, compression_threshold

        if self.recorder is None:
            return
        tokens = self.last_prompt_tokens()
        limit = compression_threshold(self.config.settings) * context_window(
            self.models.default_model
        )
        if tokens < limit:
            return
        # said inside the prompt's own stream, before its answer, as a notice of its own
        try:
            result = await self.compress("auto")
        except CompressionError as exc:
            self.protocol.pending_notice(
                f"Could not compress the conversation ({exc}); it is unchanged."
            )
            return
        self.protocol.pending_notice(compression_notice(result))

    async def session_start(self, source: str) -> None:
        """SessionStart hooks: their system message is shown and their additional
        context given to the model with the next prompt."""
        from runtime.services.hooks import fire

        verdict = await fire(self.hooks, "SessionStart", {"source": source}, source)
        if verdict.system_message:
            self.protocol.pending_notice(verdict.system_message)
        if verdict.additional_context:
            self.protocol.add_context(verdict.additional_context)

    async def session_end(self, reason: str) -> None:
        from runtime.services.hooks import fire

        try:
            await fire(self.hooks, "SessionEnd", {"reason": reason}, reason)
        except Exception:  # noqa: BLE001 - closing goes on whatever a hook does
            logger.exception("SessionEnd hooks failed")

    async def close(self, reason: str = "exit") -> None:
        await self.protocol.abort()
        await self.session_end(reason)
        try:
            await self.runner.close()
        finally:
            # What ADK's scans keep for this session's events goes with it.
            await self.session_service.delete_session(
                app_name=APP_NAME, user_id=USER_ID, session_id=self.id
            )
            if self.mcp is not None:
                await self.mcp.servers.close()
            if self.spec.recording is not None:
                self.spec.recording.close()
            else:  # a recorded session's masked outputs stay with its record
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
    if spec.mcp_servers or spec.config.settings.get("mcpServers"):
        # the MCP SDK takes ~0.5 s to import: not on the event loop
        import importlib

        await asyncio.to_thread(importlib.import_module, "runtime.adk.mcp_toolset")
    session = assemble_session(spec, generator)
    await session.start()
    return session


def assemble_session(spec: SessionSpec, generator: ContentGenerator) -> AgentSession:
    """Run the build steps (`runtime.session_build`) and wire the parts into a session."""
    from google.adk.runners import Runner

    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.plugins.steering import InjectionService
    from runtime.adk.recorder import SessionRecorder
    from runtime.adk.session_service import GcliSessionService
    from runtime.adk.stream_control import StreamControl
    from runtime.prompt import SystemPrompt
    from runtime.session_build import (
        SessionLink,
        build_agent,
        build_hooks,
        build_mcp,
        build_model,
        build_model_state,
        build_plugins,
        build_scheduler,
    )

    link = SessionLink()
    control = StreamControl()
    injection = InjectionService()
    roots = (spec.config.workspace, *spec.additional_roots)
    models = build_model_state(spec, generator, link)
    model = build_model(models, generator, control)
    hooks = build_hooks(spec, link)
    scheduler = build_scheduler(spec, roots, link, hooks)
    mcp = build_mcp(spec, scheduler.scheduler, link, scheduler.policy)
    prompt = SystemPrompt(
        spec.config.workspace,
        spec.config.home,
        spec.additional_roots,
        plans_dir=spec.config.temp_dir / "plans",
    )
    if spec.system_prompt is not None:
        prompt.text = spec.system_prompt
    agent = build_agent(spec, model, models, scheduler, mcp, prompt, link.masked, link.mode)
    session_service = GcliSessionService()
    runner = Runner(
        app_name=APP_NAME,
        agent=agent,
        session_service=session_service,
        plugins=build_plugins(spec, control, link, injection, hooks),
    )
    protocol = AdkAgentProtocol(
        runner=runner,
        user_id=USER_ID,
        session_id=spec.session_id,
        current_model=lambda: models.default_model,
        on_new_prompt=[models.new_prompt, *([mcp.flush_notices] if mcp else ())],
        control=control,
        hooks=hooks,
    )
    recorder = None
    if spec.recording is not None:
        from runtime.adk.recorder import SessionRecorder

        recorder = SessionRecorder(spec.recording)
        protocol.subscribe(recorder.observe)
        if spec.recording.metadata.get("title"):
            protocol.mark_titled()
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
        recorder=recorder,
        prompt=prompt,
        injection=injection,
        hooks=hooks,
    )
    protocol.on_clear_context = session.clear_context
    link.attach(session)
    return session
