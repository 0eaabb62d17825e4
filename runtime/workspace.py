"""The one check of a directory a client names as a session's workspace (`cwd`) or an
additional root. Standard library only: `acp_server/early.py` runs it before the engine
has loaded, and `runtime.session.service` for every other opening."""

from __future__ import annotations

from pathlib import Path

from runtime.errors import ConfigError


class WorkspaceError(ConfigError):
    """A `cwd` or additional directory that is not an absolute, existing directory."""


def workspace_dir(raw: str, what: str = "cwd") -> Path:
    """`raw` resolved, if it is an absolute path to a directory; else WorkspaceError
    saying why (`what` names the field)."""
    shown = raw if len(raw) <= 200 else f"{raw[:200]}… ({len(raw)} chars)"
    path = Path(raw)
    if not path.is_absolute():
        raise WorkspaceError(f"{what} must be an absolute path, got {shown!r}")
    try:
        usable = path.is_dir()
        resolved = path.resolve() if usable else path
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop of links
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise WorkspaceError(f"{what} is not a usable directory ({reason}): {shown}") from None
    if not usable:
        raise WorkspaceError(f"{what} does not exist or is not a directory: {shown}")
    return resolved
