"""`session/set_mode`, `session/set_config_option`, and the old `session/set_model`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from acp_server import schema
from acp_server.updates import config_update, mode_update

if TYPE_CHECKING:
    from acp_server.state import ServerState


class SetModelRequest(BaseModel):
    """`session/set_model` was removed from the spec; some clients still send it."""

    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")


class SetModelResponse(BaseModel):
    """`session/set_model`'s empty answer."""


class SetConfigOptionRequest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    config_id: str = Field(alias="configId")
    value: Any


async def set_mode(
    state: ServerState, params: schema.SetSessionModeRequest
) -> schema.SetSessionModeResponse:
    session = state.session(params.session_id)
    state.config_options.set_mode(session.agent, params.mode_id)
    session.send_update(config_update(state.config_options.options(session.agent)))
    return schema.SetSessionModeResponse()


async def set_config_option(
    state: ServerState, params: SetConfigOptionRequest
) -> schema.SetSessionConfigOptionResponse:
    session = state.session(params.session_id)
    state.config_options.set(session.agent, params.config_id, params.value)
    if params.config_id == "mode":
        session.send_update(mode_update(session.agent.mode))
    options = state.config_options.options(session.agent)
    return schema.SetSessionConfigOptionResponse.model_validate({"configOptions": options})


async def set_model(state: ServerState, params: SetModelRequest) -> SetModelResponse:
    session = state.session(params.session_id)
    state.config_options.set(session.agent, "model", params.model_id)
    session.send_update(config_update(state.config_options.options(session.agent)))
    return SetModelResponse()
