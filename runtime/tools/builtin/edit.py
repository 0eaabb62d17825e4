"""`write_file` and `replace`: the two tools that change files.

Both show the user a diff before approval (`preview`) and return the diff that
was applied in their result's display. Writes go through `FileAccess`, so an
editor that offers `fs.writeTextFile` sees (and reviews) every write.

What an edit keeps (issue 18): the file's encoding and bytes outside the change
(`FileAccess.read_for_edit` / `write_edit`), its dominant line ending (new lines
too) and final-newline state (`io.text_format`), its mode; a read-only file, a
file without an exact decoding, or new text its encoding cannot hold is refused
at preview, before the user is asked.

At execution the file is read again under the path's writer lock: a `replace`
applies to the current text when old_string still matches as it did when the
diff was shown, a `write_file` only when the file is unchanged since then;
otherwise the call fails with "the file changed since the diff was shown".

The user may change the proposed file before allowing it (issue 36, `ToolEnv.reviewed`):
the edit then writes the user's version (`review.user_text`: the file's encoding, line
endings and the proposal's bytes kept), only onto the file as the diff showed it, and
its result tells the model what the user changed (`review.review_note`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError, ToolError
from runtime.protocol import DisplayContent, DisplayDiff, DisplayText, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, bool_arg, required_str, str_arg
from runtime.tools.builtin.env import files_of, location, resolve, shown
from runtime.tools.builtin.plan import is_plan_file, plan_fields
from runtime.tools.builtin.results import CodedToolError, error_from_exception, error_result
from runtime.tools.builtin.review import review_note, user_text
from runtime.tools.io.files import EditableText, writer_lock
from runtime.tools.io.text_format import (
    TextFormat,
    conform,
    dominant_ending,
    ends_with_break,
    keep_final_newline,
    with_ending,
)

logger = logging.getLogger(__name__)


def _shown_before(env: ToolEnv, path: Path) -> tuple[bool, str | None]:
    """Whether a diff of `path` was shown for this call (set at execution), and the
    text it was made of (None: the file did not exist)."""
    for diff in env.preview:
        if isinstance(diff, DisplayDiff) and diff.path == str(path):
            return True, diff.before_text
    return False, None


def _changed(env: ToolEnv, path: Path, detail: str) -> CodedToolError:
    return CodedToolError(
        f"Not applied to {shown(env, path)}: the file changed since the diff was shown; "
        f"read it again. {detail}",
        "file_changed",
    )


async def _writable_text(env: ToolEnv, path: Path) -> EditableText | None:
    """The file as an edit starts from it (None: missing); refuses a read-only file."""
    files = files_of(env)
    current = await files.read_for_edit(path)
    if current is not None:
        await files.check_writable(path)
    return current


def _failure(exc: BaseException) -> ToolResult:
    """An edit that did not happen: the reason for the model, and shown to the user."""
    result = error_from_exception(exc)
    return dataclasses.replace(result, display=(DisplayText(text=result.llm_content),))


def _display_path(args: dict[str, Any]) -> str:
    raw = args.get("file_path")
    return raw if isinstance(raw, str) else ""


# ---------------------------------------------------------------- write_file


class WriteFileTool(GcliTool):
    """`write_file`: create a file or replace its whole content."""

    name = "write_file"
    kind = "edit"
    user_editable = True
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

    async def _planned(
        self, env: ToolEnv, path: Path, content: str
    ) -> tuple[EditableText | None, str]:
        """The file now and the text the write leaves (line endings and final newline kept)."""
        current = await _writable_text(env, path)
        after = conform(content, current.text if current else None)
        files_of(env).encoded(path, after, current.format if current else None)
        return current, after

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        try:
            path = resolve(env, required_str(args, "file_path"))
            content = required_str(args, "content", allow_empty=True)
            current, after = await self._planned(env, path, content)
        except ToolError:
            raise  # refused (read-only, encoding, binary): nothing to approve
        except (RuntimeAgentError, OSError) as exc:
            logger.debug("no preview for write_file: %s", exc)
            return ()
        before = current.text if current else None
        return (DisplayDiff(path=str(path), before_text=before, after_text=after),)

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
                proposal = content
                after = content if env.reviewed is None else user_text(content, env.reviewed)
                await asyncio.to_thread(_write_local, path, after)
            else:
                async with writer_lock(path):
                    current, after = await self._planned(env, path, content)
                    before = current.text if current else None
                    was_shown, shown_text = _shown_before(env, path)
                    if was_shown and shown_text != before:
                        raise _changed(
                            env,
                            path,
                            "Nothing was written: it was edited after this write "
                            "was previewed, and writing now would lose that change.",
                        )
                    fmt = current.format if current else None
                    proposal, after = after, _users_version(env, path, after, fmt)
                    await files.write_edit(path, after, fmt)
        except (RuntimeAgentError, OSError) as exc:
            return _failure(exc)
        where = shown(env, path)
        if before is None:
            message = f"Successfully created and wrote to new file: {where}"
        else:
            message = f"Successfully overwrote file: {where}"
        message = _with_note(message, where, before, proposal, after)
        diff = DisplayDiff(path=str(path), before_text=before, after_text=after)
        return ToolResult(
            llm_content=message,
            display=(diff,),
            raw_output={"path": str(path), "created": before is None},
            **(plan_fields(path, after) if plan else {}),
        )


def _users_version(env: ToolEnv, path: Path, proposal: str, fmt: TextFormat | None) -> str:
    """What the edit writes: the proposal, or the user's version of it (checked to fit
    the file's encoding)."""
    if env.reviewed is None:
        return proposal
    written = user_text(proposal, env.reviewed)
    files_of(env).encoded(path, written, fmt)
    return written


def _with_note(message: str, where: str, before: str | None, proposal: str, written: str) -> str:
    note = review_note(where, before, proposal, written)
    return f"{message}\n\n{note}" if note else message


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
    matched: str = ""
    """old_string as it matched the file (its line breaks may be the file's)."""
    written: str | None = None
    """What execution wrote when it was not `after`: the user's version of it."""


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
    if count == 0 and dominant_ending(old) is not None:
        # The model writes LF; the file may use CRLF. Match in the file's style.
        in_file_style = with_ending(old, dominant_ending(current))
        if in_file_style != old:
            old, count = in_file_style, current.count(in_file_style)
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
    # New lines take the ending of the text they replace, else the file's dominant one.
    ending = dominant_ending(old) or dominant_ending(current)
    new = with_ending(new, ending)
    after = current.replace(old, new) if allow_multiple else current.replace(old, new, 1)
    after = keep_final_newline(after, ends_with_break(current), ending)
    return _Edit(path, current, after, count if allow_multiple else 1, old)


def _replan(
    args: dict[str, Any], env: ToolEnv, path: Path, shown_text: str | None, current: str | None
) -> _Edit:
    """The edit on the current text of a file that changed since its diff was shown:
    only when old_string matches it as it did then (same count, same form)."""
    then = _plan_edit(args, env, shown_text, path)
    try:
        now = _plan_edit(args, env, current, path)
    except CodedToolError as exc:
        raise _changed(env, path, f"Nothing was written: {exc}") from None
    if (now.before is None) != (then.before is None) or (now.replacements, now.matched) != (
        then.replacements,
        then.matched,
    ):
        raise _changed(env, path, "Nothing was written: old_string no longer matches as it did.")
    return now


class ReplaceTool(GcliTool):
    """`replace`: replace exact text in a file (once, or every occurrence)."""

    name = "replace"
    kind = "edit"
    user_editable = True
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

    async def _edit(self, args: dict[str, Any], env: ToolEnv, *, at_execution: bool) -> _Edit:
        path = resolve(env, required_str(args, "file_path"))
        files = files_of(env)
        if await files.is_dir(path):
            raise IsADirectoryError(f"Path is a directory, not a file: {shown(env, path)}")
        current = await _writable_text(env, path)
        text = current.text if current else None
        was_shown, shown_text = _shown_before(env, path) if at_execution else (False, None)
        if was_shown and shown_text != text:
            if env.reviewed is not None:  # the user's version is of the file as it was shown
                raise _changed(
                    env,
                    path,
                    "Nothing was written: it was edited after the user changed your proposal, "
                    "and writing their version now would lose that change.",
                )
            edit = _replan(args, env, path, shown_text, text)
        else:
            edit = _plan_edit(args, env, text, path)
        fmt = current.format if current else None
        files.encoded(path, edit.after, fmt)
        if at_execution:
            written = _users_version(env, path, edit.after, fmt)
            await files.write_edit(path, written, fmt)
            if written != edit.after:
                edit = dataclasses.replace(edit, written=written)
        return edit

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        try:
            edit = await self._edit(args, env, at_execution=False)
        except ToolError:
            raise  # the edit cannot apply (no match, ambiguous, read-only...): nothing to approve
        except (RuntimeAgentError, OSError) as exc:
            logger.debug("no preview for replace: %s", exc)
            return ()
        return (DisplayDiff(path=str(edit.path), before_text=edit.before, after_text=edit.after),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            path = resolve(env, required_str(args, "file_path"))
            async with writer_lock(path):
                edit = await self._edit(args, env, at_execution=True)
        except (RuntimeAgentError, OSError) as exc:
            return _failure(exc)
        where = shown(env, edit.path)
        if edit.before is None:
            message = f"Created new file: {where}"
        else:
            plural = "s" if edit.replacements != 1 else ""
            message = (
                f"Successfully modified file: {where} ({edit.replacements} replacement{plural})."
            )
        written = edit.after if edit.written is None else edit.written
        message = _with_note(message, where, edit.before, edit.after, written)
        diff = DisplayDiff(path=str(edit.path), before_text=edit.before, after_text=written)
        return ToolResult(
            llm_content=message,
            display=(diff,),
            raw_output={
                "path": str(edit.path),
                "replacements": edit.replacements,
                "created": edit.before is None,
            },
        )
