"""Is a finished model stream a usable answer? (GcliAgentModel's stream validation.)

Gemini CLI (`geminiChat.ts`, `processStreamResponse`) judges every streamed answer
once it ends, and retries the call when it is not usable; `StreamCheck` is that
judgement, fed with the raw chunks as they arrive. A stream is usable when it
holds a tool call; otherwise it must end with a finish reason (not
MALFORMED_FUNCTION_CALL or UNEXPECTED_TOOL_CALL) and with visible text (zero-width
characters and HTML comments do not count). An answer to a tool result may end
without text or finish reason. What fails raises `InvalidStreamError`, which
`GcliResilience` retries like a broken stream (4 attempts in all) and
`AdkAgentProtocol` tells the user about when the attempts run out, ending the turn
normally (Gemini CLI's ACP answers `end_turn`), or with `refusal` / `max_tokens`.

Ours, beyond Gemini CLI: a prompt the API blocked (`promptFeedback.blockReason`
and no candidates) is told at once with its reason and not retried: the same
prompt would be blocked again.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

from google.genai import types

from runtime.errors import RuntimeAgentError
from runtime.protocol import AgentEndReason

InvalidStreamKind = Literal[
    "NO_FINISH_REASON",
    "NO_RESPONSE_TEXT",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "MAX_TOKENS_EXCEEDED",
    "SAFETY_BLOCKED",
    "RECITATION_BLOCKED",
    "OTHER_BLOCKED",
    "THINKING_ONLY_RESPONSE",
    "PROMPT_BLOCKED",
]

# kind → (what the retry notice says went wrong, what the user is told at the end, end)
_KINDS: dict[str, tuple[str, str, AgentEndReason]] = {
    "NO_FINISH_REASON": (
        "ended without a finish reason",
        "The model's answer ended early, without a finish reason.",
        "completed",
    ),
    "NO_RESPONSE_TEXT": (
        "was empty",
        "The model returned an empty answer (no text and no tool call). "
        "This may be a passing API problem; please try again.",
        "completed",
    ),
    "MALFORMED_FUNCTION_CALL": (
        "held a malformed tool call",
        "The model's answer held a malformed tool call, every time it was asked. "
        "Please try again, or rephrase the request.",
        "completed",
    ),
    "UNEXPECTED_TOOL_CALL": (
        "called a tool that was not offered",
        "The model kept calling a tool that was not offered to it.",
        "completed",
    ),
    "MAX_TOKENS_EXCEEDED": (
        "ran out of output tokens before any text",
        "The model used up its output token limit before writing an answer. "
        "Try /compress to free up context space.",
        "max_budget",
    ),
    "SAFETY_BLOCKED": (
        "was blocked by safety filters",
        "The model's answer was blocked by safety settings.",
        "refusal",
    ),
    "RECITATION_BLOCKED": (
        "was blocked by the recitation filter",
        "The model's answer was blocked by the recitation (copyright) filter.",
        "refusal",
    ),
    "OTHER_BLOCKED": (
        "was blocked (finish reason OTHER)",
        "The model's answer was blocked for another policy reason.",
        "refusal",
    ),
    "THINKING_ONLY_RESPONSE": (
        "held thoughts but no answer",
        "The model thought but gave no answer. If the conversation is near the "
        "context limit, /compress may help.",
        "completed",
    ),
    "PROMPT_BLOCKED": ("", "", "refusal"),
}

NUDGES: dict[str, str] = {
    "THINKING_ONLY_RESPONSE": "\n[System: You previously generated thoughts but gave no final "
    "answer. Give your final answer or call a tool now.]",
    "NO_RESPONSE_TEXT": "\n[System: You previously returned an empty response. Give your "
    "final answer or call a tool now.]",
}
"""Added to the system instruction of the retry after these kinds (Gemini CLI's
on-retry nudge)."""

_INVISIBLE = re.compile("[\u200b-\u200d\ufeff\u200e\u200f]")
_COMMENT = re.compile(r"<!--[\s\S]*?-->")


class InvalidStreamError(RuntimeAgentError):
    """The model's stream ended without a usable answer (see the module docstring).

    `kind` is Gemini CLI's InvalidStreamError type (or PROMPT_BLOCKED); `retry` says
    whether asking again may help; `user_message` is what the user is told when no
    attempt is left; `end_reason` how the turn then ends.
    """

    def __init__(
        self, kind: InvalidStreamKind, *, finish: str | None = None, detail: str = ""
    ) -> None:
        self.kind = kind
        self.finish = finish
        self.retry = kind != "PROMPT_BLOCKED"
        problem, told, end = _KINDS[kind]
        self.problem = problem
        if kind == "PROMPT_BLOCKED":
            reason = f"{finish or 'BLOCKED'}{f': {detail}' if detail else ''}"
            told = f"The prompt was blocked by the Gemini API ({reason}). Rephrase it, then retry."
        elif kind == "NO_RESPONSE_TEXT" and finish and finish not in ("STOP", "MAX_TOKENS"):
            told = f"The model returned an empty answer (finish reason {finish})."
            end = "refusal" if finish in _REFUSALS else end
        self.user_message = told
        self.end_reason: AgentEndReason = end
        super().__init__(f"invalid model stream ({kind}): {told}")


_REFUSALS = frozenset(
    {"LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
    | {"IMAGE_PROHIBITED_CONTENT"}
)


def _valid_part(part: types.Part) -> bool:
    """Gemini CLI's `isValidContent`, for one part: an empty part, or an empty
    non-thought text with nothing else on it, does not count (nor its chunk)."""
    payload = part.thought_signature is not None or any(
        getattr(part, name) is not None for name in _PAYLOAD_FIELDS
    )
    if payload or part.thought:
        return True
    return bool(part.text)


_PAYLOAD_FIELDS = (
    "function_call",
    "function_response",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
)


def answers_tool(contents: list[types.Content]) -> bool:
    """The request's last turn returns tool results (Gemini CLI's isOriginalFunctionResponse)."""
    if not contents:
        return False
    parts = contents[-1].parts or []
    return bool(parts) and any(p.function_response is not None for p in parts)


@dataclass
class StreamCheck:
    """What one attempt's stream held so far; `verdict()` once it ended."""

    answers_tool: bool = False
    tool_call: bool = False
    thoughts: bool = False
    candidates: bool = False
    finish: str | None = None
    finish_message: str | None = None
    blocked: tuple[str, str] | None = None
    texts: list[str] = field(default_factory=list)

    async def watch(
        self, stream: AsyncIterator[types.GenerateContentResponse]
    ) -> AsyncIterator[types.GenerateContentResponse]:
        """`stream`, unchanged, with every chunk seen on its way."""
        async for chunk in stream:
            self.see(chunk)
            yield chunk

    def see(self, chunk: types.GenerateContentResponse) -> None:
        if not chunk.candidates:
            feedback = chunk.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                block = feedback.block_reason
                name = getattr(block, "name", None) or str(block)
                self.blocked = (name, feedback.block_reason_message or "")
            return
        self.candidates = True
        for candidate in chunk.candidates:
            if candidate.finish_reason is not None:
                reason = candidate.finish_reason
                self.finish = getattr(reason, "name", None) or str(reason)
                self.finish_message = candidate.finish_message
        content = chunk.candidates[0].content
        if content is None:
            return
        parts = content.parts or []
        if any(p.function_call is not None for p in parts):
            self.tool_call = True
        if not parts or not all(_valid_part(p) for p in parts):
            return
        for part in parts:
            if part.thought:
                self.thoughts = True
            elif part.text:
                self.texts.append(part.text)

    def text(self) -> str:
        text = _INVISIBLE.sub("", "".join(self.texts))
        previous = None
        while previous != text:
            previous, text = text, _COMMENT.sub("", text)
        return text.strip()

    def verdict(self) -> InvalidStreamError | None:
        """None for a usable answer, else why it is not."""
        if self.tool_call:
            return None
        if self.blocked is not None and not self.candidates:
            return InvalidStreamError(
                "PROMPT_BLOCKED", finish=self.blocked[0], detail=self.blocked[1]
            )
        finish = self.finish
        if finish is None and not self.answers_tool:
            return InvalidStreamError("NO_FINISH_REASON")
        if finish in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"):
            return InvalidStreamError(finish, finish=finish)  # type: ignore[arg-type]
        if self.text():
            return None
        by_finish: dict[str, InvalidStreamKind] = {
            "MAX_TOKENS": "MAX_TOKENS_EXCEEDED",
            "SAFETY": "SAFETY_BLOCKED",
            "RECITATION": "RECITATION_BLOCKED",
            "OTHER": "OTHER_BLOCKED",
        }
        if finish in by_finish:
            return InvalidStreamError(by_finish[finish], finish=finish)
        if self.thoughts:
            return InvalidStreamError("THINKING_ONLY_RESPONSE", finish=finish)
        if not self.answers_tool:
            return InvalidStreamError("NO_RESPONSE_TEXT", finish=finish)
        return None
