"""How many tokens each model family takes in (Gemini CLI's `tokenLimit`).

Used by usage updates (`used / size` in the editor) and by compression's
threshold. Matched by prefix, longest first; unknown models get the default.
"""

from __future__ import annotations

DEFAULT_CONTEXT_WINDOW = 1_048_576

_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gemini-2.0-flash-preview-image-generation", 32_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash-lite", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-3-pro", 1_048_576),
    ("gemini-3-flash", 1_048_576),
)


def context_window(model: str) -> int:
    """The input token limit of `model` (a family prefix match; the default otherwise)."""
    name = model.removeprefix("models/")
    for prefix, size in sorted(_WINDOWS, key=lambda item: -len(item[0])):
        if name.startswith(prefix):
            return size
    return DEFAULT_CONTEXT_WINDOW
