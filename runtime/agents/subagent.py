"""SubagentTool and the local subagent executor (design Phase B: a subagent is a tool of
the main agent whose invocation runs its own AdkAgentProtocol session, made by the
session factory).

The subagent gets its definition's system prompt, only its definition's tools plus the
mandatory terminator `complete_task(result)`, turn and time limits (no loop
detection: `kind="subagent"`), and the parent's model client, workspace roots and
editor: its approvals are the editor's permission requests, titled with its name. A
turn that ends without `complete_task` (ERROR_NO_COMPLETE_TASK_CALL), or at the turn
or time limit, gets exactly one grace turn (at most 60 s) telling it to call
`complete_task` now; then the call fails with a clear error. The editor sees one tool
call whose progress lists the subagent's own calls; cancelling the parent's turn
aborts the subagent (and its commands). When the parent is recorded, the subagent is
recorded too (kind `subagent`, linked by `parentSessionId`; the tool result carries
its `subagentSessionId`); subagent records are not listed to the user.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from runtime.agents.definitions import AgentDefinition
from runtime.agents.relay import Relay
from runtime.agents.scope import ScopeError, definition_scope
from runtime.config import Limits
from runtime.host import (
    FallbackChoice,
    FallbackIntent,
    Host,
    PermissionOutcome,
    PermissionRequest,
    TerminalHandle,
    TerminalRequest,
)
from runtime.protocol import (
    AgentEndEvent,
    AgentEvent,
    DisplayText,
    MessageSend,
    TextPart,
    ToolDisplay,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
)
from runtime.session.spec import SessionSpec
from runtime.tools.base import GcliTool, ToolEnv, ToolResult

if TYPE_CHECKING:
    from pathlib import Path

    from runtime.config import RuntimeConfig
    from runtime.models.content_generator import ContentGenerator
    from runtime.session.agent_session import AgentSession, SessionFactory
    from runtime.tools.policy.modes import ApprovalMode

logger = logging.getLogger(__name__)

COMPLETE_TASK = "complete_task"
GRACE_S = 60.0
WAITING = " (waiting for your approval)"  # a child call that waits, as its parent shows it
NO_COMPLETE_TASK = "ERROR_NO_COMPLETE_TASK_CALL"
GRACE_MESSAGE = (
    "{reason} You have one final chance to complete the task with a short grace period. "
    "You MUST call `complete_task` immediately with your best answer and explain that your "
    "investigation was interrupted. Do not call any other tools."
)
COMPLETE_RULE = (
    "\n\n# Finishing\nWhen you are done, call `complete_task` with your full answer as "
    "`result`: it is the only thing the agent that asked you will see. Always finish "
    "with `complete_task`."
)
_REASONS = {
    "max_turns": "You have reached the maximum number of turns.",
    "max_time": "You have run out of time.",
}


class ParentView(Protocol):
    """What a subagent reads of the session that starts it (read-only)."""

    @property
    def id(self) -> str: ...
    @property
    def spec(self) -> SessionSpec: ...
    @property
    def config(self) -> RuntimeConfig: ...
    @property
    def mode(self) -> ApprovalMode: ...
    @property
    def model_choice(self) -> str: ...
    @property
    def generator(self) -> ContentGenerator: ...
    def relay(self, make: Callable[[str, str], AgentEvent]) -> None: ...


@dataclass
class TaskOutcome:
    """Filled by `complete_task`; `stop` ends the subagent's stream."""

    result: str | None = None
    stop: Callable[[], None] = lambda: None


class CompleteTaskTool(GcliTool):
    """The subagent's mandatory terminator."""

    name = COMPLETE_TASK
    kind = "think"
    description = (
        "Finish the task: give your complete answer as `result`. Call it exactly once, last."
    )

    def __init__(self, outcome: TaskOutcome) -> None:
        self._outcome = outcome

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"result": {"type": "string", "description": "Your full answer."}},
            "required": ["result"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        result = args.get("result")
        return None if isinstance(result, str) and result.strip() else "'result' must be text."

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title="Task complete", kind="think")

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        self._outcome.result = str(args["result"])
        self._outcome.stop()
        return ToolResult(llm_content="Task completed.")


class ChildHost(Host):
    """The parent's editor as the subagent sees it: questions titled with its name."""

    def __init__(self, parent: Host, title: str) -> None:
        self._parent = parent
        self._title = title
        self.capabilities = parent.capabilities

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        titled = dataclasses.replace(request, title=f"{self._title}: {request.title}")
        return await self._parent.request_permission(titled)

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        return await self._parent.read_text_file(path, line, limit)

    async def write_text_file(self, path: Path, content: str) -> None:
        await self._parent.write_text_file(path, content)

    async def create_terminal(self, request: TerminalRequest) -> TerminalHandle:
        return await self._parent.create_terminal(request)

    async def choose_fallback(self, choice: FallbackChoice) -> FallbackIntent:
        return await self._parent.choose_fallback(choice)


@dataclass
class _Progress:
    """The subagent's own tool calls, as the lines its parent's tool call shows."""

    lines: dict[str, str] = field(default_factory=dict)

    def text(self, head: str) -> str:
        return "\n".join([head, *self.lines.values()])

    def observe(self, event: AgentEvent) -> bool:
        """Follow one of the child's events; True when the lines changed."""
        if isinstance(event, ToolRequestEvent) and event.name != COMPLETE_TASK:
            title = event.display.title if event.display else event.name
            self.lines[event.request_id] = f"… {title}"
        elif isinstance(event, ToolUpdateEvent) and event.request_id in self.lines:
            if event.waiting_on_user is None:  # the child's call waits on the user, or not
                return False
            line = self.lines[event.request_id].removesuffix(WAITING)
            self.lines[event.request_id] = line + (WAITING if event.waiting_on_user else "")
        elif isinstance(event, ToolResponseEvent) and event.request_id in self.lines:
            mark = "✗" if event.is_error else "✓"
            self.lines[event.request_id] = mark + self.lines[event.request_id][1:]
        else:
            return False
        return True


class SubagentTool(GcliTool):
    """One subagent, offered to the main agent's model as a tool."""

    kind = "think"

    def __init__(
        self,
        definition: AgentDefinition,
        parent: Callable[[], ParentView],
        create_session: SessionFactory,
    ) -> None:
        self.definition = definition
        self.name = definition.name
        self.description = definition.description
        self._parent = parent
        self._create_session = create_session

    def parameters_schema(self) -> dict[str, Any]:
        inputs = self.definition.inputs
        return {
            "type": "object",
            "properties": {
                name: {"type": spec.type, "description": spec.description}
                for name, spec in inputs.items()
            },
            "required": [name for name, spec in inputs.items() if spec.required],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        missing = [
            name
            for name, spec in self.definition.inputs.items()
            if spec.required and args.get(name) in (None, "")
        ]
        return f"Missing input(s): {', '.join(missing)}." if missing else None

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=f"Subagent: {self.definition.title}", kind="think")

    def _task(self, args: dict[str, Any]) -> str:
        if set(args) <= {"task"} and isinstance(args.get("task"), str):
            return str(args["task"])
        return "\n".join(f"{name}: {value}" for name, value in args.items())

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        outcome = TaskOutcome()
        parent = self._parent()
        try:
            child = await start_subagent(self.definition, parent, outcome, self._create_session)
        except ScopeError as exc:
            return ToolResult(
                llm_content=f"The subagent '{self.name}' cannot run: {exc}.", is_error=True
            )
        relay = Relay(parent, child.id, self.definition, self._task(args))
        progress = _Progress()
        head = f"{self.definition.title} is working…"
        ends: list[asyncio.Future[AgentEndEvent]] = []
        pumps: set[asyncio.Future[None]] = set()

        def observe(event: AgentEvent) -> None:
            relay.event(event)
            if isinstance(event, AgentEndEvent):
                if ends and not ends[-1].done():
                    ends[-1].set_result(event)
            elif progress.observe(event) and env.on_progress is not None:
                shown = (DisplayText(text=progress.text(head)),)
                task: asyncio.Future[None] = asyncio.ensure_future(env.on_progress(shown))
                pumps.add(task)
                task.add_done_callback(pumps.discard)

        async def turn(text: str, timeout: float | None = None) -> AgentEndEvent:
            ends.append(asyncio.get_running_loop().create_future())
            await child.send(MessageSend(content=(TextPart(text=text),)))
            try:
                return await asyncio.wait_for(asyncio.shield(ends[-1]), timeout)
            except TimeoutError:
                await child.abort()
                return await ends[-1]

        unsubscribe = child.subscribe(observe)
        relay.state("running")
        end: AgentEndEvent | None = None
        try:
            end = await turn(self._task(args))
            if outcome.result is None and end.reason != "aborted":
                reason = _REASONS.get(
                    end.reason, f"You stopped without calling `complete_task` ({NO_COMPLETE_TASK})."
                )
                logger.info("subagent %s: grace turn (%s)", self.name, end.reason)
                end = await turn(GRACE_MESSAGE.format(reason=reason), GRACE_S)
        except asyncio.CancelledError:
            await child.abort()
            raise
        finally:
            unsubscribe()
            relay.state("idle", end.reason if end is not None else "aborted")
            await child.close()
        return self._result(child.id, end, outcome, progress, self._task(args))

    def _result(
        self,
        child_id: str,
        end: AgentEndEvent,
        outcome: TaskOutcome,
        progress: _Progress,
        task: str,
    ) -> ToolResult:
        shown = progress.text(f"{self.definition.title} finished.")
        raw = {
            "subagentSessionId": child_id,
            "endReason": end.reason,
            "title": self.definition.title,
            "task": task,
        }
        if outcome.result is None:
            return ToolResult(
                llm_content=f"The subagent '{self.name}' did not complete its task "
                f"({NO_COMPLETE_TASK}: no `complete_task` call, even after a grace turn; "
                f"it ended with '{end.reason}').",
                display=(DisplayText(text=shown),),
                is_error=True,
                raw_output=raw,
                error_type=NO_COMPLETE_TASK,
            )
        return ToolResult(
            llm_content=outcome.result,
            display=(DisplayText(text=f"{shown}\n\n{outcome.result}"),),
            raw_output=raw,
        )


async def start_subagent(
    definition: AgentDefinition,
    parent: ParentView,
    outcome: TaskOutcome,
    create_session: SessionFactory,
) -> AgentSession:
    """The subagent's own session, made by the injected session factory (see the module
    docstring)."""
    from runtime.adk.agent_protocol import StopRequest
    from runtime.services.recording import SessionStore
    from runtime.services.session_store import FileRecordStore, NewRecord

    spec = parent.spec
    config = dataclasses.replace(
        parent.config,
        model=definition.model or parent.model_choice,
        approval_mode=parent.mode,
        limits=Limits(max_turns=definition.max_turns, max_time_s=definition.timeout_mins * 60),
    )
    roots, writes = definition_scope(
        definition, spec.additional_roots, config.workspace, config.home, config.temp_dir
    )
    session_id = f"{parent.id}-{definition.name}-{uuid.uuid4().hex[:8]}"
    recording = None
    records = spec.records
    if records is None and spec.recording is not None:
        records = FileRecordStore(SessionStore(spec.recording.path.parent.parent))
    if records is not None:
        recording = await records.create(
            NewRecord(
                session_id,
                config.workspace,
                roots,
                kind="subagent",
                extra={"parentSessionId": parent.id, "agent": definition.name},
            )
        )
    child = await create_session(
        SessionSpec(
            config=config,
            auth=spec.auth,
            host=ChildHost(spec.host.for_subagent(session_id), definition.title),
            session_id=session_id,
            additional_roots=roots,  # its definition's scope (`scope`)
            generator=parent.generator,
            kind="subagent",
            recording=recording,
            records=records,
            system_prompt=definition.prompt + COMPLETE_RULE,
            tool_names=tuple(t for t in definition.tools if t != COMPLETE_TASK),
            extra_tools=(CompleteTaskTool(outcome),),
            write_scope=writes,
        )
    )
    outcome.stop = lambda: child.protocol.request_stop(StopRequest(reason="completed"))
    return child


def subagent_tools(
    definitions: list[AgentDefinition],
    parent: Callable[[], ParentView],
    create_session: SessionFactory,
    taken: set[str],
) -> list[SubagentTool]:
    """A tool per definition whose name no built-in tool has; each starts its session
    through `create_session`."""
    tools = []
    for definition in definitions:
        if definition.name in taken:
            logger.warning("subagent %s skipped: a tool has that name", definition.name)
            continue
        tools.append(SubagentTool(definition, parent, create_session))
    return tools
