"""Where a session keeps files beside its record: the full tool outputs."""

from __future__ import annotations

from pathlib import Path


def outputs_dir(temp_dir: Path, session_id: str) -> Path:
    """Full tool outputs (truncated or masked) of one session: as long as the session's
    record (removed by `SessionService.delete`), or the session itself when not recorded."""
    return temp_dir / "tool-outputs" / f"session-{session_id}"
