"""AgentProtocol and the AgentEvent union (design: `AgentProtocol`, `AgentEvent`).

The engine speaks only these types to the outside. Every event is a frozen,
tagged pydantic model; `AgentEvent` is their discriminated union. A consumer that
matches over `event.type` ends in `assert_never`, so a new kind fails the type
check instead of vanishing.

Port of Gemini CLI's `core/src/agent/types.ts` (see
`docs/gemini-cli-behaviours.md#agentprotocol-and-events`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- content parts


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ThoughtPart(_Frozen):
    type: Literal["thought"] = "thought"
    thought: str
    thought_signature: str | None = None


class MediaPart(_Frozen):
    """Inline (base64 `data`) or linked (`uri`) media such as an image."""

    type: Literal["media"] = "media"
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None


class ReferencePart(_Frozen):
    """A referenced resource (an @-mentioned file): its text or data, and where it came from."""

    type: Literal["reference"] = "reference"
    text: str
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None


ContentPart = Annotated[
    TextPart | ThoughtPart | MediaPart | ReferencePart, Field(discriminator="type")
]


# ---------------------------------------------------------------- display content (tools)


class DisplayText(_Frozen):
    type: Literal["text"] = "text"
    text: str


class DisplayDiff(_Frozen):
    """A file edit: `before_text` is None for a new file."""

    type: Literal["diff"] = "diff"
    path: str
    before_text: str | None
    after_text: str


class DisplayTerminal(_Frozen):
    """A command's output. `terminal_id` names an editor terminal when the editor runs it."""

    type: Literal["terminal"] = "terminal"
    terminal_id: str | None = None
    pid: int | None = None
    exit_code: int | None = None
    ansi: str | None = None


DisplayContent = Annotated[DisplayText | DisplayDiff | DisplayTerminal, Field(discriminator="type")]

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]


class ToolLocation(_Frozen):
    path: str
    line: int | None = None


class ToolDisplay(_Frozen):
    """How a tool call is shown: a readable title, its kind, the files it touches."""

    title: str
    kind: ToolKind = "other"
    locations: tuple[ToolLocation, ...] = ()
    content: tuple[DisplayContent, ...] = ()


# ---------------------------------------------------------------- events

AgentEndReason = Literal[
    "completed",
    "failed",
    "aborted",
    "max_turns",
    "max_budget",
    "max_time",
    "refusal",
    "elicitation",
]

ErrorStatus = Literal[
    "INVALID_ARGUMENT",
    "UNAUTHENTICATED",
    "PERMISSION_DENIED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "RESOURCE_EXHAUSTED",
    "INTERNAL",
    "UNIMPLEMENTED",
    "UNAVAILABLE",
    "DEADLINE_EXCEEDED",
    "CANCELLED",
]


class _EventBase(_Frozen):
    id: str
    stream_id: str
    timestamp: str = Field(default_factory=now_iso)
    thread_id: str | None = None
    meta: dict[str, Any] | None = None


class SessionUpdateEvent(_EventBase):
    """Session facts changed: title, the model in use, or config (mode, model choice)."""

    type: Literal["session_update"] = "session_update"
    title: str | None = None
    model: str | None = None
    config: dict[str, Any] | None = None


class MessageEvent(_EventBase):
    """A piece of a message. For the agent these are streamed deltas, never repeated."""

    type: Literal["message"] = "message"
    role: Literal["user", "agent", "developer"]
    content: tuple[ContentPart, ...]


class AgentStartEvent(_EventBase):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(_EventBase):
    type: Literal["agent_end"] = "agent_end"
    reason: AgentEndReason
    data: dict[str, Any] | None = None


class ToolRequestEvent(_EventBase):
    type: Literal["tool_request"] = "tool_request"
    request_id: str
    name: str
    args: dict[str, Any]
    display: ToolDisplay | None = None


class ToolUpdateEvent(_EventBase):
    """Progress of a tool call: `status` moves to in_progress; content is the latest display.

    `waiting_on_user` (design: the onWaitingForConfirmation activity signal): True when
    the call starts waiting on the user's approval (status pending), False once answered."""

    type: Literal["tool_update"] = "tool_update"
    request_id: str
    status: Literal["pending", "in_progress"] = "in_progress"
    display: ToolDisplay | None = None
    data: dict[str, Any] | None = None
    waiting_on_user: bool | None = None


class ToolResponseEvent(_EventBase):
    type: Literal["tool_response"] = "tool_response"
    request_id: str
    name: str
    display: ToolDisplay | None = None
    data: dict[str, Any] | None = None
    is_error: bool = False


class UsageEvent(_EventBase):
    type: Literal["usage"] = "usage"
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    context_window: int | None = None


class ModelFailure(_Frozen):
    """A model call that failed for good, as one value from the engine (where the
    exception is caught) to the editor face (`acp_server/errors.py` maps it onto a
    JSON-RPC error): the gRPC status, our finer `code` (QUOTA_EXHAUSTED, ...), the
    model, and the HTTP status when only that is known."""

    status: ErrorStatus
    code: str | None = None
    model: str | None = None
    http_status: int | None = None


class ErrorEvent(_EventBase):
    """An error the user should see. `meta["code"]` carries codes such as LOOP_DETECTED;
    `failure` is set when the model call failed for good (the turn then fails)."""

    type: Literal["error"] = "error"
    status: ErrorStatus
    message: str
    fatal: bool
    failure: ModelFailure | None = None


class PlanEntry(_Frozen):
    """One entry of the agent's plan (a todo): what, how urgent, how far."""

    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> PlanEntry:
        """An entry from its plain form (a tool's result, a record); unknown values
        fall back to pending / medium."""
        status = entry.get("status")
        priority = entry.get("priority")
        return cls(
            content=str(entry.get("content", "")),
            status=status if status in ("pending", "in_progress", "completed") else "pending",
            priority=priority if priority in ("high", "medium", "low") else "medium",
        )


TODOS_PLAN_ID = "todos"


class PlanEvent(_EventBase):
    """A plan changed (the todo list, a plan file): the whole list, in order; `plan_id`
    names which (stable in a session); `markdown` is a plan file's text. A todo list
    with no entries is a cleared plan."""

    type: Literal["plan"] = "plan"
    entries: tuple[PlanEntry, ...]
    plan_id: str = TODOS_PLAN_ID
    markdown: str | None = None


class NoticeEvent(_EventBase):
    """A message to show the user (a hook's systemMessage, a fallback, a stream cut).

    `retry`: the model is asked again after a broken stream, so what it streamed
    before this notice is not part of the answer."""

    type: Literal["notice"] = "notice"
    text: str
    retry: bool = False


class CompactionEvent(_EventBase):
    """The older history was summarized (`/compress` or automatically): `summary` now
    stands for it in the model's history; `compaction_id` is the recorded message's id."""

    type: Literal["compaction"] = "compaction"
    compaction_id: str
    summary: str
    tokens_before: int
    tokens_after: int


class SubagentEvent(_EventBase):
    """A subagent session this session started (`child_id`) is running or has ended
    (`end_reason`). The subagent's own events are relayed on this stream after it, with
    `thread_id` = `child_id`; `task` is what it was asked."""

    type: Literal["subagent"] = "subagent"
    child_id: str
    name: str
    title: str
    task: str
    state: Literal["running", "idle"]
    end_reason: AgentEndReason | None = None


class CommandsChangedEvent(_EventBase):
    """The slash commands changed (MCP prompts arrived): the editor is told again."""

    type: Literal["commands_changed"] = "commands_changed"


AgentEvent = Annotated[
    SessionUpdateEvent
    | MessageEvent
    | AgentStartEvent
    | AgentEndEvent
    | ToolRequestEvent
    | ToolUpdateEvent
    | ToolResponseEvent
    | UsageEvent
    | ErrorEvent
    | PlanEvent
    | NoticeEvent
    | CompactionEvent
    | SubagentEvent
    | CommandsChangedEvent,
    Field(discriminator="type"),
]


# ---------------------------------------------------------------- send payloads


class MessageSend(_Frozen):
    kind: Literal["message"] = "message"
    content: tuple[ContentPart, ...]
    display_content: str | None = None


class UpdateSend(_Frozen):
    kind: Literal["update"] = "update"
    title: str | None = None
    model: str | None = None
    config: dict[str, Any] | None = None


AgentSend = Annotated[MessageSend | UpdateSend, Field(discriminator="kind")]


class SendResult(_Frozen):
    """`stream_id` names the stream started by the send; None: acknowledged, nothing started."""

    stream_id: str | None


Unsubscribe = Callable[[], None]
NoticeSink = Callable[[str], None]
"""The one route for notices to the user (a hook's systemMessage, a silent fallback, an
MCP server that died): the session's `AdkAgentProtocol.notice`, which emits a
`NoticeEvent` that `acp_server/updates.py` renders. A notice that must
keep its place inside the model's answer (a retry after a broken stream) rides on the
model stream instead (`runtime.adk.model.notice_response`) and becomes the same event."""
Subscriber = Callable[[AgentEvent], None]


class AgentProtocol(abc.ABC):
    """The engine's face: send input, watch events, abort the active stream.

    `send` returns before the stream's `agent_start` is emitted. A second message
    send while a stream is active raises `StreamActiveError`.
    """

    @abc.abstractmethod
    async def send(self, payload: AgentSend) -> SendResult: ...

    @abc.abstractmethod
    def subscribe(self, callback: Subscriber) -> Unsubscribe: ...

    @abc.abstractmethod
    async def abort(self) -> None: ...

    @property
    @abc.abstractmethod
    def events(self) -> tuple[AgentEvent, ...]:
        """The session's recent events, oldest first (an implementation may keep only
        the newest few thousand; subscribers see every one as it happens)."""
