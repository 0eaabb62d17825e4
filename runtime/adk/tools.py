"""toAdkTool: a GcliTool as an ADK `BaseTool` whose every call goes through the scheduler.

The ADK tool holds no session state. It finds the session's `Scheduler` through
a `SchedulerProvider` given the call's `ToolContext`; `SchedulerRegistry` is the
usual provider (one per server, keyed by the ADK session id). A session that
builds its own tool objects may pass `lambda _ctx: scheduler` instead.

`ProtocolToolEventSink` turns the scheduler's reports into `runtime.protocol`
events (`tool_request`, `tool_update`, `tool_response`, and a `custom` `plan`
event when a tool returns todo entries).
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from runtime.errors import ToolError
from runtime.protocol import (
    TODOS_PLAN_ID,
    AgentEvent,
    PlanEntry,
    PlanEvent,
    ToolDisplay,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
)
from runtime.tools.base import GcliTool
from runtime.tools.scheduling.scheduler import Scheduler, ToolCallOutcome

logger = logging.getLogger(__name__)

SchedulerProvider = Callable[[ToolContext], Scheduler]


class SchedulerRegistry:
    """Finds a session's scheduler by the ADK session id of the call.

    `register` returns a function that removes the entry (call it when the
    session closes). Calling the registry with a ToolContext returns the
    scheduler, or raises ToolError when the session has none.
    """

    def __init__(self) -> None:
        self._schedulers: dict[str, Scheduler] = {}

    def register(self, session_id: str, scheduler: Scheduler) -> Callable[[], None]:
        self._schedulers[session_id] = scheduler

        def unregister() -> None:
            if self._schedulers.get(session_id) is scheduler:
                del self._schedulers[session_id]

        return unregister

    def get(self, session_id: str) -> Scheduler | None:
        return self._schedulers.get(session_id)

    def __call__(self, tool_context: ToolContext) -> Scheduler:
        session_id = tool_context.session.id
        scheduler = self._schedulers.get(session_id)
        if scheduler is None:
            raise ToolError(f"no tool scheduler is registered for session {session_id}")
        return scheduler


class GcliAdkTool(BaseTool):
    """The ADK face of one GcliTool. `run_async` returns the scheduler's function
    response: `{"output": text}` or `{"error": text}`."""

    def __init__(self, tool: GcliTool, *, scheduler_provider: SchedulerProvider) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self.gcli_tool = tool
        self._scheduler_provider = scheduler_provider
        self._declaration: types.FunctionDeclaration | None = None

    def _get_declaration(self) -> types.FunctionDeclaration:
        # ADK asks at every model step; building it is ~0.6 ms (genai validation),
        # so it is built once: a tool's declaration never changes.
        if self._declaration is None:
            self._declaration = types.FunctionDeclaration(
                name=self.name,
                description=self.description,
                parameters_json_schema=self.gcli_tool.parameters_schema(),
            )
        return self._declaration

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        scheduler = self._scheduler_provider(tool_context)
        call_id = tool_context.function_call_id or f"call-{uuid.uuid4().hex[:16]}"
        return await scheduler.schedule(call_id, self.name, dict(args))


class GcliToolset(BaseToolset):
    """The built-in tools as offered in the current mode (design: tools filtered by mode
    through the toolset, so the model is never offered what it may not use): plan mode
    offers the read-only tools, writing the plan and `exit_plan_mode`; the other modes
    everything but `exit_plan_mode`."""

    def __init__(self, tools: list[GcliAdkTool], mode: Callable[[], str]) -> None:
        super().__init__()
        self._tools = tools
        self._mode = mode
        # ADK keeps a toolset's tools for a whole invocation; the mode can change within
        # one (exit_plan_mode), so they are asked for at every model call.
        self._use_invocation_cache = False

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        from runtime.tools.catalog import EXIT_PLAN_MODE, PLAN_MODE_TOOLS

        if self._mode() == "plan":
            return [t for t in self._tools if t.name in PLAN_MODE_TOOLS]
        return [t for t in self._tools if t.name != EXIT_PLAN_MODE]

    async def close(self) -> None:
        return None


def to_adk_tools(
    tools: Iterable[GcliTool], *, scheduler_provider: SchedulerProvider
) -> list[GcliAdkTool]:
    return [GcliAdkTool(tool, scheduler_provider=scheduler_provider) for tool in tools]


EmitEvent = Callable[[AgentEvent], Awaitable[None] | None]
# Builds an event from its id and stream id (the shape of AdkAgentProtocol.emit_external).
EventBuilder = Callable[[str, str], AgentEvent]
EmitExternal = Callable[[EventBuilder], Awaitable[None] | None]


class ProtocolToolEventSink:
    """A `ToolEventSink` that emits `runtime.protocol` events.

    `emit_external(build)` is handed a builder taking `(event_id, stream_id)`:
    the protocol that owns the ids and the active stream calls it and emits the
    event (sync or async). `from_emit` builds one from a plain `emit(event)` with
    id and stream functions. `tool_response.data` holds `status`
    (completed | failed | cancelled), `output` (what the model got) and, when
    present, `raw_output`. `thread_id` marks a subagent's events.
    """

    def __init__(self, emit_external: EmitExternal, *, thread_id: str | None = None) -> None:
        self._emit_external = emit_external
        self._thread_id = thread_id

    @classmethod
    def from_emit(
        cls,
        *,
        emit: EmitEvent,
        next_id: Callable[[], str],
        stream_id: Callable[[], str],
        thread_id: str | None = None,
    ) -> ProtocolToolEventSink:
        def emit_external(build: EventBuilder) -> Awaitable[None] | None:
            return emit(build(next_id(), stream_id()))

        return cls(emit_external, thread_id=thread_id)

    async def _send(self, build: Callable[[dict[str, Any]], AgentEvent]) -> None:
        thread_id = self._thread_id

        def builder(event_id: str, stream_id: str) -> AgentEvent:
            return build({"id": event_id, "stream_id": stream_id, "thread_id": thread_id})

        result = self._emit_external(builder)
        if inspect.isawaitable(result):
            await result

    async def tool_requested(
        self, call_id: str, name: str, args: dict[str, Any], display: ToolDisplay
    ) -> None:
        await self._send(
            lambda base: ToolRequestEvent(
                **base, request_id=call_id, name=name, args=args, display=display
            )
        )

    async def tool_updated(
        self, call_id: str, status: Literal["pending", "in_progress"], display: ToolDisplay | None
    ) -> None:
        await self._send(
            lambda base: ToolUpdateEvent(**base, request_id=call_id, status=status, display=display)
        )

    async def tool_waiting(self, call_id: str, waiting: bool) -> None:
        await self._send(
            lambda base: ToolUpdateEvent(
                **base, request_id=call_id, status="pending", waiting_on_user=waiting
            )
        )

    async def tool_finished(self, call_id: str, name: str, outcome: ToolCallOutcome) -> None:
        data: dict[str, Any] = {"status": outcome.status, "output": outcome.llm_content}
        if outcome.raw_output is not None:
            data["raw_output"] = outcome.raw_output
        await self._send(
            lambda base: ToolResponseEvent(
                **base,
                request_id=call_id,
                name=name,
                display=outcome.display,
                data=data,
                is_error=outcome.is_error,
            )
        )
        if outcome.plan is not None:
            entries = tuple(PlanEntry.of(e) for e in outcome.plan)
            plan_id, markdown = outcome.plan_id or TODOS_PLAN_ID, outcome.plan_markdown
            await self._send(
                lambda base: PlanEvent(**base, entries=entries, plan_id=plan_id, markdown=markdown)
            )
