"""Lines of a `--fake-responses` script (Gemini CLI's JSONL format) for the e2e tier."""

from __future__ import annotations

import json
from typing import Any


def call(name: str, args: dict[str, Any]) -> str:
    """A model turn that calls one tool."""
    part = {"functionCall": {"name": name, "args": args}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}}]}
    return json.dumps({"method": "generateContentStream", "response": [chunk]})


def text(answer: str) -> str:
    """A model turn that answers with text and stops."""
    candidate = {"content": {"role": "model", "parts": [{"text": answer}]}, "finishReason": "STOP"}
    return json.dumps(
        {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}
    )
