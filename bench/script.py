"""The model's side of a benchmark: lines of a Gemini CLI `--fake-responses` JSONL script.

Each line is one model call (`generateContentStream`) and its streamed response. Both
agents (adk-acp and Gemini CLI) answer from these files, so only their own work is timed.
"""

from __future__ import annotations

import json
from typing import Any

STREAM_CHUNKS = 200  # chunks of a long streamed reply


def line(*parts: dict[str, Any]) -> str:
    """One model turn answered in a single chunk with `parts` (text or `call`s)."""
    candidate = {
        "content": {"role": "model", "parts": list(parts)},
        "finishReason": "STOP",
        "index": 0,
    }
    return (
        json.dumps({"method": "generateContentStream", "response": [{"candidates": [candidate]}]})
        + "\n"
    )


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A `functionCall` part: the model asks for tool `name`."""
    return {"functionCall": {"name": name, "args": args}}


def _chunk(text: str, finish: bool = False) -> dict[str, Any]:
    content = {"role": "model", "parts": [{"text": text}]}
    candidate: dict[str, Any] = {"content": content, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate]}


def fake_script(short_turns: int, stream_turns: int, spare: int = 4) -> str:
    """Gemini CLI JSONL: `short_turns` two-chunk replies, then `stream_turns` 200-chunk ones."""
    short = [_chunk("Hello"), _chunk(" there.", finish=True)]
    stream = [_chunk(f"w{i} ") for i in range(STREAM_CHUNKS - 1)] + [_chunk("end.", finish=True)]
    lines = [short] * short_turns + [stream] * stream_turns + [short] * spare
    return "".join(
        json.dumps({"method": "generateContentStream", "response": r}) + "\n" for r in lines
    )
