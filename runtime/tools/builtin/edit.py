"""`write_file` and `replace`: the two tools that change files.

Both show the user a diff before approval (`preview`) and return the same diff
in their result's display. Writes go through `FileAccess`, so an editor that
offers `fs.writeTextFile` sees (and reviews) every write.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError
from runtime.protocol import DisplayContent, DisplayDiff, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, bool_arg, required_str, str_arg
from runtime.tools.builtin.env import files_of, location, resolve, shown
from runtime.tools.builtin.plan import is_plan_file, plan_entries_from_markdown
from runtime.tools.builtin.results import CodedToolError, error_from_exception, error_result

logger = logging.getLogger(__name__)


async def _current_text(env: ToolEnv, path: Path) -> str | None:
    """The file's text (editor buffer first), None when it does not exist.

    At execution, the text the approved diff was made of (one read per edit)."""
    for shown_diff in env.preview:
        if isinstance(shown_diff, DisplayDiff) and shown_diff.path == str(path):
            return shown_diff.before_text
    try:
        return await files_of(env).read_text(path)
    except FileNotFoundError:
        return None


def _display_path(args: dict[str, Any]) -> str:
    raw = args.get("file_path")
    return raw if isinstance(raw, str) else ""


# ---------------------------------------------------------------- write_file


class WriteFileTool(GcliTool):
    """`write_file`: create a file or replace its whole content."""

    name = "write_file"
    kind = "edit"
    description = (
        "Writes the complete content of a file: creates it (with any missing parent "
        "directories) or overwrites it. Best for new or small files; for a targeted change "
        "in a larger file use 'replace'. The user may review the change before it is written."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file to write."},
                "content": {
                    "type": "string",
                    "description": (
                        "The file's complete new content; no placeholders for omitted parts."
                    ),
                },
            },
            "required": ["file_path", "content"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        try:
            required_str(args, "file_path")
            required_str(args, "content", allow_empty=True)
        except ArgError as exc:
            return str(exc)
        return None

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = _display_path(args)
        title = f"Write {shown(env, raw)}" if raw else "Write file"
        return ToolDisplay(title=title, kind="edit", locations=location(env, raw))

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        try:
            path = resolve(env, required_str(args, "file_path"))
            content = required_str(args, "content", allow_empty=True)
            before = await _current_text(env, path)
        except (RuntimeAgentError, OSError) as exc:
            logger.debug("no preview for write_file: %s", exc)
            return ()
        return (DisplayDiff(path=str(path), before_text=before, after_text=content),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            path = resolve(env, required_str(args, "file_path"))
            content = required_str(args, "content", allow_empty=True)
            files = files_of(env)
            if await files.is_dir(path):
                return error_result(
                    f"Path is a directory, not a file: {shown(env, path)}", "is_directory"
                )
            plan = is_plan_file(path, env)
            if plan:  # the agent's own plans folder: written here, not in the editor
                before = await asyncio.to_thread(_read_local, path)
                await asyncio.to_thread(_write_local, path, content)
            else:
                before = await _current_text(env, path)
                await files.write_text(path, content)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        where = shown(env, path)
        if before is None:
            message = f"Successfully created and wrote to new file: {where}"
        else:
            message = f"Successfully overwrote file: {where}"
        diff = DisplayDiff(path=str(path), before_text=before, after_text=content)
        return ToolResult(
            llm_content=message,
            display=(diff,),
            raw_output={"path": str(path), "created": before is None},
            plan=plan_entries_from_markdown(content) if plan else None,
        )


def _read_local(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _write_local(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(content, encoding="utf-8")
    tmp.replace(path)


# ---------------------------------------------------------------- replace


@dataclass(frozen=True)
class _Edit:
    path: Path
    before: str | None
    after: str
    replacements: int


def _plan_edit(args: dict[str, Any], env: ToolEnv, current: str | None, path: Path) -> _Edit:
    """Apply the replacement in memory; raises a CodedToolError with a message for the model."""
    old = required_str(args, "old_string", allow_empty=True)
    new = required_str(args, "new_string", allow_empty=True)
    allow_multiple = bool_arg(args, "allow_multiple", False)
    where = shown(env, path)
    if current is None:
        if old == "":
            return _Edit(path, None, new, 1)
        raise CodedToolError(
            f"File not found: {where}. To create a new file, use an empty old_string "
            "(or the write_file tool).",
            "file_not_found",
        )
    if old == "":
        raise CodedToolError(
            f"Cannot create {where}: the file already exists. "
            "Give the text to replace in old_string.",
            "file_exists",
        )
    if old == new:
        raise CodedToolError(
            "No change to apply: old_string and new_string are identical.", "edit_no_change"
        )
    count = current.count(old)
    if count == 0 and "\r\n" in current and "\n" in old and "\r\n" not in old:
        # The model writes LF; the file uses CRLF. Match and write in the file's style.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = current.count(old)
    if count == 0:
        raise CodedToolError(
            f"Could not find the text to replace in {where}: old_string matched 0 times. "
            "It must match the file exactly, including whitespace and indentation; "
            "read the file again to see its current content.",
            "edit_no_match",
        )
    if count > 1 and not allow_multiple:
        raise CodedToolError(
            f"old_string occurs {count} times in {where}, but exactly 1 was expected. "
            "Include more surrounding lines to make it unique, or set allow_multiple to true "
            f"to replace all {count} occurrences.",
            "edit_ambiguous",
        )
    after = current.replace(old, new) if allow_multiple else current.replace(old, new, 1)
    return _Edit(path, current, after, count if allow_multiple else 1)


class ReplaceTool(GcliTool):
    """`replace`: replace exact text in a file (once, or every occurrence)."""

    name = "replace"
    kind = "edit"
    description = (
        "Replaces exact text in a file. 'old_string' must match the file's text literally "
        "(whitespace and indentation included) and occur exactly once, unless 'allow_multiple' "
        "is true, in which case every occurrence is replaced. Include a few lines of context "
        "around the change so the match is unique. An empty 'old_string' creates a new file "
        "with 'new_string' as its content. The user may review the change before it is written."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file to change."},
                "instruction": {
                    "type": "string",
                    "description": "What the change does and why, in one or two sentences.",
                },
                "old_string": {
                    "type": "string",
                    "description": (
                        "The exact text to replace, unescaped, with enough context to be unique."
                    ),
                },
                "new_string": {
                    "type": "string",
                    "description": (
                        "The exact text to put in its place; no placeholders for omitted parts."
                    ),
                },
                "allow_multiple": {
                    "type": "boolean",
                    "description": (
                        "Replace every occurrence of old_string instead of requiring exactly one."
                    ),
                },
            },
            "required": ["file_path", "instruction", "old_string", "new_string"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        try:
            required_str(args, "file_path")
            required_str(args, "old_string", allow_empty=True)
            required_str(args, "new_string", allow_empty=True)
            str_arg(args, "instruction")
            bool_arg(args, "allow_multiple", False)
        except ArgError as exc:
            return str(exc)
        return None

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = _display_path(args)
        title = f"Edit {shown(env, raw)}" if raw else "Edit file"
        return ToolDisplay(title=title, kind="edit", locations=location(env, raw))

    async def _edit(self, args: dict[str, Any], env: ToolEnv) -> _Edit:
        path = resolve(env, required_str(args, "file_path"))
        if await files_of(env).is_dir(path):
            raise IsADirectoryError(f"Path is a directory, not a file: {shown(env, path)}")
        return _plan_edit(args, env, await _current_text(env, path), path)

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        try:
            edit = await self._edit(args, env)
        except CodedToolError:
            raise  # the edit cannot apply (no match, ambiguous, ...): nothing to approve
        except (RuntimeAgentError, OSError) as exc:
            logger.debug("no preview for replace: %s", exc)
            return ()
        return (DisplayDiff(path=str(edit.path), before_text=edit.before, after_text=edit.after),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            edit = await self._edit(args, env)
            await files_of(env).write_text(edit.path, edit.after)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        where = shown(env, edit.path)
        if edit.before is None:
            message = f"Created new file: {where}"
        else:
            plural = "s" if edit.replacements != 1 else ""
            message = (
                f"Successfully modified file: {where} ({edit.replacements} replacement{plural})."
            )
        diff = DisplayDiff(path=str(edit.path), before_text=edit.before, after_text=edit.after)
        return ToolResult(
            llm_content=message,
            display=(diff,),
            raw_output={
                "path": str(edit.path),
                "replacements": edit.replacements,
                "created": edit.before is None,
            },
        )
