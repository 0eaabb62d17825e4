"""toAdkTool: the ADK face of a GcliTool, run by a real ADK Runner with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from runtime.adk.tools import (
    GcliAdkTool,
    ProtocolToolEventSink,
    SchedulerRegistry,
    to_adk_tools,
)
from runtime.errors import ToolError
from runtime.host import Host, PermissionOutcome, PermissionRequest
from runtime.protocol import (
    AgentEvent,
    PlanEvent,
    ToolDisplay,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
)
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.scheduling.scheduler import Scheduler, ToolCallOutcome

SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "what to run"}},
    "required": ["command"],
}


class Shell(GcliTool):
    name = "run_shell_command"
    kind = "execute"
    description = "Runs a command."

    def __init__(self) -> None:
        self.ran: list[str] = []

    def parameters_schema(self) -> dict[str, Any]:
        return SCHEMA

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=str(args.get("command")), kind="execute")

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        self.ran.append(args["command"])
        return ToolResult(llm_content=f"ran {args['command']}")


class AnsweringHost(Host):
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []
        self.open = 0
        self.max_open = 0

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        self.requests.append(request)
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        await asyncio.sleep(0.01)
        self.open -= 1
        return PermissionOutcome(option_id=self.answer)


class ScriptedModel(BaseLlm):
    """First call: two parallel shell calls; then a final text. Records the requests."""

    model: str = "scripted"
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        if len(self.requests) == 1:
            calls = [
                types.Part(
                    function_call=types.FunctionCall(name="run_shell_command", args={"command": c})
                )
                for c in ("make one", "make two")
            ]
            yield LlmResponse(content=types.Content(role="model", parts=calls))
        else:
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text="all done")])
            )


def test_declaration_uses_the_json_schema() -> None:
    tool = GcliAdkTool(Shell(), scheduler_provider=SchedulerRegistry())
    declaration = tool._get_declaration()
    assert declaration.name == "run_shell_command"
    assert declaration.description == "Runs a command."
    assert declaration.parameters_json_schema == SCHEMA


async def test_run_async_schedules_with_the_call_id(tmp_path: Path) -> None:
    shell = Shell()
    env = ToolEnv(
        roots=(tmp_path,),
        host=AnsweringHost("proceed_once"),
        session_id="s1",
        temp_dir=tmp_path / "t",
    )
    sched = Scheduler(
        tools={shell.name: shell},
        env=env,
        policy=PolicyEngine(workspace_root=tmp_path),
        mode_getter=lambda: "yolo",
    )
    registry = SchedulerRegistry()
    unregister = registry.register("s1", sched)
    (tool,) = to_adk_tools([shell], scheduler_provider=registry)
    context: Any = SimpleNamespace(function_call_id="fc-1", session=SimpleNamespace(id="s1"))
    assert await tool.run_async(args={"command": "ls"}, tool_context=context) == {
        "output": "ran ls"
    }
    unregister()
    assert registry.get("s1") is None
    with pytest.raises(ToolError):
        await tool.run_async(args={"command": "ls"}, tool_context=context)


async def run_turn(
    tmp_path: Path, host: AnsweringHost, *, abort_on_cancel: bool
) -> tuple[list[Any], Shell, ScriptedModel]:
    shell = Shell()
    registry = SchedulerRegistry()
    model = ScriptedModel(requests=[])
    adk_tools: list[Any] = to_adk_tools([shell], scheduler_provider=registry)
    agent = LlmAgent(name="agent", model=model, tools=adk_tools)
    sessions = InMemorySessionService()
    runner = Runner(app_name="test", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="test", user_id="u")
    abort = asyncio.Event()
    env = ToolEnv(roots=(tmp_path,), host=host, session_id=session.id, temp_dir=tmp_path / "t")
    registry.register(
        session.id,
        Scheduler(
            tools={shell.name: shell},
            env=env,
            policy=PolicyEngine(workspace_root=tmp_path),
            mode_getter=lambda: "default",
            on_cancel=abort.set if abort_on_cancel else None,
        ),
    )
    events = []
    message = types.Content(role="user", parts=[types.Part(text="build it")])
    try:
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, abort_signal=abort
        ):
            events.append(event)
    finally:
        await runner.close()
    return events, shell, model


def responses(events: list[Any]) -> list[dict[str, Any]]:
    return [
        part.function_response.response
        for event in events
        if event.content
        for part in event.content.parts or []
        if part.function_response is not None and part.function_response.response is not None
    ]


async def test_parallel_calls_in_a_real_runner_ask_in_order(tmp_path: Path) -> None:
    host = AnsweringHost("proceed_once")
    events, shell, model = await run_turn(tmp_path, host, abort_on_cancel=False)
    assert host.max_open == 1
    assert [r.title for r in host.requests] == ["make one", "make two"]
    assert responses(events) == [{"output": "ran make one"}, {"output": "ran make two"}]
    assert sorted(shell.ran) == ["make one", "make two"]
    assert len(model.requests) == 2


async def test_cancelled_approval_aborts_the_run_cleanly(tmp_path: Path) -> None:
    host = AnsweringHost(None)
    events, shell, model = await run_turn(tmp_path, host, abort_on_cancel=True)
    assert len(host.requests) == 1 and shell.ran == []
    assert len(model.requests) == 1  # the model was not called again
    assert any(event.error_code == "INVOCATION_ABORTED" for event in events)


async def test_protocol_sink_emits_runtime_events() -> None:
    emitted: list[AgentEvent] = []
    counter = iter(range(100))

    def emit_external(build: Callable[[str, str], AgentEvent]) -> None:
        emitted.append(build(f"st-{next(counter)}", "st"))

    sink = ProtocolToolEventSink(emit_external)
    display = ToolDisplay(title="ls", kind="execute")
    await sink.tool_requested("c1", "run_shell_command", {"command": "ls"}, display)
    await sink.tool_updated("c1", "in_progress", None)
    outcome = ToolCallOutcome(
        status="completed",
        display=display,
        llm_content="a b",
        is_error=False,
        raw_output={"exit_code": 0},
        plan=[{"content": "step", "status": "pending", "priority": "medium"}],
    )
    await sink.tool_finished("c1", "run_shell_command", outcome)
    request, update, response, plan = emitted
    assert isinstance(request, ToolRequestEvent) and request.request_id == "c1"
    assert request.id == "st-0" and request.args == {"command": "ls"}
    assert isinstance(update, ToolUpdateEvent) and update.status == "in_progress"
    assert isinstance(response, ToolResponseEvent) and not response.is_error
    assert response.data == {"status": "completed", "output": "a b", "raw_output": {"exit_code": 0}}
    assert isinstance(plan, PlanEvent)
    assert [e.id for e in emitted] == ["st-0", "st-1", "st-2", "st-3"]


async def test_protocol_sink_from_a_plain_async_emit() -> None:
    emitted: list[AgentEvent] = []

    async def emit(event: AgentEvent) -> None:
        emitted.append(event)

    sink = ProtocolToolEventSink.from_emit(
        emit=emit, next_id=lambda: "x", stream_id=lambda: "st", thread_id="sub-1"
    )
    await sink.tool_updated("c1", "in_progress", None)
    assert emitted[0].thread_id == "sub-1" and emitted[0].stream_id == "st"
