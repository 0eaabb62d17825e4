"""GcliLlmAgent: ADK's `LlmAgent` carrying the design's ordered request processors.

`LlmAgent._llm_flow` builds a fresh flow on every step; this subclass builds a
`SingleFlow` (no transfers, no sub-agents), drops ADK's `identity` processor
(it would append "You are an agent…" to our exact system prompt) and inserts
our processors right after `contents`, in the given order: masking first, then
routing. They therefore see the history and run before the tool declarations
are added, as the design requires.

The flow is built once per agent (it holds no per-run state) and leaves out the
ADK processors that do nothing for this agent (performance, a warm step's cost):
planning without a planner, code execution without a code executor or
`support_cfc`, the output-schema one without an output schema, and toolset
auth when no toolset has an auth config. Each of them returns at once in those
cases, but runs as an async generator at every step (ADK 2.13).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.flows.llm_flows.single_flow import SingleFlow
from pydantic import Field, PrivateAttr

from runtime.adk.compat import (
    quiet_inference_logs,
    quiet_inference_results,
    skip_unavailable_optional_imports,
)
from runtime.adk.event_scans import install as install_event_scans
from runtime.adk.history_cache import install as install_history_cache

skip_unavailable_optional_imports()
quiet_inference_logs()
quiet_inference_results()
install_history_cache()
install_event_scans()

CONTENTS_PROCESSOR = "contents"


class GcliLlmAgent(LlmAgent):
    """An `LlmAgent` whose flow runs `gcli_processors` after ADK's `contents` processor."""

    gcli_processors: list[Any] = Field(default_factory=list, exclude=True)
    _flow: BaseLlmFlow | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        # built here, so the copies ADK makes of the agent at each run share it
        self._flow = self._build_flow()

    @property
    def _llm_flow(self) -> BaseLlmFlow:
        if self._flow is None:
            self._flow = self._build_flow()
        return self._flow

    def _build_flow(self) -> BaseLlmFlow:
        flow = SingleFlow()
        flow.remove_request_processor("identity")
        anchor = CONTENTS_PROCESSOR
        for processor in self.gcli_processors:
            flow.insert_request_processor_after(anchor, processor)
            anchor = processor.name
        idle = idle_processors(self)
        for processors in (flow.request_processors, flow.tool_request_processors):
            processors[:] = [p for p in processors if p.name not in idle]
        flow.response_processors = [p for p in flow.response_processors if p.name not in idle]
        return flow


def idle_processors(agent: LlmAgent) -> set[str]:
    """Names of ADK's processors that return at once for `agent` (left out of its flow),
    under the engine's `RunConfig` (which never sets `support_cfc`)."""
    from google.adk.tools.base_toolset import BaseToolset

    idle: set[str] = set()
    if not agent.planner:
        idle.add("nl_planning")
    if agent.code_executor is None:
        idle.add("code_execution")
    if not agent.output_schema:
        idle.add("output_schema")
    toolsets = [t for t in agent.tools if isinstance(t, BaseToolset)]
    if not any(t.get_auth_config() for t in toolsets):
        idle.add("toolset_auth")
    return idle
