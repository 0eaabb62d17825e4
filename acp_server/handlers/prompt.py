"""`session/prompt` and the `session/cancel` notification."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from acp_server import schema
from acp_server.convert import prompt_to_parts
from acp_server.tracing import turn_span
from runtime.commands import parse_command

if TYPE_CHECKING:
    from acp_server.session import AcpSession
    from acp_server.state import ServerState


async def prompt(state: ServerState, params: schema.PromptRequest) -> schema.PromptResponse:
    """One turn; a lone text block naming a slash command runs the command instead. Its
    spans' parent is the trace context in `_meta` (`tracing.py`)."""
    session = state.session(params.session_id)
    try:
        with turn_span(state.options.env, params.field_meta, params.session_id):
            return await _turn(session, params)
    finally:
        _start_warm_server_after_answer()


ANSWER_SENT_S = 0.05
"""Time for the prompt's answer to be written before the warm server is started."""


def _start_warm_server_after_answer() -> None:
    """A cold spawn that found no warm server starts one once its first prompt is answered
    (`acp_server/warm/client.py`), so its own first answer never shares the CPU with the
    server's warm-up."""
    warm = sys.modules.get("acp_server.warm.client")
    if warm is not None and warm.pending() is not None:
        asyncio.get_running_loop().call_later(ANSWER_SENT_S, warm.start_pending)


async def _turn(session: AcpSession, params: schema.PromptRequest) -> schema.PromptResponse:
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
