"""`glob`: finding files by path pattern (local disk)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, bool_arg, parse_error, required_str, str_arg
from runtime.tools.builtin.env import location, resolve, short_title_arg, shown
from runtime.tools.builtin.results import error_from_exception, error_result
from runtime.tools.io.gitignore import walk
from runtime.tools.io.globs import compile_glob, has_magic
from runtime.tools.io.paths import resolve_in_roots

logger = logging.getLogger(__name__)

MAX_GLOB_RESULTS = 1000
RECENT_S = 24 * 3600
_ALWAYS_SKIPPED_DIRS = frozenset({"node_modules"})


def _split_literal_prefix(pattern: str) -> tuple[str, str]:
    """`src/app/**/*.py` → (`src/app`, `**/*.py`): the directories to walk into directly."""
    parts = pattern.split("/")
    index = 0
    while index < len(parts) - 1 and parts[index] and not has_magic(parts[index]):
        index += 1
    return "/".join(parts[:index]), "/".join(parts[index:])


def _sort_newest_first(paths: list[tuple[Path, float]], now: float) -> list[Path]:
    """Gemini CLI's order: files changed in the last 24 h newest first, then the rest by path."""
    recent = sorted((p for p in paths if now - p[1] < RECENT_S), key=lambda p: (-p[1], str(p[0])))
    older = sorted((p for p in paths if now - p[1] >= RECENT_S), key=lambda p: str(p[0]))
    return [p for p, _ in (*recent, *older)]


@dataclass(frozen=True)
class _GlobArgs:
    pattern: str
    dir_path: str
    case_sensitive: bool
    respect_git_ignore: bool


def _parse_glob(args: dict[str, Any]) -> _GlobArgs:
    return _GlobArgs(
        pattern=required_str(args, "pattern"),
        dir_path=str_arg(args, "dir_path") or ".",
        case_sensitive=bool_arg(args, "case_sensitive", False),
        respect_git_ignore=bool_arg(args, "respect_git_ignore", True),
    )


def _glob_files(
    base: Path,
    pattern: str,
    case_sensitive: bool,
    respect_git_ignore: bool,
    roots: tuple[Path, ...],
) -> list[tuple[Path, float]]:
    prefix, rest = _split_literal_prefix(pattern)
    walk_base = base
    if prefix and (base / prefix).is_dir():
        # The literal head is walked into directly, so it is confined like any path:
        # `../../etc/*` or a symlinked directory leading out is refused, not listed.
        walk_base, pattern = resolve_in_roots(base / prefix, roots), rest
    regex = compile_glob(pattern, case_sensitive)
    wants_modules = "node_modules" in pattern

    def skip_dir(rel: str, name: str) -> bool:
        return name in _ALWAYS_SKIPPED_DIRS and not wants_modules

    found: list[tuple[Path, float]] = []
    for entry in walk(walk_base, respect_git_ignore=respect_git_ignore, skip_dir=skip_dir):
        if not entry.is_dir and regex.fullmatch(entry.rel):
            try:
                found.append((entry.path, entry.path.stat().st_mtime))
            except OSError as exc:
                logger.debug("cannot stat %s: %s", entry.path, exc)
    return found


class GlobTool(GcliTool):
    """`glob`: files whose path matches a glob pattern."""

    name = "glob"
    kind = "search"
    description = (
        "Finds files whose path matches a glob pattern such as '**/*.py' or 'src/**/*.{ts,tsx}' "
        "('**' spans directories, '*' stays within one). Returns absolute paths, files changed "
        "in the last 24 hours first (newest first), then the others alphabetically. Files "
        f"ignored by .gitignore are left out unless respect_git_ignore is false; at most "
        f"{MAX_GLOB_RESULTS} paths are returned."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The glob pattern, e.g. '**/*.py' or 'docs/*.md'.",
                },
                "dir_path": {
                    "type": "string",
                    "description": (
                        "Optional: directory to search in; the workspace root when omitted."
                    ),
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Optional: match case. Default false.",
                },
                "respect_git_ignore": {
                    "type": "boolean",
                    "description": "Optional: leave out files ignored by .gitignore. Default true.",
                },
            },
            "required": ["pattern"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse_glob, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        pattern = args.get("pattern") if isinstance(args.get("pattern"), str) else ""
        dir_path = args.get("dir_path") if isinstance(args.get("dir_path"), str) else None
        title = f"Find `{short_title_arg(str(pattern))}`"
        if dir_path and dir_path != ".":
            title += f" in {shown(env, dir_path)}"
        return ToolDisplay(title=title, kind="search", locations=location(env, dir_path))

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse_glob(args)
            base = resolve(env, parsed.dir_path)
            pattern = parsed.pattern
            if os.path.isabs(pattern):
                pattern = os.path.relpath(pattern, base)
                if pattern.startswith(".."):
                    raise ArgError(
                        f"The pattern {parsed.pattern!r} does not lie inside {shown(env, base)}."
                    )
            if not base.is_dir():
                return error_result(f"Directory not found: {shown(env, base)}", "file_not_found")
            found = await asyncio.to_thread(
                _glob_files,
                base,
                pattern,
                parsed.case_sensitive,
                parsed.respect_git_ignore,
                env.roots,
            )
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        where = shown(env, base)
        if not found:
            return ToolResult(
                llm_content=f'No files found matching pattern "{parsed.pattern}" within {where}.'
            )
        ordered = _sort_newest_first(found, time.time())
        shown_paths = ordered[:MAX_GLOB_RESULTS]
        header = (
            f'Found {len(ordered)} file(s) matching "{parsed.pattern}" within {where}, '
            "recently changed files first (newest first), then alphabetically:"
        )
        text = header + "\n" + "\n".join(str(p) for p in shown_paths)
        if len(ordered) > MAX_GLOB_RESULTS:
            text += (
                f"\n(Only the first {MAX_GLOB_RESULTS} are listed; "
                "narrow the pattern to see others.)"
            )
        return ToolResult(llm_content=text, raw_output={"files": [str(p) for p in shown_paths]})
