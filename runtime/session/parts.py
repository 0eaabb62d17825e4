"""The typed parts one session is made of (built by `runtime.session.build`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.adk.agent_protocol import AdkAgentProtocol
    from runtime.adk.mcp_toolset import GcliMcpToolset
    from runtime.adk.model import GcliAgentModel
    from runtime.adk.plugins.steering import InjectionService
    from runtime.adk.recorder import SessionRecorder
    from runtime.adk.session_service import GcliSessionService
    from runtime.adk.stream_control import StreamControl
    from runtime.models.content_generator import ContentGenerator
    from runtime.models.state import ModelState
    from runtime.prompt import SystemPrompt
    from runtime.services.hooks import HookRunner
    from runtime.tools.base import GcliTool
    from runtime.tools.policy.engine import PolicyEngine
    from runtime.tools.scheduling.scheduler import Scheduler


@dataclass(frozen=True)
class SchedulerParts:
    scheduler: Scheduler
    tools: dict[str, GcliTool]
    policy: PolicyEngine


@dataclass(frozen=True)
class SessionParts:
    """Everything `assemble_session` built, handed to `AgentSession` in one piece."""

    generator: ContentGenerator
    model_state: ModelState
    """Model choice, availability and routing: which model the next call uses."""
    agent_model: GcliAgentModel
    """The ADK model object (`BaseLlm`) the agent calls."""
    control: StreamControl
    scheduler: SchedulerParts
    mcp: GcliMcpToolset | None
    agent: Any
    session_service: GcliSessionService
    runner: Any
    protocol: AdkAgentProtocol
    recorder: SessionRecorder | None
    prompt: SystemPrompt
    injection: InjectionService
    hooks: HookRunner | None
