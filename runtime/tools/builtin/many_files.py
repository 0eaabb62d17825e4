"""`read_many_files`: the text of several files at once, chosen by paths and globs."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, bool_arg, parse_error, str_list_arg
from runtime.tools.builtin.env import files_of, resolve, short_title_arg, shown
from runtime.tools.builtin.read import MEDIA_EXTENSIONS, window
from runtime.tools.builtin.results import error_from_exception
from runtime.tools.io.files import BinaryFileError, FileTooLargeError
from runtime.tools.io.gitignore import walk
from runtime.tools.io.globs import any_glob_match, compile_glob, has_magic
from runtime.tools.policy.sensitive import is_sensitive_file

logger = logging.getLogger(__name__)

MAX_TOTAL_CHARS = 500_000
"""Content returned by one call; the files past it are listed as skipped."""
MAX_FILES = 500
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
END_MARKER = "--- End of content ---"


@dataclass(frozen=True)
class _ManyArgs:
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    recursive: bool


def _parse(args: dict[str, Any]) -> _ManyArgs:
    include = tuple(p for p in str_list_arg(args, "include", required=True) if p.strip())
    if not include:
        raise ArgError("The 'include' parameter must name at least one path or glob pattern.")
    return _ManyArgs(
        include, tuple(str_list_arg(args, "exclude")), bool_arg(args, "recursive", True)
    )


def _skip_default_dir(rel: str, name: str) -> bool:
    return name in DEFAULT_EXCLUDED_DIRS


def _collect(env: ToolEnv, parsed: _ManyArgs) -> tuple[list[Path], list[str]]:
    """The files to read (sorted, unique) and notes on include entries that found nothing."""
    root = env.roots[0]
    chosen: dict[Path, None] = {}
    explicit: set[Path] = set()
    notes: list[str] = []
    patterns: list[str] = []
    for item in parsed.include:
        if has_magic(item):
            if os.path.isabs(item):
                relative = os.path.relpath(item, root)
                if relative.startswith(".."):
                    notes.append(f"{item} (outside the workspace root)")
                    continue
                item = relative
            patterns.append(item)
            continue
        path = resolve(env, item)
        if path.is_file():
            chosen[path] = None
            explicit.add(path)  # named explicitly: no exclusion applies
        elif path.is_dir():
            for entry in walk(path, skip_dir=_skip_default_dir):
                if not entry.is_dir and (parsed.recursive or "/" not in entry.rel):
                    chosen[entry.path] = None
        else:
            notes.append(f"{item} (not found)")
    if patterns:
        regexes = [compile_glob(p) for p in patterns]
        for entry in walk(root, skip_dir=_skip_default_dir):
            if not entry.is_dir and any(r.fullmatch(entry.rel) for r in regexes):
                chosen[entry.path] = None
    excluded = [
        p
        for p in chosen
        if p not in explicit and (is_sensitive_file(p) or _is_excluded(env, p, parsed.exclude))
    ]
    for path in excluded:
        del chosen[path]
    return sorted(chosen), notes


def _is_excluded(env: ToolEnv, path: Path, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    rel = shown(env, path)
    return any_glob_match(patterns, rel) or any_glob_match(patterns, path.name)


class ReadManyFilesTool(GcliTool):
    """`read_many_files`: concatenated text of files named by paths, directories or globs."""

    name = "read_many_files"
    kind = "read"
    description = (
        "Reads several text files and returns their contents one after another, each under a "
        "'--- <path> ---' line. 'include' takes file paths, directories (all files below them) "
        "and glob patterns relative to the workspace root (e.g. 'src/**/*.py'); 'exclude' takes "
        "glob patterns to leave out. Files ignored by .gitignore, binary files and dependency "
        f"folders such as node_modules are skipped. About {MAX_TOTAL_CHARS:,} characters at most."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "include": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Paths, directories or glob patterns of the files to read.",
                },
                "exclude": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": (
                        "Optional: glob patterns of files to leave out (e.g. '**/*.test.ts')."
                    ),
                },
                "recursive": {
                    "type": "boolean",
                    "description": "Optional: read directories recursively. Default true.",
                },
            },
            "required": ["include"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        include = args.get("include")
        items = (
            [include] if isinstance(include, str) else include if isinstance(include, list) else []
        )
        names = ", ".join(str(i) for i in items[:5]) + (", …" if len(items) > 5 else "")
        return ToolDisplay(title=f"Read {short_title_arg(names, 120) or 'files'}", kind="read")

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse(args)
            paths, notes = await asyncio.to_thread(_collect, env, parsed)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        files = files_of(env)
        parts: list[str] = []
        read: list[str] = []
        skipped = list(notes)
        total = 0
        for path in paths:
            rel = shown(env, path)
            if len(read) >= MAX_FILES or total >= MAX_TOTAL_CHARS:
                skipped.append(f"{rel} (size limit of this call reached)")
                continue
            if path.suffix.lower() in MEDIA_EXTENSIONS:
                skipped.append(f"{rel} (media file)")
                continue
            try:
                text = await files.read_text(path)
            except (RuntimeAgentError, OSError) as exc:
                skipped.append(f"{rel} ({_reason(exc)})")
                continue
            view = window(text, None, None)
            body = f"{view.note}\n{view.content}" if view.note else view.content
            parts.append(f"--- {rel} ---\n\n{body}\n\n")
            read.append(rel)
            total += len(body)
        if not read:
            text = (
                "No files were read: nothing matched the include patterns, "
                "or every match was skipped."
            )
        else:
            text = "".join(parts) + END_MARKER
        if skipped:
            text += f"\n\nSkipped {len(skipped)} item(s):\n" + "\n".join(f"- {s}" for s in skipped)
        return ToolResult(llm_content=text, raw_output={"read": read, "skipped": skipped})


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BinaryFileError):
        return "binary file"
    if isinstance(exc, FileTooLargeError):
        return "too large"
    return str(exc) or type(exc).__name__
