"""BeforeAgent and AfterAgent around a prompt (part of AdkAgentProtocol; design:
hooks). Each step gets what it needs and returns what the protocol must do: the
message to send (or none), the stop to apply, the retry prompt; what the user is
told goes to `notice`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.genai import types

from runtime.adk.content import user_content
from runtime.adk.stream_end import StopRequest
from runtime.protocol import TextPart
from runtime.services.hooks import HookRunner, fire


async def before_agent(
    hooks: HookRunner | None,
    parts: tuple[Any, ...],
    context: list[str],
    notice: Callable[[str], None],
    keep_in_history: Callable[[types.Content], Awaitable[None]],
) -> tuple[types.Content | None, StopRequest | None]:
    """The user's message after BeforeAgent hooks, with `context` (texts to add) and
    the hooks' additional context appended; (None, stop) when a hook blocked or
    stopped it (a stopped prompt is kept in the history, as Gemini CLI does)."""
    content = user_content(parts)
    extra = list(context)
    if hooks is not None and hooks.has("BeforeAgent"):
        text = "".join(p.text for p in parts if isinstance(p, TextPart))
        verdict = await fire(hooks, "BeforeAgent", {"prompt": text})
        if verdict.system_message:
            notice(verdict.system_message)
        if verdict.stop or verdict.blocked:
            why = (verdict.stop_reason if verdict.stop else None) or verdict.reason
            verb = "stopped" if verdict.stop else "blocked"
            stop = StopRequest(
                reason="completed",
                message=f"Agent execution {verb}: {why or 'no reason given'}",
                code="HOOK_STOP" if verdict.stop else "HOOK_BLOCKED",
            )
            if verdict.stop:
                await keep_in_history(content)
            return None, stop
        if verdict.additional_context:
            extra.append(verdict.additional_context)
    for text in extra:
        content.parts = [
            *(content.parts or []),
            types.Part(text=f"<hook_context>{text}</hook_context>"),
        ]
    return content, None


async def after_agent(
    hooks: HookRunner,
    payload: dict[str, Any],
    notice: Callable[[str], None],
    clear_context: Callable[[], Awaitable[None]] | None,
) -> tuple[str | None, StopRequest | None]:
    """AfterAgent hooks: a deny's reason is shown and returned, to go to the model as
    a new prompt; `continue: false` stops; `clearContext` makes the model forget the
    conversation first."""
    verdict = await fire(hooks, "AfterAgent", payload)
    shown = verdict.system_message
    stop: StopRequest | None = None
    if verdict.stop:
        why = shown or verdict.stop_reason or verdict.reason or "no reason given"
        stop = StopRequest(
            reason="completed", message=f"Agent execution stopped: {why}", code="HOOK_STOP"
        )
    elif verdict.blocked:
        notice(f"Agent execution blocked: {shown or verdict.reason or 'no reason given'}")
    elif shown:
        notice(shown)
    if verdict.clear_context and clear_context is not None:
        await clear_context()
        notice("Conversation context has been cleared.")
    return (verdict.reason if verdict.blocked and not verdict.stop else None), stop
