"""The answers the agent sends to the client's requests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from acp_server.schema.base import Sent

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class SessionMode(Sent):
    id: str
    name: str
    description: str | None = None


class SessionModeState(Sent):
    current_mode_id: Annotated[str, Field(alias="currentModeId")]
    available_modes: Annotated[list[SessionMode], Field(alias="availableModes")]


class SessionConfigSelectOption(Sent):
    value: str
    name: str
    description: str | None = None


class _ConfigOption(Sent):
    id: str
    name: str
    description: str | None = None
    category: str | None = None


class SessionConfigOptionSelect(_ConfigOption):
    type: Literal["select"] = "select"
    current_value: Annotated[str, Field(alias="currentValue")]
    options: list[SessionConfigSelectOption]


class SessionConfigOptionBoolean(_ConfigOption):
    type: Literal["boolean"] = "boolean"
    current_value: Annotated[bool, Field(alias="currentValue")]


SessionConfigOption = Annotated[
    SessionConfigOptionSelect | SessionConfigOptionBoolean, Field(discriminator="type")
]


class _SessionState(Sent):
    """The session's modes and config options, as every opening answers them."""

    modes: SessionModeState | None = None
    config_options: Annotated[list[SessionConfigOption] | None, Field(alias="configOptions")] = None


class NewSessionResponse(_SessionState):
    session_id: Annotated[str, Field(alias="sessionId")]


class LoadSessionResponse(_SessionState):
    pass


class ResumeSessionResponse(_SessionState):
    pass


class ForkSessionResponse(_SessionState):
    session_id: Annotated[str, Field(alias="sessionId")]


class PromptResponse(Sent):
    stop_reason: Annotated[StopReason, Field(alias="stopReason")]
    usage: dict[str, Any] | None = None


class SetSessionModeResponse(Sent):
    pass


class SetSessionConfigOptionResponse(Sent):
    config_options: Annotated[list[SessionConfigOption], Field(alias="configOptions")]


class AuthenticateResponse(Sent):
    pass


class LogoutResponse(Sent):
    pass


class CloseSessionResponse(Sent):
    pass


class DeleteSessionResponse(Sent):
    pass
