"""A recorded conversation → the `session/update`s that show it again (`session/load`).

Each recorded message becomes what the editor saw live: the user's prompt as
`user_message_chunk`s (its text and images), the model's thoughts, text and tool
calls (each as one `tool_call` with its final status, title, kind, locations,
input and content: diffs included; an answered permission request rides along in
its `_meta`; each `tool_call` names its tool), notices and errors as the client takes
them live (`notice` updates, or agent text marked as notices in `_meta`), a compression
as a `compaction_update` with its summary to a client that takes them. After the
messages: the current plans (plan operations to a client that takes them, else the last
plan), the title, the mode and the config options. A subagent's run, to a client that
follows subagents, comes after its parent's answer: announced, its own record under its
session id (`ChildUpdate`), its end.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast, get_args

from pydantic import TypeAdapter, ValidationError

from acp_server import schema
from acp_server.updates import (
    ClientUpdates,
    NamedToolCall,
    ToolCallStatus,
    Update,
    agent_chunk,
    compaction_updates,
    config_update,
    mode_update,
    notice_updates,
    replayed_permission_meta,
    tool_call_update,
    tool_content,
)
from acp_server.updates_v121 import PlanOperations, subagent_updates
from runtime.protocol import (
    AgentEndReason,
    DisplayContent,
    DisplayText,
    SubagentEvent,
    ToolDisplay,
    ToolKind,
    ToolLocation,
)
from runtime.services.record import (
    GeminiMessage,
    Message,
    NoticeMessage,
    UserMessage,
    is_typed_prompt,
    tool_calls,
)


@functools.cache
def _display_adapter() -> TypeAdapter[DisplayContent]:
    """Built on first use: at import it cost the cold start (and an early load with no
    tool call) ~0.1 s."""
    return TypeAdapter(DisplayContent)


_STATUS: dict[str, ToolCallStatus] = {
    "success": "completed",
    "error": "failed",
    "cancelled": "failed",
}


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def _user(message: UserMessage) -> Iterator[Update]:
    shown = message.get("displayContent")
    content = message.get("content")
    parts = content if isinstance(content, list) else [content]
    if isinstance(shown, str) and shown:
        yield schema.UserMessageChunk(session_update="user_message_chunk", content=_text(shown))
    else:
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else part
            if isinstance(text, str) and text:
                yield schema.UserMessageChunk(
                    session_update="user_message_chunk", content=_text(text)
                )
    for part in parts:
        blob = part.get("inlineData") if isinstance(part, dict) else None
        if isinstance(blob, dict) and str(blob.get("mimeType", "")).startswith("image/"):
            yield schema.UserMessageChunk(
                session_update="user_message_chunk",
                content=schema.ImageContentBlock(
                    type="image", data=str(blob.get("data", "")), mime_type=blob["mimeType"]
                ),
            )


def _display(items: Any) -> tuple[DisplayContent, ...]:
    out = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(_display_adapter().validate_python(item))
        except ValidationError:
            continue
    return tuple(out)


def _call_display(call: dict[str, Any]) -> ToolDisplay:
    """A recorded tool call as it was shown: title, kind, locations, content (its
    display, else the text of its result)."""
    locations = tuple(
        ToolLocation(path=loc["path"], line=loc.get("line"))
        for loc in call.get("locations") or ()
        if isinstance(loc, dict) and isinstance(loc.get("path"), str)
    )
    content = _display(call.get("display"))
    if not tool_content(content) and isinstance(call.get("resultDisplay"), str):
        content = (DisplayText(text=call["resultDisplay"]),) if call["resultDisplay"] else ()
    kind = call.get("kind")
    return ToolDisplay(
        title=str(call.get("displayName") or call.get("name") or "tool"),
        kind=cast(ToolKind, kind) if kind in get_args(ToolKind) else "other",
        locations=locations,
        content=content,
    )


def _tool_call(call: dict[str, Any]) -> NamedToolCall:
    permission = call.get("permission")
    name = call.get("name")
    return tool_call_update(
        str(call.get("id")),
        _call_display(call),
        name=name if isinstance(name, str) else None,
        status=_STATUS.get(str(call.get("status")), "failed"),
        raw_input=call.get("args"),
        meta=replayed_permission_meta(permission) if isinstance(permission, dict) else None,
    )


def _gemini(message: GeminiMessage) -> Iterator[Update]:
    for thought in message.get("thoughts") or ():
        text = thought.get("description") if isinstance(thought, dict) else None
        if isinstance(text, str) and text:
            yield schema.AgentThoughtChunk(
                session_update="agent_thought_chunk", content=_text(text)
            )
    content = message.get("content")
    if isinstance(content, str) and content:
        yield agent_chunk(content)
    for call in tool_calls(message):
        yield _tool_call(call)


def _notice(message: NoticeMessage, client: ClientUpdates) -> Iterator[Update]:
    content, level = message.get("content"), message["type"]
    if isinstance(content, str):
        yield from notice_updates(level, content, client)


def message_updates(message: Message, client: ClientUpdates | None = None) -> Iterator[Update]:
    """What one recorded message showed (a guard's synthetic prompt: nothing)."""
    if is_typed_prompt(message):
        yield from _user(message)
    elif message["type"] == "gemini":
        yield from _gemini(message)
    elif message["type"] in ("info", "warning", "error"):
        yield from _notice(message, client or ClientUpdates())
    elif message["type"] == "compression":
        summary = message.get("summary")
        if isinstance(summary, str) and summary:
            compaction_id = str(message.get("id") or "")
            yield from compaction_updates(compaction_id, summary, client or ClientUpdates())


@dataclass(frozen=True)
class ChildUpdate:
    """An update of a subagent's session (sent with its id, not the parent's)."""

    session_id: str
    update: Update


def _subagent_runs(
    message: Message, client: ClientUpdates, children: Callable[[str], tuple[Message, ...]]
) -> Iterator[Update | ChildUpdate]:
    """The subagent runs of a recorded answer, for a client that follows subagents:
    announced on the parent, the child's own record under its id, then its end."""
    if not client.subagents or message["type"] != "gemini":
        return
    for call in tool_calls(message):
        run = call.get("subagent")
        if not isinstance(run, dict) or not isinstance(run.get("subagentSessionId"), str):
            continue
        child_id = run["subagentSessionId"]
        reason = run.get("endReason")
        end = cast(AgentEndReason, reason if reason in get_args(AgentEndReason) else "completed")
        started, ended = (
            SubagentEvent(
                id="replay",
                stream_id="replay",
                child_id=child_id,
                name=str(call.get("name") or ""),
                title=str(run.get("title") or call.get("name") or "Subagent"),
                task=str(run.get("task") or ""),
                state=state,
                end_reason=end if state == "idle" else None,
            )
            for state in ("running", "idle")
        )
        yield from subagent_updates(started, client)
        for child_message in children(child_id):
            for update in message_updates(child_message, client):
                yield ChildUpdate(child_id, update)
        yield from subagent_updates(ended, client)


def replay_updates(
    messages: list[Message],
    metadata: dict[str, Any],
    *,
    mode: str,
    config_options: list[dict[str, Any]],
    client: ClientUpdates | None = None,
    plans: PlanOperations | None = None,
    children: Callable[[str], tuple[Message, ...]] | None = None,
) -> Iterator[Update | ChildUpdate]:
    """Everything `session/load` sends before it answers (see the module docstring);
    `plans`: the live session's plan state, which the replayed plans then belong to."""
    for message in messages:
        yield from message_updates(message, client)
        if children is not None:
            yield from _subagent_runs(message, client or ClientUpdates(), children)
    yield from (plans or PlanOperations(client or ClientUpdates())).replay(metadata)
    title = metadata.get("title")
    if isinstance(title, str) and title:
        yield schema.SessionInfoUpdate(session_update="session_info_update", title=title)
    yield mode_update(mode)
    yield config_update(config_options)
