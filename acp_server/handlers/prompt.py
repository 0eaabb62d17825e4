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
    global _running
    _running += 1
    try:
        with turn_span(state.options.env, params.field_meta, params.session_id):
            return await _turn(session, params)
    finally:
        _running -= 1
        _start_warm_server_when_idle()


IDLE_BEFORE_WARM_START_S = 1.0
"""How long a cold spawn stays idle (no prompt running) after an answer before it starts
the warm server it found missing."""
_running = 0  # prompts running in this process
_last_end = 0.0  # when the last one ended (the loop's clock)


def _start_warm_server_when_idle() -> None:
    """A cold spawn that found no warm server starts one once a prompt has been answered
    and no other has run for `IDLE_BEFORE_WARM_START_S` (`acp_server/warm/client.py`):
    the server's warm-up never shares the CPU with that spawn's first answer, nor with
    prompts sent right after it."""
    warm = sys.modules.get("acp_server.warm.client")
    if warm is None or warm.pending() is None:
        return
    global _last_end
    loop = asyncio.get_running_loop()
    _last_end = loop.time()

    def start_if_idle() -> None:
        if not _running and loop.time() - _last_end >= IDLE_BEFORE_WARM_START_S - 0.01:
            warm.start_pending()  # else a later prompt's end checks again

    loop.call_later(IDLE_BEFORE_WARM_START_S, start_if_idle)


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
