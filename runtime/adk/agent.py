"""GcliLlmAgent: ADK's `LlmAgent` carrying the design's ordered request processors.

`LlmAgent._llm_flow` builds a fresh flow on every step; this subclass builds a
`SingleFlow` (no transfers, no sub-agents), drops ADK's `identity` processor
(it would append "You are an agent…" to our exact system prompt) and inserts
our processors right after `contents`, in the given order: masking first, then
routing. They therefore see the history and run before the tool declarations
are added, as the design requires.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.flows.llm_flows.single_flow import SingleFlow
from pydantic import Field

from runtime.adk.compat import quiet_inference_logs, skip_unavailable_optional_imports
from runtime.adk.event_scans import install as install_event_scans
from runtime.adk.history_cache import install as install_history_cache

skip_unavailable_optional_imports()
quiet_inference_logs()
install_history_cache()
install_event_scans()

CONTENTS_PROCESSOR = "contents"


class GcliLlmAgent(LlmAgent):
    """An `LlmAgent` whose flow runs `gcli_processors` after ADK's `contents` processor."""

    gcli_processors: list[Any] = Field(default_factory=list, exclude=True)

    @property
    def _llm_flow(self) -> BaseLlmFlow:
        flow = SingleFlow()
        flow.remove_request_processor("identity")
        anchor = CONTENTS_PROCESSOR
        for processor in self.gcli_processors:
            flow.insert_request_processor_after(anchor, processor)
            anchor = processor.name
        return flow
