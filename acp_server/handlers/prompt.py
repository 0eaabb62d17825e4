"""`session/prompt` and `session/cancel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp import schema

from acp_server.convert import prompt_to_parts

if TYPE_CHECKING:
    from acp_server.server import AcpServer


def register(server: AcpServer) -> None:
    async def prompt(params: schema.PromptRequest) -> dict[str, Any]:
        session = server.session(params.session_id)
        blocks = list(params.prompt)
        if len(blocks) == 1 and isinstance(blocks[0], schema.TextContentBlock):
            from runtime.commands import parse_command

            command = parse_command(blocks[0].text)
            if command is not None:
                return await session.command(*command)
        runtime, host = session.runtime, session.host
        return await session.prompt(lambda: prompt_to_parts(blocks, runtime.roots, host))

    async def cancel(params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = server.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            await session.cancel()

    server.engine.register("session/prompt", schema.PromptRequest, prompt)
    server.engine.register_notification("session/cancel", cancel)
