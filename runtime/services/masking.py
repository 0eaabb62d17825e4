"""ToolOutputMaskingService: replaces old, bulky tool outputs in the history by a preview.

Port of Gemini CLI's tool output masking (`docs/gemini-cli-behaviours.md#tool-output-masking`).
Before each model call the request history is scanned from the newest tool
output backwards, skipping the latest content (the current turn). The first
50 000 tokens of tool output stay untouched; everything older is prunable,
and is masked only if the prunable total reaches 30 000 tokens. A masked
output is written in full to `<output_dir>/<tool>_<call id>.txt` (the call id,
or a hash of the output when there is none, so the name is deterministic) and
the function response becomes `{"output": "<tool_output_masked>…"}`.

`mask` never mutates its input: it returns a new list in which changed
contents are copies and unchanged ones are the same objects, plus one
`MaskedResponse` per masked part so the caller can write the change back to
the live session events by `function_call_id`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.genai import types

from runtime.models.tokens import estimate_part_tokens

logger = logging.getLogger(__name__)

TOOL_PROTECTION_THRESHOLD = 50_000
MIN_PRUNABLE_TOKENS_THRESHOLD = 30_000
MASKING_TAG = "tool_output_masked"
EXEMPT_TOOLS = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})
SHELL_TOOL_NAME = "run_shell_command"
PREVIEW_HEAD_CHARS = 250
PREVIEW_TAIL_CHARS = 250
PREVIEW_LINES = 10

_SHELL_SECTION_RE = re.compile(
    r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.MULTILINE
)
_UNSAFE_FILENAME_RE = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class MaskedResponse:
    """One masked tool output.

    `function_call_id` / `name` identify the function response; `new_response`
    is the dict that replaces its `response`; `content_index` / `part_index`
    locate it in the list given to `mask`; `file_path` holds the full output.
    """

    function_call_id: str | None
    name: str
    new_response: dict[str, Any]
    content_index: int
    part_index: int
    file_path: Path
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class MaskResult:
    """`contents`: the masked history, a new list (holding the very same contents when
    nothing was masked); `masked`: what was replaced; `tokens_saved`: the estimate."""

    contents: list[types.Content]
    masked: list[MaskedResponse] = field(default_factory=list)
    tokens_saved: int = 0

    @property
    def masked_count(self) -> int:
        return len(self.masked)


@dataclass(frozen=True)
class _Candidate:
    content_index: int
    part_index: int
    tokens: float
    text: str


def output_text(response: types.FunctionResponse) -> str | None:
    """The stored text of a function response: its `response` as indented JSON."""
    if response.response is None:
        return None
    return json.dumps(response.response, indent=2, ensure_ascii=False, default=str)


def is_masked(text: str) -> bool:
    return f"<{MASKING_TAG}" in text


def simple_preview(text: str) -> str:
    """First and last 10 lines of `text` with the count of the lines between."""
    lines = text.split("\n")
    if len(lines) <= 2 * PREVIEW_LINES:
        return text
    head, tail = lines[:PREVIEW_LINES], lines[-PREVIEW_LINES:]
    omitted = len(lines) - 2 * PREVIEW_LINES
    return "\n".join(head) + f"\n\n... [{omitted} lines omitted] ...\n\n" + "\n".join(tail)


def shell_preview(response: dict[str, Any]) -> str:
    """Preview of a shell result: the Output section shortened, other sections kept."""
    content = response.get("output") or response.get("stdout") or ""
    if not isinstance(content, str):
        return json.dumps(content, ensure_ascii=False, default=str)
    pieces = _SHELL_SECTION_RE.split(content)
    if len(pieces) < 3:
        preview = simple_preview(content)
    else:
        parts: list[str] = []
        if pieces[0].strip():
            parts.append(simple_preview(pieces[0].strip()))
        for i in range(1, len(pieces), 2):
            name, body = pieces[i], pieces[i + 1].strip() if i + 1 < len(pieces) else ""
            parts.append(f"{name}: {simple_preview(body) if name == 'Output' else body}")
        preview = "\n".join(parts)
    exit_code = response.get("exitCode", response.get("exit_code"))
    if exit_code not in (None, 0):
        preview += f"\n[Exit Code: {exit_code}]"
    if response.get("error"):
        preview += f"\n[Error: {response['error']}]"
    return preview


def general_preview(text: str) -> str:
    if len(text) <= PREVIEW_HEAD_CHARS + PREVIEW_TAIL_CHARS:
        return text
    return f"{text[:PREVIEW_HEAD_CHARS]}\n... [TRUNCATED] ...\n{text[-PREVIEW_TAIL_CHARS:]}"


def masked_snippet(preview: str, path: Path) -> str:
    return (
        f"<{MASKING_TAG}>\n{preview}\n\nOutput too large. Full output available at: {path}\n"
        f"</{MASKING_TAG}>"
    )


def output_file_name(name: str, call_id: str | None, text: str) -> str:
    """`<tool>_<call id>.txt`, lowercase and filesystem-safe; a content hash without a call id."""
    key = call_id or hashlib.sha256(text.encode()).hexdigest()[:16]
    safe_name = _UNSAFE_FILENAME_RE.sub("_", name or "unknown_tool").lower()
    safe_key = _UNSAFE_FILENAME_RE.sub("_", key).lower()
    return f"{safe_name}_{safe_key}.txt"


class ToolOutputMaskingService:
    """Masks old tool outputs of a request history; see the module docstring.

    `output_dir` is where full outputs go (e.g. `<project temp>/tool-outputs/
    session-<id>`); created on the first mask. `mask` is synchronous and touches
    the disk only when it masks something.
    """

    def __init__(
        self,
        output_dir: Path,
        *,
        protection_threshold: int = TOOL_PROTECTION_THRESHOLD,
        min_prunable_threshold: int = MIN_PRUNABLE_TOKENS_THRESHOLD,
        protect_latest_turn: bool = True,
        exempt_tools: frozenset[str] = EXEMPT_TOOLS,
    ) -> None:
        self.output_dir = output_dir
        self._protection = protection_threshold
        self._min_prunable = min_prunable_threshold
        self._protect_latest = protect_latest_turn
        self._exempt = exempt_tools
        # Outputs of the leading contents a caller said were sent before (`mask(seen=)`).
        self._kept: list[_Candidate] = []
        self._kept_upto: tuple[int, types.Content | None] = (0, None)

    def _outputs(self, contents: Sequence[types.Content], start: int, end: int) -> list[_Candidate]:
        """The maskable tool outputs of `contents[start:end]`, oldest first."""
        found: list[_Candidate] = []
        for ci in range(start, end):
            for pi, part in enumerate(contents[ci].parts or []):
                response = part.function_response
                if response is None or (response.name or "") in self._exempt:
                    continue
                text = output_text(response)
                if not text or is_masked(text):
                    continue
                found.append(_Candidate(ci, pi, estimate_part_tokens(part), text))
        return found

    def _kept_outputs(self, contents: Sequence[types.Content], seen: int) -> list[_Candidate]:
        """The outputs of `contents[:seen]`, a part kept from an earlier call: those
        contents were sent before unchanged (the caller says so), and the history only
        grows at its end until something is masked or rebuilt."""
        count, tail = self._kept_upto
        if not (count and count <= seen and contents[count - 1] is tail):
            self._kept, count = [], 0
        if seen > count:
            self._kept += self._outputs(contents, count, seen)
        self._kept_upto = (seen, contents[seen - 1] if seen else None)
        return self._kept

    def _candidates(self, contents: Sequence[types.Content], seen: int = 0) -> list[_Candidate]:
        """The prunable outputs, newest first, if there are enough of them; else []."""
        end = len(contents) - (1 if self._protect_latest else 0)
        seen = min(seen, end)
        outputs = [*self._kept_outputs(contents, seen), *self._outputs(contents, seen, end)]
        protected = 0.0
        boundary_reached = False
        prunable: list[_Candidate] = []
        for candidate in reversed(outputs):
            if not boundary_reached:
                protected += candidate.tokens
                if protected <= self._protection:
                    continue
                boundary_reached = True  # the output that crosses the line is prunable
            prunable.append(candidate)
        if sum(c.tokens for c in prunable) < self._min_prunable:
            return []
        return prunable

    def mask(self, contents: Sequence[types.Content], seen: int = 0) -> MaskResult:
        """Mask what is prunable; returns the new history and what was masked.

        `seen`: how many leading contents are the very ones of an earlier call,
        unchanged (their outputs are not looked at again)."""
        candidates = self._candidates(contents, seen)
        if not candidates:
            return MaskResult(list(contents))
        self.output_dir.mkdir(parents=True, exist_ok=True)
        new_contents = list(contents)
        new_parts: dict[int, list[types.Part]] = {}
        masked: list[MaskedResponse] = []
        saved = 0
        for cand in candidates:
            parts = new_parts.setdefault(
                cand.content_index, list(contents[cand.content_index].parts or [])
            )
            part = parts[cand.part_index]
            response = part.function_response
            assert response is not None  # _candidates only keeps function responses
            name = response.name or "unknown_tool"
            path = self.output_dir / output_file_name(name, response.id, cand.text)
            path.write_text(cand.text, encoding="utf-8")
            preview = (
                shell_preview(response.response or {})
                if name == SHELL_TOOL_NAME
                else general_preview(cand.text)
            )
            new_response = {"output": masked_snippet(preview, path)}
            new_part = part.model_copy(
                update={"function_response": response.model_copy(update={"response": new_response})}
            )
            tokens_after = estimate_part_tokens(new_part)
            if tokens_after >= cand.tokens:
                continue
            parts[cand.part_index] = new_part
            saved += int(cand.tokens - tokens_after)
            masked.append(
                MaskedResponse(
                    response.id,
                    name,
                    new_response,
                    cand.content_index,
                    cand.part_index,
                    path,
                    int(cand.tokens),
                    int(tokens_after),
                )
            )
        for index in {m.content_index for m in masked}:
            new_contents[index] = contents[index].model_copy(update={"parts": new_parts[index]})
        logger.info("masked %d tool outputs, saving about %d tokens", len(masked), saved)
        return MaskResult(new_contents, masked, saved)
