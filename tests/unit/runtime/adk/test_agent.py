"""GcliLlmAgent's flow (runtime/adk/agent.py): built once and shared by ADK's copies of
the agent, our processors after `contents`, and the ADK processors it leaves out are
exactly those that do nothing for this agent (each checked against ADK's own
processor: no event, the request unchanged)."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.run_config import RunConfig
from google.adk.auth.auth_tool import AuthConfig
from google.adk.code_executors.built_in_code_executor import BuiltInCodeExecutor
from google.adk.flows.llm_flows.single_flow import SingleFlow
from google.adk.models.llm_request import LlmRequest
from google.adk.planners.built_in_planner import BuiltInPlanner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types
from pydantic import BaseModel

from runtime.adk.agent import GcliLlmAgent, idle_processors
from runtime.adk.tools import GcliToolset


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name

    async def run_async(self, *_: Any) -> Any:
        return
        yield


class _Answer(BaseModel):
    text: str


def _agent(**extra: Any) -> GcliLlmAgent:
    fields: dict[str, Any] = {
        "name": "agent",
        "model": "gemini-2.5-pro",
        "instruction": "be brief",
        "tools": [GcliToolset([], lambda: "default")],
        "gcli_processors": [_Named("gcli_a"), _Named("gcli_b")],
    }
    return GcliLlmAgent(**{**fields, **extra})


def _names(processors: list[Any]) -> list[str]:
    return [p.name for p in processors]


def test_the_flow_is_built_once_and_shared_by_copies() -> None:
    agent = _agent()
    flow = agent._llm_flow
    assert agent._llm_flow is flow
    assert agent.clone(update={"name": "copy"})._llm_flow is flow


def test_ours_follow_contents_and_the_idle_ones_are_left_out() -> None:
    flow = _agent()._llm_flow
    full = SingleFlow()
    names = _names(flow.request_processors)
    assert names[names.index("contents") + 1 : names.index("contents") + 3] == ["gcli_a", "gcli_b"]
    left_out = {"identity", "nl_planning", "code_execution", "output_schema"}
    assert [n for n in names if n not in ("gcli_a", "gcli_b")] == [
        n for n in _names(full.request_processors) if n not in left_out
    ]
    assert _names(flow.tool_request_processors) == [
        n for n in _names(full.tool_request_processors) if n != "toolset_auth"
    ]
    assert _names(flow.response_processors) == []


class _AuthToolset(GcliToolset):
    def get_auth_config(self) -> AuthConfig:
        from fastapi.openapi.models import APIKey

        return AuthConfig(
            auth_scheme=APIKey.model_validate({"in": "header", "name": "k"}),
            raw_auth_credential=None,
            credential_key="k",
        )


@pytest.mark.parametrize(
    ("extra", "kept"),
    [
        ({"planner": BuiltInPlanner(thinking_config=types.ThinkingConfig())}, "nl_planning"),
        ({"code_executor": BuiltInCodeExecutor()}, "code_execution"),
        ({"output_schema": _Answer}, "output_schema"),
        ({"tools": [_AuthToolset([], lambda: "default")]}, "toolset_auth"),
    ],
)
def test_a_processor_with_work_to_do_is_kept(extra: dict[str, Any], kept: str) -> None:
    agent = _agent(**extra)
    assert kept not in idle_processors(agent)
    assert kept in _names(
        [*agent._llm_flow.request_processors, *agent._llm_flow.tool_request_processors]
    )


async def test_each_left_out_processor_does_nothing_for_the_agent() -> None:
    agent = _agent()
    full = SingleFlow()
    idle = idle_processors(agent)
    assert idle == {"nl_planning", "code_execution", "output_schema", "toolset_auth"}
    service = InMemorySessionService()
    context = InvocationContext(
        session_service=service,
        invocation_id="i",
        agent=agent,
        session=Session(id="s", app_name="a", user_id="u"),
        run_config=RunConfig(),
    )
    processors = [
        p for p in (*full.request_processors, *full.tool_request_processors) if p.name in idle
    ]
    assert {p.name for p in processors} == idle
    for processor in processors:
        request = LlmRequest(
            model="gemini-2.5-pro",
            contents=[types.Content(role="user", parts=[types.Part(text="hi")])],
        )
        before = request.model_dump()
        events = [e async for e in processor.run_async(context, request)]
        assert events == [], processor.name
        assert request.model_dump() == before, processor.name
        assert not context.end_invocation
