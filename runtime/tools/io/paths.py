"""Resolving paths from the model or the editor against the session's workspace roots.

Every path a tool touches goes through `resolve_in_roots` first. It is pure: it
reads the file system (to follow symlinks) but never changes it, so a refusal
leaves nothing behind.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from runtime.errors import PathOutsideWorkspaceError

logger = logging.getLogger(__name__)


def _is_within(path: str, root: str) -> bool:
    """Lexical containment of two normalized absolute paths."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def _root_forms(roots: tuple[Path, ...]) -> list[tuple[str, str]]:
    """Each root as (normalized absolute form, real path)."""
    return [(os.path.normpath(os.path.abspath(r)), os.path.realpath(r)) for r in roots]


def _describe_roots(roots: tuple[Path, ...]) -> str:
    return ", ".join(str(r) for r in roots)


def resolve_in_roots(path: str | Path, roots: tuple[Path, ...]) -> Path:
    """Resolve `path` to an absolute path inside one of `roots`.

    A relative path is taken from `roots[0]`; an absolute path must lie inside one
    root. `..` is applied lexically, then the real path (symlinks followed, also
    for a path that does not exist yet, through its nearest existing parent) must
    lie inside a root too. Returns the normalized path with symlinks kept (so a
    title shows what the model asked for).

    Raises `PathOutsideWorkspaceError` naming the path and the roots otherwise.
    """
    if not roots:
        raise PathOutsideWorkspaceError(
            f"Path '{path}' cannot be used: the session has no workspace root"
        )
    raw = os.fspath(path)
    if "\x00" in raw:
        raise PathOutsideWorkspaceError(f"Path {raw!r} contains a NUL character")
    base = os.path.abspath(roots[0])
    joined = raw if os.path.isabs(raw) else os.path.join(base, raw)
    normalized = os.path.normpath(joined)
    forms = _root_forms(roots)

    if not any(
        _is_within(normalized, lexical) or _is_within(normalized, real) for lexical, real in forms
    ):
        raise PathOutsideWorkspaceError(
            f"Path '{raw}' resolves to '{normalized}', which is outside the workspace roots "
            f"({_describe_roots(roots)})"
        )
    # realpath follows every existing symlink (dangling ones too) and keeps the
    # not-yet-existing tail as is, so a new file below a symlinked directory is
    # judged by where it would really be written.
    real = os.path.realpath(normalized)
    if not any(_is_within(real, root_real) for _, root_real in forms):
        raise PathOutsideWorkspaceError(
            f"Path '{raw}' leads through a symlink to '{real}', "
            "which is outside the workspace roots "
            f"({_describe_roots(roots)})"
        )
    return Path(normalized)


def display_path(path: str | Path, roots: tuple[Path, ...]) -> str:
    """A short form of `path` for titles and model output, without I/O.

    Relative (POSIX separators) to the first root containing it, `.` for a root
    itself; otherwise the path as given (absolute when it was absolute).
    """
    raw = os.fspath(path)
    if not roots:
        return raw
    base = os.path.abspath(roots[0])
    normalized = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(base, raw))
    for root in roots:
        root_abs = os.path.normpath(os.path.abspath(root))
        if _is_within(normalized, root_abs):
            rel = os.path.relpath(normalized, root_abs)
            if root_abs != base:
                # Outside the first root a relative path would be read against the
                # wrong root; keep it absolute so it can be passed back to a tool.
                return normalized
            return Path(rel).as_posix()
    return raw


def absolute_for_display(path: str | Path, roots: tuple[Path, ...]) -> str:
    """The lexical absolute form of `path` (for editor locations), without I/O."""
    raw = os.fspath(path)
    if os.path.isabs(raw) or not roots:
        return os.path.normpath(raw) if raw else raw
    return os.path.normpath(os.path.join(os.path.abspath(roots[0]), raw))
