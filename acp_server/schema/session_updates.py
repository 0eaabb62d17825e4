"""The `session/update` kinds the agent sends, and the tool call pieces inside them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from acp_server.schema.base import Sent
from acp_server.schema.content import ContentBlock
from acp_server.schema.responses import SessionConfigOption

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class _Chunk(Sent):
    content: ContentBlock
    message_id: Annotated[str | None, Field(alias="messageId")] = None


class UserMessageChunk(_Chunk):
    session_update: Annotated[Literal["user_message_chunk"], Field(alias="sessionUpdate")] = (
        "user_message_chunk"
    )


class AgentMessageChunk(_Chunk):
    session_update: Annotated[Literal["agent_message_chunk"], Field(alias="sessionUpdate")] = (
        "agent_message_chunk"
    )


class AgentThoughtChunk(_Chunk):
    session_update: Annotated[Literal["agent_thought_chunk"], Field(alias="sessionUpdate")] = (
        "agent_thought_chunk"
    )


class ContentToolCallContent(Sent):
    type: Literal["content"] = "content"
    content: ContentBlock


class FileEditToolCallContent(Sent):
    """`diff`: a file's text before (None: a new file) and after."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: Annotated[str | None, Field(alias="oldText")] = None
    new_text: Annotated[str, Field(alias="newText")]


class TerminalToolCallContent(Sent):
    type: Literal["terminal"] = "terminal"
    terminal_id: Annotated[str, Field(alias="terminalId")]


ToolCallContent = Annotated[
    ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent,
    Field(discriminator="type"),
]


class ToolCallLocation(Sent):
    path: str
    line: int | None = Field(default=None, ge=0)


class _ToolCallFields(Sent):
    tool_call_id: Annotated[str, Field(alias="toolCallId")]
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Annotated[Any, Field(alias="rawInput")] = None
    raw_output: Annotated[Any, Field(alias="rawOutput")] = None


class ToolCallStart(_ToolCallFields):
    """`tool_call`: a call as the client first sees it."""

    session_update: Annotated[Literal["tool_call"], Field(alias="sessionUpdate")] = "tool_call"
    title: str


class ToolCallProgress(_ToolCallFields):
    """`tool_call_update`: the fields of a call that changed."""

    session_update: Annotated[Literal["tool_call_update"], Field(alias="sessionUpdate")] = (
        "tool_call_update"
    )
    title: str | None = None


class PlanEntry(Sent):
    content: str
    priority: Literal["high", "medium", "low"]
    status: Literal["pending", "in_progress", "completed"]


class AgentPlanUpdate(Sent):
    session_update: Annotated[Literal["plan"], Field(alias="sessionUpdate")] = "plan"
    entries: list[PlanEntry]


class AvailableCommandInput(Sent):
    hint: str


class AvailableCommand(Sent):
    name: str
    description: str
    input: AvailableCommandInput | None = None


class AvailableCommandsUpdate(Sent):
    session_update: Annotated[
        Literal["available_commands_update"], Field(alias="sessionUpdate")
    ] = "available_commands_update"
    available_commands: Annotated[list[AvailableCommand], Field(alias="availableCommands")]


class CurrentModeUpdate(Sent):
    session_update: Annotated[Literal["current_mode_update"], Field(alias="sessionUpdate")] = (
        "current_mode_update"
    )
    current_mode_id: Annotated[str, Field(alias="currentModeId")]


class ConfigOptionUpdate(Sent):
    session_update: Annotated[Literal["config_option_update"], Field(alias="sessionUpdate")] = (
        "config_option_update"
    )
    config_options: Annotated[list[SessionConfigOption], Field(alias="configOptions")]


class SessionInfoUpdate(Sent):
    session_update: Annotated[Literal["session_info_update"], Field(alias="sessionUpdate")] = (
        "session_info_update"
    )
    title: str | None = None
    updated_at: Annotated[str | None, Field(alias="updatedAt")] = None


class Cost(Sent):
    amount: float
    currency: str


class UsageUpdate(Sent):
    session_update: Annotated[Literal["usage_update"], Field(alias="sessionUpdate")] = (
        "usage_update"
    )
    used: int
    size: int
    cost: Cost | None = None
