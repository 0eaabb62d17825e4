"""`read_file` and `list_directory`: looking at one file or one directory."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import (
    ArgError,
    bool_arg,
    int_arg,
    parse_error,
    required_str,
    str_list_arg,
)
from runtime.tools.builtin.env import files_of, location, resolve, shown
from runtime.tools.builtin.results import error_from_exception, error_result
from runtime.tools.io.gitignore import GIT_DIR, IgnoreRules
from runtime.tools.io.globs import any_glob_match

logger = logging.getLogger(__name__)

MAX_LINES = 2000
"""Lines returned by one read when no range is asked for."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut, with a marker."""

MEDIA_EXTENSIONS = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".heic",
     ".pdf", ".mp3", ".wav", ".aiff", ".aac", ".ogg", ".flac", ".mp4", ".mov", ".webm"}
)  # fmt: skip


def split_lines(text: str) -> list[str]:
    """Lines as editors count them: split at `\\n`, a trailing `\\r` dropped, no empty last line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def clip_line(line: str) -> tuple[str, bool]:
    if len(line) <= MAX_LINE_CHARS:
        return line, False
    return line[:MAX_LINE_CHARS] + " ... [line truncated]", True


@dataclass(frozen=True)
class LineWindow:
    """Which lines of a text to return, and the note that explains a partial view."""

    content: str
    first: int
    last: int
    total: int
    note: str | None


def window(text: str, start: int | None, end: int | None) -> LineWindow:
    """Select lines `start`..`end` (1-based, inclusive), at most MAX_LINES when no end is given.

    Raises ArgError when `start` lies past the end of a non-empty text.
    """
    lines = split_lines(text)
    total = len(lines)
    first = start or 1
    if total and first > total:
        raise ArgError(f"start_line {first} is past the end of the file ({total} lines).")
    last = min(end, total) if end is not None else min(total, first + MAX_LINES - 1)
    clipped_any = False
    selected: list[str] = []
    for line in lines[first - 1 : last]:
        clipped, was_clipped = clip_line(line)
        clipped_any |= was_clipped
        selected.append(clipped)
    partial = first > 1 or last < total
    note_parts: list[str] = []
    if partial:
        note_parts.append(f"Showing lines {first}-{last} of {total} total lines.")
        if last < total:
            note_parts.append(f"To read more, call read_file again with start_line={last + 1}.")
    if clipped_any:
        note_parts.append(f"Lines longer than {MAX_LINE_CHARS} characters were cut.")
    note = "[" + " ".join(note_parts) + "]" if note_parts else None
    return LineWindow("\n".join(selected), first, last, total, note)


# ---------------------------------------------------------------- read_file


@dataclass(frozen=True)
class _ReadArgs:
    file_path: str
    start_line: int | None
    end_line: int | None


def _parse_read(args: dict[str, Any]) -> _ReadArgs:
    file_path = required_str(args, "file_path")
    start = int_arg(args, "start_line", minimum=1)
    end = int_arg(args, "end_line", minimum=1)
    if start is not None and end is not None and end < start:
        raise ArgError(f"end_line ({end}) must not be before start_line ({start}).")
    return _ReadArgs(file_path, start, end)


class ReadFileTool(GcliTool):
    """`read_file`: one file's text, whole or a line range."""

    name = "read_file"
    kind = "read"
    description = (
        "Returns the text of one file. For large files, ask for a part with 'start_line' and "
        "'end_line' (1-based, inclusive); without them at most "
        f"{MAX_LINES} lines are returned, and lines over {MAX_LINE_CHARS} characters are cut. "
        "A note at the top says when only part of the file is shown. Files over 20 MB, "
        "directories and binary files are refused."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file to read."},
                "start_line": {
                    "type": "number",
                    "description": "Optional: first line to return, 1-based.",
                },
                "end_line": {
                    "type": "number",
                    "description": "Optional: last line to return, 1-based, inclusive.",
                },
            },
            "required": ["file_path"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse_read, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = args.get("file_path")
        raw = raw if isinstance(raw, str) else ""
        title = f"Read {shown(env, raw)}" if raw else "Read file"
        start, end = args.get("start_line"), args.get("end_line")
        if isinstance(start, int | float) or isinstance(end, int | float):
            title += f" (lines {int(start) if start else 1}-{int(end) if end else 'end'})"
        line = (
            int(start) if isinstance(start, int | float) and not isinstance(start, bool) else None
        )
        return ToolDisplay(title=title, kind="read", locations=location(env, raw, line))

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse_read(args)
            path = resolve(env, parsed.file_path)
            files = files_of(env)
            if path.suffix.lower() in MEDIA_EXTENSIONS and await files.exists(path):
                return _media_note(path, env)
            text = await files.read_text(path)
            view = window(text, parsed.start_line, parsed.end_line)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        body = view.content if view.total else "[The file is empty.]"
        llm = f"{view.note}\n\n{body}" if view.note else body
        raw = {
            "path": str(path),
            "start_line": view.first,
            "end_line": view.last,
            "total_lines": view.total,
        }
        return ToolResult(llm_content=llm, raw_output=raw)


def _media_note(path: Path, env: ToolEnv) -> ToolResult:
    size = path.stat().st_size
    return ToolResult(
        llm_content=(
            f"{shown(env, path)} is a {path.suffix.lower().lstrip('.').upper()} file "
            f"({size} bytes); "
            "its content cannot be returned as text."
        ),
        raw_output={"path": str(path), "media": True, "size": size},
    )


# ---------------------------------------------------------------- list_directory


@dataclass(frozen=True)
class _ListArgs:
    dir_path: str
    ignore: tuple[str, ...]
    respect_git_ignore: bool


def _parse_list(args: dict[str, Any]) -> _ListArgs:
    dir_path = required_str(args, "dir_path")
    ignore = tuple(str_list_arg(args, "ignore"))
    options = args.get("file_filtering_options") or {}
    if not isinstance(options, dict):
        raise ArgError("The 'file_filtering_options' parameter must be an object.")
    respect = bool_arg(options, "respect_git_ignore", True)
    return _ListArgs(dir_path, ignore, respect)


class ListDirectoryTool(GcliTool):
    """`list_directory`: the entries directly inside one directory."""

    name = "list_directory"
    kind = "search"
    description = (
        "Lists the files and subdirectories directly inside a directory, directories first "
        "(marked [DIR]). Entries ignored by .gitignore and those matching the 'ignore' glob "
        "patterns are left out and counted."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "dir_path": {"type": "string", "description": "Path of the directory to list."},
                "ignore": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": (
                        "Optional: glob patterns of entry names to leave out (e.g. '*.log')."
                    ),
                },
                "file_filtering_options": {
                    "type": "object",
                    "description": "Optional: which ignore files to respect.",
                    "properties": {
                        "respect_git_ignore": {
                            "type": "boolean",
                            "description": (
                                "Leave out entries ignored by .gitignore (in git repositories). "
                                "Default true."
                            ),
                        }
                    },
                },
            },
            "required": ["dir_path"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse_list, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = args.get("dir_path")
        raw = raw if isinstance(raw, str) and raw else "."
        return ToolDisplay(
            title=f"List {shown(env, raw)}", kind="search", locations=location(env, raw)
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse_list(args)
            path = resolve(env, parsed.dir_path)
            files = files_of(env)
            if not await files.exists(path):
                return error_result(f"Directory not found: {shown(env, path)}", "file_not_found")
            if not await files.is_dir(path):
                return error_result(
                    f"Path is not a directory: {shown(env, path)}", "not_a_directory"
                )
            entries = await files.list_dir(path)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        rules = IgnoreRules.for_directory(path) if parsed.respect_git_ignore else IgnoreRules()
        kept, hidden = [], 0
        for entry in entries:
            if entry.name == GIT_DIR or any_glob_match(parsed.ignore, entry.name):
                hidden += 1
            elif parsed.respect_git_ignore and rules.is_ignored(str(entry.path), entry.is_dir):
                hidden += 1
            else:
                kept.append(entry)
        kept.sort(key=lambda e: (not e.is_dir, e.name.lower(), e.name))
        where = shown(env, path)
        if not kept:
            text = f"Directory {where} is empty."
        else:
            lines = [f"[DIR] {e.name}" if e.is_dir else e.name for e in kept]
            text = f"Directory listing for {where}:\n" + "\n".join(lines)
        if hidden:
            text += f"\n\n({hidden} {'entry' if hidden == 1 else 'entries'} ignored)"
        raw = {"path": str(path), "entries": [{"name": e.name, "is_dir": e.is_dir} for e in kept]}
        return ToolResult(llm_content=text, raw_output=raw)
