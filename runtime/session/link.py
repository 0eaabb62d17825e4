"""SessionLink: how the parts built before the protocol reach it (design: the one route
for notices, stops and config changes). Attached once the session exists."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from runtime.tools.policy.modes import ApprovalMode, parse_mode

if TYPE_CHECKING:
    from runtime.adk.agent_protocol import AdkAgentProtocol, StopRequest
    from runtime.session.agent_session import AgentSession


class SessionLink:
    """What the parts built before the protocol call it through (design: the one route
    for notices). Attached to the session once the protocol exists; calling it
    before is a programming error and says so."""

    def __init__(self) -> None:
        self._session: AgentSession | None = None

    def attach(self, session: AgentSession) -> None:
        self._session = session

    @property
    def session(self) -> AgentSession:
        if self._session is None:
            raise RuntimeError("the session is still being built")
        return self._session

    @property
    def protocol(self) -> AdkAgentProtocol:
        return self.session.protocol

    def mode(self) -> ApprovalMode:
        return self.session.mode

    def notice(self, text: str) -> None:
        """The one route for a notice to the user."""
        self.protocol.notice(text)

    def config_changed(self, config: dict[str, Any]) -> None:
        self.protocol.config_changed(config)

    def announce_model(self, model: str) -> None:
        self.protocol.announce_model_change(model)

    def memory_saved(self) -> None:
        """`save_memory` wrote the user's GEMINI.md: the context files are read again, so
        the next model request carries the fact."""
        prompt = self.session.prompt
        if prompt is not None:
            prompt.reload()

    def request_stop(self, stop: StopRequest) -> None:
        self.protocol.request_stop(stop)

    def abort_event(self) -> asyncio.Event | None:
        return self._session.protocol.abort_event if self._session is not None else None

    def commands_changed(self) -> None:
        """The slash commands changed (MCP prompts arrived): the editor is told."""
        from runtime.protocol import CommandsChangedEvent

        self.protocol.emit_external(lambda i, s: CommandsChangedEvent(id=i, stream_id=s))

    def masked(self, responses: list[Any]) -> None:
        """Masking changed tool outputs in the live history: the record follows."""
        recorder = self.session.recorder
        if recorder is not None:
            recorder.masked(responses)

    def permission_answered(self, request: Any, outcome: Any) -> None:
        """The user answered (or cancelled) a permission request: the record keeps it,
        so a reloaded session shows the question and the answer."""
        recorder = self.session.recorder
        if recorder is not None:
            recorder.permission(request, outcome)

    async def before_edit(self, tool_name: str, args: dict[str, Any]) -> None:
        """An allowed edit is about to run: a checkpoint, when checkpointing is on."""
        await self.session.checkpoint(tool_name, args)

    def engine_changed_mode(self, mode: str) -> None:
        """The engine switched mode itself ("Allow for this session" on an edit)."""
        chosen = parse_mode(mode)
        self.session.set_mode(chosen)
        self.config_changed({"mode": chosen})
