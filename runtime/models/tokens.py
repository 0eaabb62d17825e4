"""Token estimation without a tokenizer, the way Gemini CLI estimates.

The rule:
- text: 0.25 token per ASCII character, 1.3 per non-ASCII character; text
  longer than 100 000 characters is counted at a flat 0.25 per character;
- function response: (len(name) + len(JSON of the response)) / 4, plus its
  nested parts;
- function call: len(JSON of the call) / 4;
- inline or file data: 3 000 tokens for an image, 25 800 for a PDF; other
  media and any other part: len(JSON of the part) / 4.
The total of a list of parts is floored to an int. JSON is compact
(`separators=(",", ":")`, non-ASCII kept), like JavaScript's `JSON.stringify`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from google.genai import types

ASCII_TOKENS_PER_CHAR = 0.25
NON_ASCII_TOKENS_PER_CHAR = 1.3
MAX_CHARS_FOR_FULL_HEURISTIC = 100_000
IMAGE_TOKENS = 3_000
PDF_TOKENS = 25_800
_MAX_DEPTH = 3


def compact_json(value: Any) -> str:
    """JSON the way `JSON.stringify(value)` writes it (non-JSON values via `str`)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def estimate_text_tokens(text: str) -> float:
    if len(text) > MAX_CHARS_FOR_FULL_HEURISTIC:
        return len(text) * ASCII_TOKENS_PER_CHAR
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return (len(text) - non_ascii) * ASCII_TOKENS_PER_CHAR + non_ascii * NON_ASCII_TOKENS_PER_CHAR


def _media_tokens(mime_type: str | None) -> float | None:
    if not mime_type:
        return None
    if mime_type.startswith("image/"):
        return IMAGE_TOKENS
    if mime_type == "application/pdf":
        return PDF_TOKENS
    return None


def _part_tokens(part: types.Part, depth: int) -> float:
    if part.text is not None:
        return estimate_text_tokens(part.text)
    if part.function_response is not None:
        response = part.function_response
        tokens = len(response.name or "") / 4
        if response.response is not None:
            tokens += len(compact_json(response.response)) / 4
        if response.parts and depth < _MAX_DEPTH:
            for nested in response.parts:
                dumped = nested.model_dump(mode="json", exclude_none=True)
                tokens += len(compact_json(dumped)) / 4
        return tokens
    media = part.inline_data or part.file_data
    if media is not None:
        estimate = _media_tokens(media.mime_type)
        if estimate is not None:
            return estimate
    return len(compact_json(part.model_dump(mode="json", exclude_none=True))) / 4


def estimate_part_tokens(part: types.Part) -> float:
    """Unrounded estimate for one part."""
    return _part_tokens(part, 0)


def estimate_tokens(parts: Iterable[types.Part]) -> int:
    """Estimated tokens of a list of parts, floored."""
    return math.floor(sum(_part_tokens(p, 0) for p in parts))


def estimate_contents_tokens(contents: Iterable[types.Content]) -> int:
    """Estimated tokens of a whole request history, floored."""
    return math.floor(sum(_part_tokens(p, 0) for c in contents for p in c.parts or ()))
