"""A subagent's scoped execution (design Phase B: "scoped execution wrappers", Gemini
CLI's `runWithScopedWorkspaceContext`): what its run may reach, made from its
definition, for its own session only; the parent's session is never widened.

- workspace: the parent's roots plus the definition's `workspace_directories`
  (relative to the workspace, `~` expanded). A filesystem root is refused (the whole
  disk), as Gemini CLI refuses it; a folder that does not exist is skipped with a
  warning. Every path tool of the subagent resolves inside these roots only.

Gemini CLI's other two wrappers (`memoryInboxAccess`, `autoMemoryExtractionWriteAccess`)
scope its Auto Memory extraction agent (a background agent that mines past sessions
into an inbox of patches): adk-acp has no Auto Memory, so a definition asking for them
is refused with that reason rather than run with a grant that means nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)


NO_AUTO_MEMORY = "adk-acp has no Auto Memory (the inbox and extraction agent this scopes)"


class ScopeError(ValueError):
    """A definition asks for a scope that cannot be given (the reason is the message)."""


def scoped_roots(
    directories: tuple[str, ...], parent_roots: tuple[Path, ...], workspace: Path, home: Path
) -> tuple[Path, ...]:
    """The subagent's additional roots: the parent's, then the definition's folders
    (see the module doc); raises ScopeError for a filesystem root."""
    roots = list(parent_roots)
    for raw in directories:
        text = str(home) + raw[1:] if raw == "~" or raw.startswith("~/") else raw
        path = Path(text)
        folder = (path if path.is_absolute() else workspace / path).resolve()
        if folder == Path(folder.anchor):
            raise ScopeError(f"cannot add the filesystem root {raw!r} as a workspace directory")
        if not folder.is_dir():
            logger.warning("subagent workspace directory %s does not exist; skipped", folder)
            continue
        if folder != workspace.resolve() and folder not in roots:
            roots.append(folder)
    return tuple(roots)
