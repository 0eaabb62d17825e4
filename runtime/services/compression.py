"""ChatCompressionService (design: ChatCompressionService).

When the last prompt's tokens reach `threshold` × the model's context window
(0.5 by default; `model.compressionThreshold` in settings, as in Gemini CLI), or on
`/compress`, the older part of the history is summarized: the newest 30% (by
size) is kept, split at a user prompt (a conversation too short to split is
summarized whole; only an empty one is "nothing to compress"), the rest goes to
the model with a request for a `<state_snapshot>`, and the history the model sees restarts as
`[user: summary, model: acknowledgement, ...kept]`. As Gemini CLI's, the summary
is checked by a second call (the verification pass, `VERIFY_REQUEST`): the model sees
the same history, its own snapshot and a request to repair omissions, and its answer
(the first summary when it is empty) becomes the summary. The record stays
authoritative: the summary is recorded as a `compression` message pointing at the
first kept message, so a loaded session can still be replayed whole while its
model history starts at the summary. A failed summary or verification call changes nothing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from google.genai import types

from runtime.models.content_generator import ContentGenerator
from runtime.services.record import Message, is_typed_prompt

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.5
KEEP_FRACTION = 0.3
CHARS_PER_TOKEN = 4

SUMMARY_INSTRUCTION = """\
You are the component that compresses a coding agent's conversation history.
Write a dense, structured snapshot of everything the agent needs to continue the work:
the user's overall goal, key facts and decisions, files read or changed (with what
changed), commands run and their outcomes, the current plan and what is left to do.
Leave out pleasantries. Answer with the snapshot only, inside <state_snapshot> tags."""

SUMMARY_REQUEST = "Write the <state_snapshot> of the conversation so far."
VERIFY_REQUEST = (
    "Check the <state_snapshot> you just wrote against the history above. If it leaves "
    "out any technical detail, file path, tool result or constraint the user set, or "
    "could be more precise, write a corrected, final <state_snapshot>. If nothing is "
    "missing, write the same <state_snapshot> again."
)


def compression_threshold(settings: dict[str, Any]) -> float:
    """`model.compressionThreshold` (or the older `chatCompression.contextPercentageThreshold`),
    a fraction of the context window; 0.5 when absent or invalid."""
    model = settings.get("model")
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if value is None:
        older = settings.get("chatCompression")
        value = older.get("contextPercentageThreshold") if isinstance(older, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return DEFAULT_THRESHOLD


def estimate_tokens(messages: list[Message]) -> int:
    size = sum(len(json.dumps(m.get("parts") or m.get("content") or "")) for m in messages)
    return size // CHARS_PER_TOKEN


@dataclass(frozen=True)
class CompressionResult:
    summary: str
    kept_from: str | None
    tokens_before: int
    tokens_after: int


class CompressionError(Exception):
    """The summary could not be made; the history is unchanged."""


NOTHING_TO_COMPRESS = "there is nothing to compress yet"


def split_point(history: list[Message]) -> int | None:
    """Index of the first kept message: a typed user prompt, with about the newest
    30% of the history (by size) from it on. With no later prompt to split at (a short
    conversation), everything is summarized (`len(history)`) when the history ends with
    the model's answer, as Gemini CLI does. None: nothing to compress (no turn yet)."""
    if not any(m.get("type") in ("user", "gemini") for m in history):
        return None
    sizes = [len(json.dumps(m.get("parts") or m.get("content") or "")) for m in history]
    total = sum(sizes)
    kept = 0
    candidate: int | None = None
    for index in range(len(history) - 1, 0, -1):
        kept += sizes[index]
        message = history[index]
        if is_typed_prompt(message):
            candidate = index
            if kept >= KEEP_FRACTION * total:
                break
    if candidate is None and history[-1].get("type") == "gemini":
        return len(history)
    return candidate


class ChatCompressionService:
    """Summarizes the older history through the session's content generator."""

    def __init__(self, generator: ContentGenerator) -> None:
        self._generator = generator

    async def compress(
        self,
        history: list[Message],
        contents: list[list[types.Content]],
        model: str,
        tokens: int,
    ) -> CompressionResult:
        """`history`: the model-visible messages; `contents`: the same as genai contents,
        one list per message (so the split can be mapped)."""
        split = split_point(history)
        if split is None:
            raise CompressionError(NOTHING_TO_COMPRESS)
        old_contents = [c for per in contents[:split] for c in per]
        summary = await self._ask(model, [*old_contents, _user(SUMMARY_REQUEST)], "summary")
        if not summary:
            raise CompressionError("the model returned an empty summary")
        verified = await self._ask(
            model,
            [
                *old_contents,
                _user(SUMMARY_REQUEST),
                types.Content(role="model", parts=[types.Part(text=summary)]),
                _user(VERIFY_REQUEST),
            ],
            "verification",
        )
        summary = verified or summary
        kept = history[split:]
        after = estimate_tokens(kept) + len(summary) // CHARS_PER_TOKEN
        return CompressionResult(
            summary=summary,
            kept_from=str(kept[0]["id"]) if kept else None,
            tokens_before=tokens or estimate_tokens(history),
            tokens_after=after,
        )

    async def _ask(self, model: str, request: list[types.Content], what: str) -> str:
        """One call with the compression instruction; its stripped text ("" when none)."""
        config = types.GenerateContentConfig(system_instruction=SUMMARY_INSTRUCTION)
        try:
            response = await self._generator.generate_content(
                model=model, contents=request, config=config
            )
        except Exception as exc:  # noqa: BLE001 - any failure leaves the history untouched
            raise CompressionError(f"the {what} request failed: {exc}") from exc
        return (response.text or "").strip() if response is not None else ""


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])
