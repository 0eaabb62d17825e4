"""LoopDetectionService: notices when the model repeats itself, nudges once, then stops it.

Port of Gemini CLI's loop detection. Three
detectors feed one strike counter:

- tool calls: the same call 5 times in a row, or a cycle of 2..5 calls repeated
  5 times (key: sha256 of `name:JSON(args)`);
- streamed text: a 50-character chunk seen 10 times with a mean spacing of at
  most 250 characters, over the last 5 000 characters (tracking resets on
  tool calls and on Markdown structure: fences, tables, lists, headings,
  quotes, rules; nothing inside a code block is tracked);
- an LLM check from the 30th model call of a prompt, every 10 calls by default
  (5..15, shorter when the judge is more suspicious), confidence ≥ 0.9.

The first detection returns a `nudge` verdict (inject `verdict.nudge_text` as
the next user turn and continue); the second a `terminate` verdict (stop the
turn with LOOP_DETECTED). After termination every check returns that verdict
again until `reset()`, which the caller invokes at every new prompt.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from google.genai import types

from runtime.models.content_generator import ContentGenerator
from runtime.models.json_query import ask_json
from runtime.models.tokens import compact_json

logger = logging.getLogger(__name__)

TOOL_CALL_LOOP_THRESHOLD = 5
MAX_TOOL_CYCLE_LENGTH = 5
CONTENT_LOOP_THRESHOLD = 10
CONTENT_CHUNK_SIZE = 50
MAX_CONTENT_SPACING = CONTENT_CHUNK_SIZE * 5  # mean distance between repeats: 250 chars
MAX_HISTORY_LENGTH = 5_000

LLM_CHECK_AFTER_TURNS = 30
DEFAULT_LLM_CHECK_INTERVAL = 10
MIN_LLM_CHECK_INTERVAL = 5
MAX_LLM_CHECK_INTERVAL = 15
LLM_CONFIDENCE_THRESHOLD = 0.9
LLM_CHECK_HISTORY_COUNT = 20
LLM_CHECK_MODEL = "gemini-2.5-flash"

NUDGE_TEMPLATE = (
    "System: Potential loop detected. Details: {detail}. Please take a step back and confirm "
    "you're making forward progress. If not, take a step back, analyze your previous actions "
    "and rethink how you're approaching the problem. Avoid repeating the same tool calls or "
    "responses without new results."
)

_TABLE_RE = re.compile(r"(^|\n)\s*(\|.*\||[|+\-]{3,})")
_LIST_RE = re.compile(r"(^|\n)\s*([*\-+]|\d+\.)\s")
_HEADING_RE = re.compile(r"(^|\n)#+\s")
_QUOTE_RE = re.compile(r"(^|\n)>\s")
_RULE_RE = re.compile(r"^[+\-_=*\u2500-\u257F]+$")


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call requested by the model."""

    name: str
    args: dict[str, Any]


LoopEvent = str | ToolCallEvent | types.FunctionCall
"""A streamed text delta, or a tool call."""


@dataclass(frozen=True)
class LoopVerdict:
    """A detected loop. `kind`: `nudge` (first strike) or `terminate` (second).

    `source`: which detector fired; `detail`: the sentence placed in the nudge.
    """

    kind: Literal["nudge", "terminate"]
    detail: str
    source: Literal["tool_call", "content", "llm"]

    @property
    def nudge_text(self) -> str:
        return NUDGE_TEMPLATE.format(detail=self.detail)


class _ContentTracker:
    """The streamed-text detector (50-char chunks in a sliding window)."""

    def __init__(self) -> None:
        self.in_code_block = False
        self.clear()

    def clear(self) -> None:
        self.history = ""
        self.positions: dict[str, list[int]] = {}
        self.next_index = 0

    def add(self, text: str) -> str | None:
        """Feed a delta; returns the repeating chunk when a loop is found."""
        fences = text.count("```")
        is_rule = bool(_RULE_RE.match(text))
        if (
            fences
            or is_rule
            or any(r.search(text) for r in (_TABLE_RE, _LIST_RE, _HEADING_RE, _QUOTE_RE))
        ):
            self.clear()
        was_in_code = self.in_code_block
        if fences % 2:
            self.in_code_block = not self.in_code_block
        if was_in_code or self.in_code_block or is_rule:
            return None
        self.history += text
        self._truncate()
        return self._scan()

    def _truncate(self) -> None:
        excess = len(self.history) - MAX_HISTORY_LENGTH
        if excess <= 0:
            return
        self.history = self.history[excess:]
        self.next_index = max(0, self.next_index - excess)
        shifted: dict[str, list[int]] = {}
        for chunk, indices in self.positions.items():
            kept = [i - excess for i in indices if i - excess >= 0]
            if kept:
                shifted[chunk] = kept
        self.positions = shifted

    def _scan(self) -> str | None:
        while self.next_index + CONTENT_CHUNK_SIZE <= len(self.history):
            chunk = self.history[self.next_index : self.next_index + CONTENT_CHUNK_SIZE]
            indices = self.positions.setdefault(chunk, [])
            indices.append(self.next_index)
            self.next_index += 1
            if len(indices) >= CONTENT_LOOP_THRESHOLD:
                recent = indices[-CONTENT_LOOP_THRESHOLD:]
                mean_spacing = (recent[-1] - recent[0]) / (CONTENT_LOOP_THRESHOLD - 1)
                if mean_spacing <= MAX_CONTENT_SPACING:
                    return chunk
        return None


def tool_call_key(name: str, args: dict[str, Any]) -> str:
    """sha256 hex of `name:JSON(args)`."""
    return hashlib.sha256(f"{name}:{compact_json(args)}".encode()).hexdigest()


def _has_cycle(keys: deque[str]) -> bool:
    for length in range(1, MAX_TOOL_CYCLE_LENGTH + 1):
        span = length * TOOL_CALL_LOOP_THRESHOLD
        if len(keys) < span:
            return False
        window = list(keys)[-span:]
        if all(window[i] == window[i % length] for i in range(span)):
            return True
    return False


LLM_CHECK_SYSTEM_PROMPT = """\
You review the recent history of an AI coding assistant and judge whether it is stuck.

Stuck means unproductive repetition: calling the same tools with the same or nearly the \
same arguments without learning anything new, going back and forth between the same \
states, or producing the same text again and again. Steady progress through a long task \
(editing many files, working through a list, running tests after each fix) is NOT stuck, \
even when the individual steps look alike.

Answer with JSON only: {"unproductive_state_analysis": "<why, in one or two sentences>", \
"unproductive_state_confidence": <a number from 0.0 (clearly progressing) to 1.0 \
(certainly stuck)>}.
"""

LLM_CHECK_TASK = (
    "Judge the conversation above: is the assistant stuck in an unproductive loop? "
    "Answer with the JSON object only."
)

LLM_CHECK_SCHEMA = types.Schema(
    type=types.Type.OBJECT,
    properties={
        "unproductive_state_analysis": types.Schema(type=types.Type.STRING),
        "unproductive_state_confidence": types.Schema(type=types.Type.NUMBER),
    },
    required=["unproductive_state_analysis", "unproductive_state_confidence"],
)


def _is_plain_user_turn(content: types.Content) -> bool:
    parts = content.parts or ()
    return content.role == "user" and all(p.function_response is None for p in parts)


def _trim_for_judge(history: Sequence[types.Content]) -> list[types.Content]:
    """The last turns, starting at a plain user turn, without a dangling tool call at the end."""
    recent = list(history[-LLM_CHECK_HISTORY_COUNT:])
    while recent and not _is_plain_user_turn(recent[0]):
        recent.pop(0)
    while (
        recent
        and recent[-1].role == "model"
        and any(p.function_call is not None for p in recent[-1].parts or ())
    ):
        recent.pop()
    return recent


class LlmLoopCheck:
    """The LLM judge of loop detection, on its own schedule.

    `turn_started(history)` counts model calls of the current prompt; from call
    `start_after` on, every `interval` calls, it asks `model` through `generator`.
    Returns the judge's analysis when confidence ≥ 0.9, else None (also on any
    failure). A confident "not stuck" checks less often, a suspicious one more:
    interval = round(5 + 10 × (1 − confidence)).
    """

    def __init__(
        self,
        generator: ContentGenerator,
        *,
        model: str = LLM_CHECK_MODEL,
        start_after: int = LLM_CHECK_AFTER_TURNS,
    ) -> None:
        self._generator = generator
        self._model = model
        self._start_after = start_after
        self.reset()

    def reset(self) -> None:
        self.turns = 0
        self.interval = DEFAULT_LLM_CHECK_INTERVAL
        self.last_check_turn = 0

    async def turn_started(
        self, history: Sequence[types.Content], *, abort_event: asyncio.Event | None = None
    ) -> str | None:
        self.turns += 1
        if self.turns < self._start_after or self.turns - self.last_check_turn < self.interval:
            return None
        if abort_event is not None and abort_event.is_set():
            return None
        self.last_check_turn = self.turns
        return await self._check(history)

    async def _check(self, history: Sequence[types.Content]) -> str | None:
        contents = _trim_for_judge(history)
        if not contents:
            return None
        contents.append(types.Content(role="user", parts=[types.Part(text=LLM_CHECK_TASK)]))
        answer = await ask_json(
            self._generator,
            model=self._model,
            contents=contents,
            system_instruction=LLM_CHECK_SYSTEM_PROMPT,
            schema=LLM_CHECK_SCHEMA,
            what="loop detection LLM check",
        )
        if answer is None:
            return None
        confidence = answer.get("unproductive_state_confidence")
        if not isinstance(confidence, int | float) or isinstance(confidence, bool):
            logger.warning("loop detection LLM check gave no confidence: %r", answer)
            return None
        logger.debug("loop detection LLM check at call %d: confidence %.2f", self.turns, confidence)
        if confidence >= LLM_CONFIDENCE_THRESHOLD:
            analysis = str(answer.get("unproductive_state_analysis") or "").strip().rstrip(".")
            return analysis or "The conversation appears to be stuck in an unproductive loop"
        span = MAX_LLM_CHECK_INTERVAL - MIN_LLM_CHECK_INTERVAL
        self.interval = math.floor(MIN_LLM_CHECK_INTERVAL + span * (1 - confidence) + 0.5)
        return None


class LoopDetectionService:
    """Per-session loop detector. Feed it with `add_and_check` and `turn_started`.

    Both return None (no loop) or a `LoopVerdict` to act on. Pass an
    `LlmLoopCheck` as `llm_check` to enable the LLM check.
    """

    def __init__(self, *, llm_check: LlmLoopCheck | None = None) -> None:
        self._llm_check = llm_check
        self._content = _ContentTracker()
        self._tool_keys: deque[str] = deque(maxlen=TOOL_CALL_LOOP_THRESHOLD * MAX_TOOL_CYCLE_LENGTH)
        self._strikes = 0
        self._terminal: LoopVerdict | None = None
        self._disabled = False

    # ---------------------------------------------------------------- state

    @property
    def strikes(self) -> int:
        return self._strikes

    @property
    def terminated(self) -> bool:
        return self._terminal is not None

    def disable(self) -> None:
        """Turn detection off for the rest of the session (the user said it is not a loop)."""
        self._disabled = True

    def reset(self) -> None:
        """A new prompt: forget everything, strikes included."""
        self._content = _ContentTracker()
        self._tool_keys.clear()
        self._strikes = 0
        self._terminal = None
        if self._llm_check is not None:
            self._llm_check.reset()

    # ------------------------------------------------------------ detection

    def add_and_check(self, event: LoopEvent) -> LoopVerdict | None:
        """Feed a streamed text delta or a tool call; returns a verdict when a loop shows."""
        if self._disabled:
            return None
        if self._terminal is not None:
            return self._terminal
        if isinstance(event, str):
            chunk = self._content.add(event)
            if chunk is None:
                return None
            return self._strike(f'Repeating content detected: "{chunk}"', "content")
        name, args = (
            (event.name, event.args)
            if isinstance(event, ToolCallEvent)
            else (event.name or "", dict(event.args or {}))
        )
        self._content.clear()
        self._tool_keys.append(tool_call_key(name, args))
        if not _has_cycle(self._tool_keys):
            return None
        return self._strike(
            f"Repeated tool call: {name} with arguments {compact_json(args)}", "tool_call"
        )

    async def turn_started(
        self, history: Sequence[types.Content], *, abort_event: asyncio.Event | None = None
    ) -> LoopVerdict | None:
        """Call before each model call of a prompt with the request history.

        Counts the call and runs the LLM check when it is due; returns a verdict
        if it finds a loop.
        """
        if self._disabled:
            return None
        if self._terminal is not None:
            return self._terminal
        if self._llm_check is None:
            return None
        analysis = await self._llm_check.turn_started(history, abort_event=abort_event)
        if analysis is None:
            return None
        return self._strike(analysis, "llm")

    def _strike(self, detail: str, source: Literal["tool_call", "content", "llm"]) -> LoopVerdict:
        self._strikes += 1
        logger.warning("loop detected (%s, strike %d): %s", source, self._strikes, detail)
        if self._strikes >= 2:
            self._terminal = LoopVerdict("terminate", detail, source)
            return self._terminal
        # Give the model a clean slate after the nudge.
        self._content.clear()
        self._tool_keys.clear()
        return LoopVerdict("nudge", detail, source)
