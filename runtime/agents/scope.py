"""A subagent's scoped execution (design Phase B: "scoped execution wrappers", Gemini
CLI's `runWithScopedWorkspaceContext`, `runWithScopedMemoryInboxAccess`,
`runWithScopedAutoMemoryExtractionWriteAccess`): what its run may reach, made from its
definition, for its own session only; the parent's session is never widened.

- workspace (`workspace_directories`): the parent's roots plus these folders (relative
  to the workspace, `~` expanded). A filesystem root is refused (the whole disk), as
  Gemini CLI refuses it; a folder that does not exist is skipped with a warning.
- memory inbox (`memory_inbox_access`): the project's memory inbox
  (`<project temp>/memory/.inbox`, out of every other session's reach) joins its roots:
  it may read all of it, and write there only the canonical patches
  `{private,global}/extraction.patch`.
- extraction writes (`auto_memory_extraction_write_access`): every write of its run
  must go to the project's extracted skills (`<project temp>/memory/skills`) or, with
  inbox access, a canonical inbox patch; it is not given the tools that write beyond
  what can be checked (`run_shell_command`, `save_memory`).

Writes are checked by wrapping the write tools (`write_file`, `replace`) of the
subagent's session: a refused path fails the call before anyone is asked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import ToolError
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.io.paths import resolve_in_roots

logger = logging.getLogger(__name__)

WRITE_TOOLS = ("write_file", "replace")
UNCHECKED_WRITERS = ("run_shell_command", "save_memory")
PATCH_KINDS = ("private", "global")


class ScopeError(ValueError):
    """A definition asks for a scope that cannot be given (the reason is the message)."""


def memory_dir(temp_dir: Path) -> Path:
    """The project's memory folder (Gemini CLI's project memory temp dir)."""
    return temp_dir / "memory"


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


def definition_scope(
    definition: Any, parent_roots: tuple[Path, ...], workspace: Path, home: Path, temp_dir: Path
) -> tuple[tuple[Path, ...], WriteScope | None]:
    """A subagent definition's roots and write limits (its `workspace_directories`, its
    memory inbox access and extraction allowlist; see the module doc); raises ScopeError."""
    roots = scoped_roots(definition.workspace_directories, parent_roots, workspace, home)
    if not (definition.memory_inbox_access or definition.auto_memory_extraction_write_access):
        return roots, None
    writes = WriteScope(
        memory_dir(temp_dir),
        inbox_access=definition.memory_inbox_access,
        extraction=definition.auto_memory_extraction_write_access,
    )
    return (*roots, *(r for r in writes.roots() if r not in roots)), writes


@dataclass(frozen=True)
class WriteScope:
    """A subagent's write limits (module doc): `inbox` set with inbox access;
    `extraction` with the extraction write allowlist; `skills` the skills folder."""

    memory: Path
    inbox_access: bool
    extraction: bool

    @property
    def inbox(self) -> Path:
        return self.memory / ".inbox"

    @property
    def skills(self) -> Path:
        return self.memory / "skills"

    def roots(self) -> tuple[Path, ...]:
        """The folders the scope adds to the subagent's roots (made when missing)."""
        added = [self.inbox] if self.inbox_access else []
        added += [self.skills] if self.extraction else []
        for folder in added:
            folder.mkdir(parents=True, exist_ok=True)
        return tuple(folder.resolve() for folder in added)

    def refusal(self, path: Path) -> str | None:
        """Why the subagent may not write `path` (None: it may)."""
        path = path.resolve()
        inbox = self.inbox.resolve()
        canonical = self.inbox_access and path in {
            inbox / kind / "extraction.patch" for kind in PATCH_KINDS
        }
        if self.extraction:
            if canonical or path.is_relative_to(self.skills.resolve()):
                return None
            return (
                f'Auto-memory extraction write denied: "{path}" is outside the extraction '
                f"write allowlist (extracted skills under {self.skills} and the inbox patches "
                f"{inbox}/{{private,global}}/extraction.patch)."
            )
        if path.is_relative_to(inbox) and not canonical:
            return (
                f'Memory inbox write denied: "{path}" is not one of the canonical patches '
                f"{inbox}/{{private,global}}/extraction.patch."
            )
        return None

    def guard(self, tools: Mapping[str, Any]) -> dict[str, Any]:
        """The session's tools with the write tools checked (and, for extraction, the
        tools whose writes cannot be checked left out)."""
        out: dict[str, Any] = {}
        for name, tool in tools.items():
            if self.extraction and name in UNCHECKED_WRITERS:
                logger.info("subagent with extraction writes only: %s not offered", name)
                continue
            out[name] = ScopedWriteTool(tool, self) if name in WRITE_TOOLS else tool
        return out


class ScopedWriteTool(GcliTool):
    """A write tool of a scoped subagent: its `file_path` is checked first (module doc)."""

    def __init__(self, inner: GcliTool, scope: WriteScope) -> None:
        self.inner, self.scope = inner, scope
        self.name, self.kind, self.description = inner.name, inner.kind, inner.description

    def parameters_schema(self) -> dict[str, Any]:
        return self.inner.parameters_schema()

    def validate(self, args: dict[str, Any]) -> str | None:
        return self.inner.validate(args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> Any:
        return self.inner.display(args, env)

    def notification_details(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.inner.notification_details(args)

    def _check(self, args: dict[str, Any], env: ToolEnv) -> None:
        raw = args.get("file_path")
        if isinstance(raw, str) and raw:
            reason = self.scope.refusal(resolve_in_roots(raw, env.roots))
            if reason is not None:
                raise ToolError(reason)

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> Any:
        self._check(args, env)  # refused before the user is asked
        return await self.inner.preview(args, env)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            self._check(args, env)
        except ToolError as exc:
            return ToolResult(llm_content=str(exc), is_error=True, error_type="scope_denied")
        return await self.inner.execute(args, env)
