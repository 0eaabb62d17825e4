"""Lines of a `--fake-responses` script (Gemini CLI's JSONL format) for the e2e tier."""

from __future__ import annotations

import json
from typing import Any


def call(name: str, args: dict[str, Any], usage: dict[str, int] | None = None) -> str:
    """A model turn that calls one tool (with `usage` as its `usageMetadata`, if given)."""
    part = {"functionCall": {"name": name, "args": args}}
    chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]}}]}
    if usage is not None:
        chunk["usageMetadata"] = usage
    return json.dumps({"method": "generateContentStream", "response": [chunk]})


def text(answer: str, usage: dict[str, int] | None = None) -> str:
    """A model turn that answers with text and stops (with `usage`, if given)."""
    candidate = {"content": {"role": "model", "parts": [{"text": answer}]}, "finishReason": "STOP"}
    chunk: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        chunk["usageMetadata"] = usage
    return json.dumps({"method": "generateContentStream", "response": [chunk]})
