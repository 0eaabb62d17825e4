"""Runtime events → ACP `session/update` notifications.

The one place that knows both vocabularies for events. Each `AgentEvent` maps
to zero or more update objects (`acp_server.schema` models); the caller wraps them in
a `SessionNotification`. Fatal errors map to nothing here: they end the prompt
with a JSON-RPC error instead (see `acp_server.session`). Non-fatal errors
(loop detected, a limit) and notices are `notice` updates for a client that opted in
(`clientCapabilities.session.notices`, see `ClientUpdates`); for any other client they
are agent message text, marked in `_meta` (`notice_meta`) so a client that knows the
mark can show them apart. A compression is a `compaction_update` with its summary for a
client with `session.compaction`. Updates newer than the set in `acp_server.schema` are
small models of our own here (`NoticeUpdate`, `CompactionUpdate`, `NamedToolCall`) and in
`updates_v121.py` (plan operations, subagent sessions; `ClientUpdates`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, assert_never

from pydantic import Field

from acp_server import schema
from acp_server.updates_v121 import ClientUpdates as ClientUpdates
from acp_server.updates_v121 import OptIn, PlanOperations, plain_plan, subagent_updates
from runtime.protocol import (
    AgentEndEvent,
    AgentEndReason,
    AgentEvent,
    AgentStartEvent,
    CommandsChangedEvent,
    CompactionEvent,
    DisplayContent,
    DisplayDiff,
    DisplayTerminal,
    DisplayText,
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PlanEntry,
    PlanEvent,
    SessionUpdateEvent,
    SubagentEvent,
    TextPart,
    ThoughtPart,
    ToolDisplay,
    ToolLocation,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
    UsageEvent,
)

if TYPE_CHECKING:  # not at import: an early session/load replays with this module
    from runtime.host import PermissionRequest

Update = Any  # one of the acp_server.schema session update models

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


def stop_reason(reason: AgentEndReason) -> StopReason:
    """The ACP stop reason of a turn that ended for `reason` (not "failed": that is an error).

    A time limit has no ACP reason of its own (`max_turn_requests` would say the request
    budget ran out): it ends the turn after a message saying which limit stopped it.
    """
    match reason:
        case "completed" | "elicitation" | "max_time" | "failed":
            return "end_turn"
        case "aborted":
            return "cancelled"
        case "max_turns":
            return "max_turn_requests"
        case "max_budget":
            return "max_tokens"
        case "refusal":
            return "refusal"
        case _:
            assert_never(reason)


def notice_text(text: str) -> str:
    """A notice as agent text: its own paragraph, never glued to the answer around it."""
    return f"\n\n{text.strip(chr(10))}\n\n"


NoticeSeverity = Literal["info", "warning", "error"]


class NoticeUpdate(OptIn):
    """`notice`: information for the user, not part of the answer (ACP 1.21, opt-in)."""

    opt_in = "notices"

    session_update: Literal["notice"] = Field(default="notice", alias="sessionUpdate")
    severity: NoticeSeverity
    title: str = Field(min_length=1)
    description: str | None = None


class CompactionUpdate(OptIn):
    """`compaction_update`: a finished compaction and its summary (ACP 1.21, opt-in)."""

    opt_in = "compaction"

    session_update: Literal["compaction_update"] = Field(
        default="compaction_update", alias="sessionUpdate"
    )
    compaction_id: str = Field(alias="compactionId")
    status: Literal["completed"] = "completed"
    summary: list[schema.TextContentBlock]


def compaction_updates(compaction_id: str, summary: str, client: ClientUpdates) -> list[Update]:
    """A compression, live or replayed: a completed `compaction_update` with its summary
    for a client that opted in; nothing for another (its notice says it in text)."""
    update = CompactionUpdate(compactionId=compaction_id, summary=[_text_block(summary)])
    return [update] if client.compaction else []


def turn_state(state: str, stop: str | None = None, error: str | None = None) -> dict[str, Any]:
    """The turn state in ACP v2's `state_update` words (`running`, `requires_action`,
    `idle` with the last `stopReason`), carried in v1 as `_meta.adkAcp.turnState`."""
    found = {"state": state, "stopReason": stop, "error": {"message": error} if error else None}
    return {k: v for k, v in found.items() if v is not None}


def turn_state_update(found: dict[str, Any]) -> schema.SessionInfoUpdate:
    """`turn_state` as a v1 `session_info_update` (`remote/turns.py` says when)."""
    meta = {"adkAcp": {"turnState": found}}
    return schema.SessionInfoUpdate(session_update="session_info_update", field_meta=meta)


def mode_update(mode: str) -> schema.CurrentModeUpdate:
    """`current_mode_update`: the session's mode changed."""
    return schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)


def config_update(options: list[dict[str, Any]]) -> schema.ConfigOptionUpdate:
    """`config_option_update`: always the complete list of config options."""
    return schema.ConfigOptionUpdate.model_validate(
        {"sessionUpdate": "config_option_update", "configOptions": options}
    )


def _text_block(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def tool_content(items: tuple[DisplayContent, ...]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, DisplayDiff):
            out.append(
                schema.FileEditToolCallContent(
                    type="diff", path=item.path, old_text=item.before_text, new_text=item.after_text
                )
            )
        elif isinstance(item, DisplayTerminal):
            if item.terminal_id:
                out.append(
                    schema.TerminalToolCallContent(type="terminal", terminal_id=item.terminal_id)
                )
            elif item.ansi:
                out.append(
                    schema.ContentToolCallContent(type="content", content=_text_block(item.ansi))
                )
        elif isinstance(item, DisplayText):
            out.append(
                schema.ContentToolCallContent(type="content", content=_text_block(item.text))
            )
        else:
            assert_never(item)
    return out


def _locations(locations: tuple[ToolLocation, ...]) -> list[schema.ToolCallLocation] | None:
    return [schema.ToolCallLocation(path=x.path, line=x.line) for x in locations] or None


ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class NamedToolCall(schema.ToolCallStart):
    """`tool_call` with the tool's programmatic `name` (ACP 1.21; the pinned schema
    has no field for it)."""

    name: str | None = None


def tool_call_update(
    call_id: str,
    display: ToolDisplay,
    *,
    name: str | None,
    status: ToolCallStatus,
    raw_input: Any = None,
    meta: dict[str, Any] | None = None,
) -> NamedToolCall:
    """`tool_call`: a call as the editor first sees it, live (pending) or replayed
    (its final status, the permission answer in `meta`); `name` is the tool's own name."""
    return NamedToolCall(
        session_update="tool_call",
        field_meta=meta,
        tool_call_id=call_id,
        name=name or None,
        title=display.title,
        kind=display.kind,
        status=status,
        locations=_locations(display.locations),
        raw_input=raw_input,
        content=tool_content(display.content) or None,
    )


def tool_progress(event: ToolUpdateEvent) -> schema.ToolCallProgress:
    """`tool_call_update` of a running call; the waiting-for-confirmation signal is a
    `pending` one with `_meta.adkAcp.awaitingConfirmation` (true, then false once answered)."""
    waiting, content = event.waiting_on_user, event.display.content if event.display else ()
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.request_id,
        status="in_progress" if waiting is None else "pending",
        content=tool_content(content) if content else None,
        field_meta=None if waiting is None else {META_KEY: {"awaitingConfirmation": waiting}},
    )


def plan_update(entries: tuple[PlanEntry, ...]) -> schema.AgentPlanUpdate:
    """`plan`: the agent's whole plan (plan operations: `updates_v121.PlanOperations`)."""
    return plain_plan(entries)


META_KEY = "adkAcp"  # this agent's key in `_meta`: clients that know it show more


def notice_meta(level: str, text: str) -> dict[str, Any]:
    """`_meta` of an agent text chunk that is a notice (info, warning, error), not an answer."""
    return {META_KEY: {"notice": {"level": level, "text": text}}}


def agent_chunk(text: str, meta: dict[str, Any] | None = None) -> schema.AgentMessageChunk:
    """`agent_message_chunk`: a piece of the agent's text."""
    return schema.AgentMessageChunk(
        session_update="agent_message_chunk", content=_text_block(text), field_meta=meta
    )


def notice_updates(severity: NoticeSeverity, text: str, client: ClientUpdates) -> list[Update]:
    """A notice, live or replayed: a `notice` (its first line the title, the rest the
    description) when the client opted in, else agent text (an info as its own
    paragraph, a warning or error in bold) marked with `notice_meta` (the `notice`'s fallback)."""
    if not text.strip():
        return []
    shown = notice_text(text) if severity == "info" else f"\n\n**{text}**\n"
    plain = agent_chunk(shown, notice_meta(severity, text))
    if not client.notices:
        return [plain]
    title, _, rest = text.strip().partition("\n")
    notice = NoticeUpdate(severity=severity, title=title.strip(), description=rest.strip() or None)
    return [notice.model_copy(update={"fallback": (plain,)})]


def replayed_permission_meta(permission: dict[str, Any]) -> dict[str, Any]:
    """`_meta` of a replayed `tool_call` whose permission request was answered:
    {title, options: [{optionId, name, kind}], answer: optionId or None (cancelled)},
    and `modified: true` when the user allowed the edit with their own changes."""
    return {META_KEY: {"permission": permission}}


class UpdateMapper:
    """Maps one session's events. `config_options` gives the full current option list;
    `client` says which optional updates the client takes."""

    def __init__(
        self,
        config_options: Callable[[], list[Any]],
        current_mode: Callable[[], str],
        client: ClientUpdates | None = None,
    ) -> None:
        self._config_options = config_options
        self._current_mode = current_mode
        self._client = client or ClientUpdates()
        self.plans = PlanOperations(self._client)

    def map(self, event: AgentEvent) -> list[Update]:  # noqa: C901 - one branch per event kind
        if isinstance(event, MessageEvent):
            return self._message(event)
        if isinstance(event, ToolRequestEvent):
            return [self._tool_call(event)]
        if isinstance(event, ToolUpdateEvent):
            return [tool_progress(event)]
        if isinstance(event, ToolResponseEvent):
            return [self._tool_done(event)]
        if isinstance(event, SessionUpdateEvent):
            return self._session_update(event)
        if isinstance(event, UsageEvent):
            used = (event.input_tokens or 0) + (event.output_tokens or 0)
            size = event.context_window or 0
            return [
                schema.UsageUpdate(session_update="usage_update", used=used, size=max(size, used))
            ]
        if isinstance(event, ErrorEvent):
            return [] if event.fatal else self.notice("warning", event.message)
        if isinstance(event, PlanEvent):
            return self.plans.updates(event)
        if isinstance(event, NoticeEvent):
            return self.notice("info", event.text)
        if isinstance(event, CompactionEvent):
            return compaction_updates(event.compaction_id, event.summary, self._client)
        if isinstance(event, SubagentEvent):
            return subagent_updates(event, self._client)
        if isinstance(event, AgentStartEvent | AgentEndEvent | CommandsChangedEvent):
            return []  # commands: `AcpSession` sends the whole list
        assert_never(event)

    def notice(self, severity: NoticeSeverity, text: str) -> list[Update]:
        """A notice as the client takes it: a `notice`, or marked agent text."""
        return notice_updates(severity, text, self._client)

    def _message(self, event: MessageEvent) -> list[Update]:
        if event.role != "agent":
            return []
        out: list[Update] = []
        for part in event.content:
            if isinstance(part, TextPart):
                out.append(agent_chunk(part.text))
            elif isinstance(part, ThoughtPart):
                out.append(
                    schema.AgentThoughtChunk(
                        session_update="agent_thought_chunk", content=_text_block(part.thought)
                    )
                )
        return out

    @staticmethod
    def _tool_call(event: ToolRequestEvent) -> schema.ToolCallStart:
        display = event.display or ToolDisplay(title=event.name)
        return tool_call_update(
            event.request_id, display, name=event.name, status="pending", raw_input=event.args
        )

    @staticmethod
    def _tool_done(event: ToolResponseEvent) -> schema.ToolCallProgress:
        display = event.display
        return schema.ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=event.request_id,
            status="failed" if event.is_error else "completed",
            title=display.title if display else None,
            locations=_locations(display.locations) if display else None,
            content=tool_content(display.content) if display and display.content else None,
            raw_output=event.data,
        )

    def _session_update(self, event: SessionUpdateEvent) -> list[Update]:
        out: list[Update] = []
        if event.title:
            now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            out.append(
                schema.SessionInfoUpdate(
                    session_update="session_info_update", title=event.title, updated_at=now
                )
            )
        if event.config:
            if "mode" in event.config:
                out.append(mode_update(self._current_mode()))
            out.append(config_update(self._config_options()))
        return out


def permission_params(session_id: str, request: PermissionRequest) -> dict[str, Any]:
    """`session/request_permission` params: the call as a pending `toolCall` and the options."""
    tool_call: dict[str, Any] = {
        "toolCallId": request.tool_call_id,
        "title": request.title,
        "kind": request.kind,
        "status": "pending",
        **({"name": request.tool_name} if request.tool_name else {}),
    }
    if request.locations:
        tool_call["locations"] = [
            {"path": loc.path, **({"line": loc.line} if loc.line is not None else {})}
            for loc in request.locations
        ]
    if request.raw_input is not None:
        tool_call["rawInput"] = request.raw_input
    if request.content:
        tool_call["content"] = [
            c.model_dump(mode="json", by_alias=True, exclude_none=True)
            for c in tool_content(request.content)
        ]
    return {
        "sessionId": session_id,
        "toolCall": tool_call,
        "options": [
            {"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in request.options
        ],
    }
