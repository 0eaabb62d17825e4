"""The build steps of the session factory (design: session factory).

Each `build_*` function takes what it needs and returns one part of a session;
`runtime.session.factory.assemble_session` runs them in order. The parts built
before the protocol reach it through the `SessionLink`, attached once the session
exists: the one route for notices, stops and config changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.models.content_generator import ContentGenerator
from runtime.session.agent_session import SessionFactory
from runtime.session.link import SessionLink
from runtime.session.parts import SchedulerParts
from runtime.session.paths import outputs_dir
from runtime.session.spec import SessionSpec

if TYPE_CHECKING:
    from runtime.adk.mcp_toolset import GcliMcpToolset
    from runtime.adk.model import GcliAgentModel
    from runtime.adk.plugins.steering import InjectionService
    from runtime.adk.stream_control import StreamControl
    from runtime.models.state import ModelState
    from runtime.prompt import SystemPrompt
    from runtime.services.hooks import HookRunner
    from runtime.services.loop_detection import LoopVerdict
    from runtime.tools.base import GcliTool, ToolEnv
    from runtime.tools.io.sandbox import Sandbox
    from runtime.tools.mcp.config import McpServerConfig
    from runtime.tools.policy.engine import PolicyEngine
    from runtime.tools.scheduling.scheduler import Scheduler

logger = logging.getLogger(__name__)

WEB_SEARCH_TOOL = "google_web_search"


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
        fallback_models=fallback_models(spec.config.settings),
        window=generator.context_window,
    )


def fallback_models(settings: dict[str, Any]) -> tuple[str, ...]:
    """`model.fallbackModels`: model ids (any provider's) the quota fallback offers, in order."""
    model = settings.get("model")
    found = model.get("fallbackModels") if isinstance(model, dict) else None
    if not isinstance(found, list):
        return ()
    return tuple(m.strip() for m in found if isinstance(m, str) and m.strip())


def build_model(
    model_state: ModelState, generator: ContentGenerator, control: StreamControl
) -> GcliAgentModel:
    """The GcliAgentModel: every model call through the retry + fallback loop."""
    from runtime.adk.model import GcliAgentModel
    from runtime.adk.resilience import GcliResilience

    return GcliAgentModel(
        model=model_state.default_model,
        generator=generator,
        resilience=GcliResilience(model_state, endpoint=generator.endpoint),
        control=control,
    )


def build_hooks(spec: SessionSpec, link: SessionLink) -> HookRunner | None:
    """The settings' command hooks (all eleven events), None when there are none."""
    from runtime.services.hooks import HookRunner
    from runtime.services.secrets import allowlist_from

    config = spec.config
    recording = spec.recording
    runner = HookRunner.from_settings(
        config.settings,
        project_dir=config.workspace,
        cwd=config.workspace,
        session_id=spec.session_id,
        transcript_path=str(recording.path) if recording is not None else "",
        env_allowlist=allowlist_from(config.settings),
        on_failure=link.notice,
    )
    if runner is not None and config.sandbox.hooks:  # `hooksConfig.sandbox`
        runner.sandbox = session_sandbox(spec, (config.workspace, *spec.additional_roots))
    return runner


def notification_hook(
    hooks: HookRunner, link: SessionLink
) -> Callable[[Any, Any], Awaitable[None]]:
    """The Notification hook, run for every permission request before it is asked
    (as Gemini CLI); its system message is shown first."""
    from runtime.services.hooks import fire
    from runtime.tools.scheduling.notification import permission_notification

    async def on_ask(request: Any, tool: Any) -> None:
        if not hooks.has("Notification"):
            return
        payload = permission_notification(request, tool)
        verdict = await fire(hooks, "Notification", payload, "ToolPermission")
        if verdict.system_message:
            link.notice(verdict.system_message)

    return on_ask


def hook_stop(link: SessionLink, verb: str = "stopped") -> Callable[[str], None]:
    """A hook's `continue: false` (or an AfterModel deny, `verb` "blocked"): the turn
    ends (completed) with the reason shown."""
    from runtime.adk.agent_protocol import StopRequest

    def stop(reason: str) -> None:
        message = f"Agent execution {verb}: {reason}"
        link.request_stop(StopRequest(reason="completed", message=message, code="HOOK_STOP"))

    return stop


def build_scheduler(
    spec: SessionSpec,
    roots: tuple[Path, ...],
    link: SessionLink,
    hooks: HookRunner | None = None,
    create_child: SessionFactory | None = None,
) -> SchedulerParts:
    """The design's scheduler: catalog, policy, hooks, editor-routed I/O. A main
    session's subagents are started through `create_child` (the session factory)."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.adk.tools import ProtocolToolEventSink
    from runtime.host import HeadlessHost
    from runtime.tools.policy.engine import PolicyEngine
    from runtime.tools.scheduling.hooks import CommandToolHooks, NoToolHooks, ToolHooks
    from runtime.tools.scheduling.scheduler import Scheduler

    config = spec.config
    sandbox = session_sandbox(spec, roots)
    policy = PolicyEngine(
        workspace_root=config.workspace,
        user_home=config.home,
        plans_dir=config.temp_dir / "plans",
        sandboxed=sandbox.active,
    )
    for problem in policy.load_errors:
        logger.warning("policy file problem: %s", problem)
    tool_hooks: ToolHooks = NoToolHooks() if hooks is None else CommandToolHooks(runner=hooks)
    tools = session_tools(spec, policy, link, create_child)
    scheduler = Scheduler(
        tools=tools,
        env=tool_env(spec, roots, link, sandbox),
        policy=policy,
        mode_getter=link.mode,
        on_mode_change=link.engine_changed_mode,
        on_cancel=lambda: link.request_stop(StopRequest(reason="aborted")),
        events=ProtocolToolEventSink(lambda build: link.protocol.emit_external(build)),
        hooks=tool_hooks,
        notify=link.notice,
        on_ask=notification_hook(hooks, link) if hooks is not None else None,
        on_stop=hook_stop(link),
        on_answer=link.permission_answered,
        before_edit=link.before_edit,
        interactive=not isinstance(spec.host, HeadlessHost),
    )
    return SchedulerParts(scheduler=scheduler, tools=dict(tools), policy=policy)


def session_sandbox(spec: SessionSpec, roots: tuple[Path, ...]) -> Sandbox:
    """The sandbox of the session's commands, for its roots (`runtime.tools.io.sandbox`)."""
    from runtime.services.secrets import allowlist_from
    from runtime.tools.io.sandbox import Sandbox

    config = spec.config
    return Sandbox.for_session(
        config.sandbox,
        roots=roots,
        home=config.home,
        env=config.env,
        env_allowlist=allowlist_from(config.settings),
    )


def tool_env(
    spec: SessionSpec, roots: tuple[Path, ...], link: SessionLink, sandbox: Sandbox | None = None
) -> ToolEnv:
    """What the tools get: roots, the editor's I/O, the temp dir, the memory hooks, the
    commands' sandbox."""
    from runtime.services.secrets import allowlist_from
    from runtime.tools.base import ToolEnv
    from runtime.tools.catalog import CONTENT_GENERATOR_KEY, MEMORY_SAVED_KEY, USER_HOME_KEY
    from runtime.tools.io.commands import CommandRunner
    from runtime.tools.io.files import FileAccess

    config = spec.config
    env = ToolEnv(
        roots=roots,
        host=spec.host,
        session_id=spec.session_id,
        temp_dir=config.temp_dir,
        files=FileAccess(spec.host),
        commands=CommandRunner(
            spec.host, env_allowlist=allowlist_from(config.settings), sandbox=sandbox
        ),
        extra={USER_HOME_KEY: config.home, CONTENT_GENERATOR_KEY: lambda: link.session.generator},
    )
    if spec.system_prompt is None:  # a session whose prompt reads the context files
        env.extra[MEMORY_SAVED_KEY] = link.memory_saved
    return env


def session_tools(
    spec: SessionSpec,
    policy: PolicyEngine,
    link: SessionLink,
    create_child: SessionFactory | None,
) -> dict[str, GcliTool]:
    """The catalog (a subagent: only its definition's tools), the session's own tools,
    and a main session's subagents (each started through `create_child`)."""
    from runtime.tools.catalog import build_catalog

    tools: dict[str, Any] = dict(build_catalog())
    if spec.auth is not None and spec.auth.kind == "none":
        # Google Search grounding is Gemini's: without Google credentials it cannot run
        # (with them, it goes to Gemini whatever the session's model)
        tools.pop(WEB_SEARCH_TOOL, None)
    if spec.tool_names is not None:  # a subagent: only its definition's tools
        tools = {name: tool for name, tool in tools.items() if name in spec.tool_names}
    if spec.write_scope is not None:  # a subagent's scoped writes (`runtime.agents.scope`)
        tools = spec.write_scope.guard(tools)
    for tool in spec.extra_tools:  # complete_task: the subagent's own, always allowed
        tools[tool.name] = tool
        policy.allow_tool(tool.name)
    if spec.kind == "main" and create_child is not None:
        from runtime.agents.definitions import load_definitions
        from runtime.agents.subagent import subagent_tools

        definitions = load_definitions(spec.config.workspace, spec.config.home)
        for tool in subagent_tools(definitions, lambda: link.session, create_child, set(tools)):
            tools[tool.name] = tool
            policy.allow_tool(tool.name)  # its own tools ask, through the editor
    return tools


def sandboxed_servers(
    configs: tuple[McpServerConfig, ...], spec: SessionSpec
) -> tuple[McpServerConfig, ...]:
    """The stdio servers whose settings entry asks for it (`"sandbox": true`) started
    through the session's sandbox, when one is on."""
    from dataclasses import replace

    from runtime.tools.mcp.config import McpStdioServer

    if not any(isinstance(c, McpStdioServer) and c.options.sandbox for c in configs):
        return configs
    sandbox = session_sandbox(spec, (spec.config.workspace, *spec.additional_roots))
    if not sandbox.active:
        return configs
    wrapped: list[McpServerConfig] = []
    for config in configs:
        if isinstance(config, McpStdioServer) and config.options.sandbox:
            cwd = Path(config.cwd) if config.cwd else spec.config.workspace
            argv = sandbox.wrap([config.command, *config.args], cwd)
            config = replace(config, command=argv[0], args=tuple(argv[1:]))
        wrapped.append(config)
    return tuple(wrapped)


def build_mcp(
    spec: SessionSpec, scheduler: Scheduler, link: SessionLink, policy: PolicyEngine | None = None
) -> GcliMcpToolset | None:
    """The MCP servers of the editor and of the settings (`mcpServers`; the editor's win on
    a name clash) as an ADK toolset (None without any); started by `start()`. Trusted
    servers' tools are allowed without asking, but never past plan mode's rules (there
    only tools marked read-only are offered and run)."""
    from runtime.tools.mcp.config import merged_servers, prompt_wait, servers_from_settings

    configs = merged_servers(
        spec.mcp_servers, servers_from_settings(spec.config.settings, spec.config.workspace)
    )
    allowed = None if spec.tool_names is None else frozenset(spec.tool_names)
    if allowed is not None:  # a subagent starts only the servers whose tools it names
        configs = tuple(c for c in configs if _names_a_tool_of(allowed, c.name))
    if not configs:
        return None
    configs = sandboxed_servers(configs, spec)
    from runtime.adk.mcp_toolset import GcliMcpToolset
    from runtime.tools.mcp.servers import McpServers

    if policy is not None:
        for config in configs:
            if config.options.trust:
                policy.allow_server(config.name)
    from runtime.tools.mcp.oauth import oauth_dir

    servers = McpServers(
        configs,
        cwd=spec.config.workspace,
        prompt_wait=prompt_wait(spec.config.env),
        oauth_dir=oauth_dir(spec.config.env, spec.config.home),
    )
    servers.on_ready = link.commands_changed
    servers.on_notice = lambda text: link.notice(f"\n\n{text}\n\n")  # a link: not in italics
    return GcliMcpToolset(
        servers, scheduler=lambda: scheduler, notice=link.notice, mode=link.mode, allowed=allowed
    )


def _names_a_tool_of(names: frozenset[str], server: str) -> bool:
    """Whether a subagent's tool list names one of `server`'s tools (or a resource tool)."""
    from runtime.tools.mcp.resources import LIST_TOOL, READ_TOOL
    from runtime.tools.mcp.toolset import mcp_tool_name

    prefix = mcp_tool_name(server, "")
    return bool(names & {LIST_TOOL, READ_TOOL}) or any(n.startswith(prefix) for n in names)


def build_plugins(
    spec: SessionSpec,
    control: StreamControl,
    link: SessionLink,
    injection: InjectionService | None = None,
    hooks: HookRunner | None = None,
) -> list[Any]:
    """The guards of the session's kind: loop detection (main sessions) and the limits;
    steering (the user's messages sent into a running turn) when given a queue."""
    from runtime.adk.plugins.hook_bridge import MODEL_EVENTS

    plugins: list[Any] = []
    if hooks is not None and any(hooks.has(e) for e in MODEL_EVENTS):
        from runtime.adk.plugins.hook_bridge import HookBridgePlugin

        plugins.append(
            HookBridgePlugin(
                hooks,
                notice=link.notice,
                stop=hook_stop(link),
                block=hook_stop(link, "blocked"),
            )
        )
    if injection is not None:
        from runtime.adk.plugins.steering import SteeringAdkPlugin

        plugins.append(
            SteeringAdkPlugin(injection, lambda parts: link.protocol.user_message(parts))
        )
    if spec.kind == "main":
        plugins.append(loop_plugin(control, link))
    return plugins + limit_plugins(spec, link)


def loop_plugin(control: StreamControl, link: SessionLink) -> Any:
    """LoopDetection: a nudge is told; a loop ends the turn with why."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.adk.plugins.loop_detection import LoopDetectionAdkPlugin
    from runtime.services.loop_detection import LoopDetectionService

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

    detector = LoopDetectionService()
    return LoopDetectionAdkPlugin(detector, on_loop, control=control, on_nudge=on_nudge)


def limit_plugins(spec: SessionSpec, link: SessionLink) -> list[Any]:
    """MaxTurns, TokenLimit and MaxTime, for the limits that are set."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.adk.plugins.limits import (
        LimitReached,
        MaxTimeAdkPlugin,
        MaxTurnsAdkPlugin,
        TokenLimitAdkPlugin,
    )

    def on_limit(limit: LimitReached) -> None:
        stop = StopRequest(reason=limit.reason, message=limit.message, code=limit.code)  # type: ignore[arg-type]
        link.request_stop(stop)

    plugins: list[Any] = []
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
    model_state: ModelState,
    parts: SchedulerParts,
    mcp: GcliMcpToolset | None,
    prompt: SystemPrompt,
    on_masked: Callable[[list[Any]], None] | None = None,
    mode: Callable[[], str] = lambda: "default",
) -> Any:
    """The LlmAgent with the system prompt, the tools (through the scheduler) and the
    ordered request processors (masking, then routing, after `contents`)."""
    from runtime.adk.agent import GcliLlmAgent
    from runtime.adk.processors import gcli_processors
    from runtime.adk.tools import GcliToolset, to_adk_tools
    from runtime.services.masking import ToolOutputMaskingService

    masking = ToolOutputMaskingService(outputs_dir(spec.config.temp_dir, spec.session_id))
    scheduler = parts.scheduler
    builtin = to_adk_tools(parts.tools.values(), scheduler_provider=lambda _ctx: scheduler)
    tools: list[Any] = [GcliToolset(builtin, mode)]
    if mcp is not None:
        tools.append(mcp)
    return GcliLlmAgent(
        name="gemini_cli_agent",
        model=model,
        instruction=lambda _ctx: prompt.for_mode(mode()),
        tools=tools,
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
        gcli_processors=gcli_processors(model_state, masking, on_masked),
    )
