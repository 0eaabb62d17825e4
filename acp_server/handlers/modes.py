"""`session/set_mode`, `session/set_config_option`, and the old `session/set_model`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp import schema
from pydantic import BaseModel, ConfigDict, Field

from acp_server.updates import config_update, mode_update

if TYPE_CHECKING:
    from acp_server.server import AcpServer


class SetModelRequest(BaseModel):
    """`session/set_model` was removed from the spec; some clients still send it."""

    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")


class SetConfigOptionRequest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    config_id: str = Field(alias="configId")
    value: Any


def register(server: AcpServer) -> None:
    options = server.config_options

    def notify_changes(session_id: str, mode_changed: bool) -> None:
        session = server.session(session_id)
        if mode_changed:
            session.send_update(mode_update(session.runtime.mode))
        session.send_update(config_update(options.options(session.runtime)))

    async def set_mode(params: schema.SetSessionModeRequest) -> dict[str, Any]:
        session = server.session(params.session_id)
        options.set_mode(session.runtime, params.mode_id)
        notify_changes(params.session_id, mode_changed=False)
        return {}

    async def set_config_option(params: SetConfigOptionRequest) -> dict[str, Any]:
        session = server.session(params.session_id)
        options.set(session.runtime, params.config_id, params.value)
        if params.config_id == "mode":
            session.send_update(mode_update(session.runtime.mode))
        return {"configOptions": options.options(session.runtime)}

    async def set_model(params: SetModelRequest) -> dict[str, Any]:
        session = server.session(params.session_id)
        options.set(session.runtime, "model", params.model_id)
        notify_changes(params.session_id, mode_changed=False)
        return {}

    server.engine.register("session/set_mode", schema.SetSessionModeRequest, set_mode)
    server.engine.register("session/set_config_option", SetConfigOptionRequest, set_config_option)
    server.engine.register("session/set_model", SetModelRequest, set_model)
