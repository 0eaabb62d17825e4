"""Per-call truncation of large tool output (Gemini CLI's tool executor).

Output above the threshold (40 000 characters by default) is saved in full to
`<output_dir>/tool-outputs/session-<id>/<tool>_<callId>.txt` and the model gets
the first fifth and the last four fifths of the threshold with a pointer:

    Output too large. Showing first 8,000 and last 32,000 characters. For full output see: <path>
    <head>

    ... [N characters omitted] ...

    <tail>
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 40_000

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class TruncatedOutput:
    """The text for the model. `saved_path` is where the full output went (None: not
    truncated, or saving failed); `omitted` counts the characters left out."""

    text: str
    saved_path: Path | None
    omitted: int


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def output_file_path(output_dir: Path, *, session_id: str, tool_name: str, call_id: str) -> Path:
    """The deterministic file holding a call's full output."""
    return (
        output_dir
        / "tool-outputs"
        / f"session-{_safe(session_id)}"
        / f"{_safe(tool_name)}_{_safe(call_id)}.txt"
    )


def truncate_output(
    content: str,
    *,
    output_dir: Path,
    session_id: str,
    tool_name: str,
    call_id: str,
    threshold: int = DEFAULT_THRESHOLD,
) -> TruncatedOutput:
    """`content` as is when it fits the threshold; else saved in full and cut (see module doc).

    A failed save is logged and the cut text says so instead of naming a file.
    """
    if threshold <= 0 or len(content) <= threshold:
        return TruncatedOutput(text=content, saved_path=None, omitted=0)
    head_chars = threshold // 5
    tail_chars = threshold - head_chars
    omitted = len(content) - head_chars - tail_chars
    path = output_file_path(output_dir, session_id=session_id, tool_name=tool_name, call_id=call_id)
    saved: Path | None = path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        where = f"For full output see: {path}"
    except OSError as exc:
        logger.warning("could not save the full output of %s (%s): %s", tool_name, call_id, exc)
        where = f"The full output could not be saved: {exc}"
        saved = None
    text = (
        f"Output too large. Showing first {head_chars:,} and last {tail_chars:,} characters. "
        f"{where}\n{content[:head_chars]}\n\n"
        f"... [{omitted:,} characters omitted] ...\n\n{content[-tail_chars:]}"
    )
    return TruncatedOutput(text=text, saved_path=saved, omitted=omitted)
