"""The session factory (design: session factory).

`create_session(spec)` builds one session's engine in small steps, each a
`build_*` function of `runtime.session.build` that takes what it needs and returns
its part: the model state (`build_model_state`), the GcliAgentModel
(`build_model`), the scheduler with its catalog, policy and hooks
(`build_scheduler`), the client's MCP servers (`build_mcp`), the plugins for the
session's kind (`build_plugins`), the agent with its ordered request processors
(`build_agent`), and the Runner on a GcliSessionService under the
AdkAgentProtocol. The parts built before the protocol reach it through a
`SessionLink`, attached once the protocol exists: the one route for notices, stops
and config changes. The returned `AgentSession` owns every part. `create_session`
is a `SessionFactory`; a main session's subagents are made by it too (injected).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.config import AuthConfig
from runtime.models.content_generator import ContentGenerator
from runtime.session.agent_session import AgentSession, SessionFactory
from runtime.session.build import (
    build_agent,
    build_hooks,
    build_mcp,
    build_model,
    build_model_state,
    build_plugins,
    build_scheduler,
)
from runtime.session.link import SessionLink
from runtime.session.parts import SessionParts
from runtime.session.spec import APP_NAME, USER_ID, SessionSpec

if TYPE_CHECKING:
    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.mcp_toolset import GcliMcpToolset
    from runtime.models.providers import ProviderTable
    from runtime.models.state import ModelState
    from runtime.services.hooks import HookRunner

__all__ = ["SessionFactory", "assemble_session", "content_generator_for", "create_session"]

_generators: dict[tuple[Any, ...], ContentGenerator] = {}


def content_generator_for(
    auth: AuthConfig, record_to: Path | None = None, providers: ProviderTable | None = None
) -> ContentGenerator:
    """One generator per credentials, providers (and recording file) per process. With
    `providers`, calls of `PROVIDER/NAME` models go to those (`ProviderRouter`); auth
    `none` (no Google credentials) then serves only them."""
    key = (auth, record_to, providers)
    cached = _generators.get(key)
    if cached is not None:
        return cached
    generator: ContentGenerator
    if auth.kind == "fake":
        from runtime.models.fake_generator import FakeContentGenerator

        assert auth.fake_responses is not None
        generator = FakeContentGenerator(auth.fake_responses)
    else:
        # the Gemini client is shared by every provider table (the warm-up makes it)
        gemini = None if auth.kind == "none" else _gemini_for(auth)
        if providers is not None:
            from runtime.models.provider_router import ProviderRouter

            generator = ProviderRouter(gemini, providers)
        else:
            assert gemini is not None, "auth `none` serves only other providers"
            generator = gemini
    if record_to is not None:
        from runtime.models.recording_generator import RecordingContentGenerator

        generator = RecordingContentGenerator(generator, record_to)
    _generators[key] = generator
    return generator


def _gemini_for(auth: AuthConfig) -> ContentGenerator:
    key = (auth, None, None)
    cached = _generators.get(key)
    if cached is None:
        from runtime.models.genai_generator import GenaiContentGenerator

        cached = _generators[key] = GenaiContentGenerator(auth)
    return cached


async def create_session(spec: SessionSpec) -> AgentSession:
    """Build, wire and start one session (see the module docstring for the steps)."""
    generator = spec.generator
    table: ProviderTable | None = None
    if generator is None:
        if spec.auth is None:
            from runtime.errors import AuthRequiredError

            raise AuthRequiredError("no credentials")
        if spec.auth.kind != "fake":
            from runtime.models.providers import ProviderTable

            table = ProviderTable.from_config(spec.config.env, spec.config.settings)
        generator = content_generator_for(spec.auth, spec.config.record_responses, table)
    if spec.mcp_servers or spec.config.settings.get("mcpServers"):
        # the MCP SDK takes ~0.5 s to import: not on the event loop
        import importlib

        await asyncio.to_thread(importlib.import_module, "runtime.adk.mcp_toolset")
    session = assemble_session(spec, generator)
    await session.start()
    if table is not None and spec.kind == "main":
        offer_models(session, table)
    return session


def offer_models(session: AgentSession, table: ProviderTable) -> None:
    """The model choice lists the other providers' models: the declared ones at once,
    those their servers list when they answer (then the editor gets the new list)."""
    from runtime.models import model_list

    state = session.model_state
    state.offered = model_list.choices(table)
    config = session.config
    ask = model_list.providers_to_ask(table, config.env, config.settings, state.choice)
    if not ask:
        return

    async def listed() -> None:
        found = await model_list.discover(ask)
        if found:
            state.offered = model_list.choices(table, found)
            session.protocol.config_changed({"offeredModels": len(state.offered)})

    state.discovery = asyncio.get_running_loop().create_task(listed())


def assemble_session(spec: SessionSpec, generator: ContentGenerator) -> AgentSession:
    """Run the build steps and wire the parts into a session."""
    from google.adk.runners import Runner

    from runtime.adk.plugins.steering import InjectionService
    from runtime.adk.session_service import GcliSessionService
    from runtime.adk.stream_control import StreamControl
    from runtime.prompt import SystemPrompt

    link = SessionLink()
    control = StreamControl()
    injection = InjectionService()
    roots = (spec.config.workspace, *spec.additional_roots)
    model_state = build_model_state(spec, generator, link)
    agent_model = build_model(model_state, generator, control)
    hooks = build_hooks(spec, link)
    scheduler = build_scheduler(spec, roots, link, hooks, create_child=create_session)
    mcp = build_mcp(spec, scheduler.scheduler, link, scheduler.policy)
    prompt = SystemPrompt(
        spec.config.workspace,
        spec.config.home,
        spec.additional_roots,
        plans_dir=spec.config.temp_dir / "plans",
        client=spec.client_prompt,
    )
    if spec.system_prompt is not None:
        prompt.text = spec.system_prompt
    agent = build_agent(
        spec, agent_model, model_state, scheduler, mcp, prompt, link.masked, link.mode
    )
    session_service = GcliSessionService()
    runner = Runner(
        app_name=APP_NAME,
        agent=agent,
        session_service=session_service,
        plugins=build_plugins(spec, control, link, injection, hooks),
    )
    protocol = _protocol(spec, runner, model_state, mcp, control, hooks)
    parts = SessionParts(
        generator=generator,
        model_state=model_state,
        agent_model=agent_model,
        control=control,
        scheduler=scheduler,
        mcp=mcp,
        agent=agent,
        session_service=session_service,
        runner=runner,
        protocol=protocol,
        recorder=_recorder(spec, protocol),
        prompt=prompt,
        injection=injection,
        hooks=hooks,
    )
    session = AgentSession(spec, parts)
    protocol.on_clear_context = session.clear_context
    link.attach(session)
    return session


def _protocol(
    spec: SessionSpec,
    runner: Any,
    model_state: ModelState,
    mcp: GcliMcpToolset | None,
    control: Any,
    hooks: HookRunner | None,
) -> AdkAgentProtocol:
    from runtime.adk.agent_protocol import AdkAgentProtocol

    return AdkAgentProtocol(
        runner=runner,
        user_id=USER_ID,
        session_id=spec.session_id,
        current_model=lambda: model_state.default_model,
        on_new_prompt=[model_state.new_prompt, *([mcp.flush_notices] if mcp else ())],
        control=control,
        hooks=hooks,
        context_window=model_state.context_window,
    )


def _recorder(spec: SessionSpec, protocol: AdkAgentProtocol) -> Any:
    """The SessionRecorder of a recorded session (None otherwise), observing the protocol."""
    if spec.recording is None:
        return None
    from runtime.adk.recorder import SessionRecorder

    recorder = SessionRecorder(spec.recording)
    protocol.subscribe(recorder.observe)
    if spec.recording.metadata.get("title"):
        protocol.mark_titled()
    return recorder
