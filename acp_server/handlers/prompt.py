"""`session/prompt` and the `session/cancel` notification."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_server import schema
from acp_server.convert import prompt_to_parts
from runtime.commands import parse_command

if TYPE_CHECKING:
    from acp_server.state import ServerState


async def prompt(state: ServerState, params: schema.PromptRequest) -> schema.PromptResponse:
    """One turn; a lone text block naming a slash command runs the command instead."""
    session = state.session(params.session_id)
    blocks = list(params.prompt)
    command = None
    if len(blocks) == 1 and isinstance(blocks[0], schema.TextContentBlock):
        command = parse_command(blocks[0].text)
    if command is not None:
        answer = await session.command(*command)
    else:
        agent = session.agent
        answer = await session.prompt(lambda: prompt_to_parts(blocks, agent.roots, agent.host))
    return schema.PromptResponse.model_validate(answer)


async def cancel(state: ServerState, params: Any) -> None:
    """Stop the session's running turn; its prompt answers `cancelled`."""
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    session = state.sessions.get(session_id) if isinstance(session_id, str) else None
    if session is not None:
        await session.cancel()
