"""`save_memory`: a fact the model saves to the user's global memory (Gemini CLI's memoryTool).

The fact becomes one `- ` bullet line under `## Gemini Added Memories` in
`~/.gemini/GEMINI.md` (the section is added at the end when missing); every other
byte of the file is kept. The fact is made one line first, as Gemini CLI does:
line breaks become spaces, leading dashes go, and `<`/`>` become spaces so a fact
cannot close the tags context is wrapped in.

Why this tool writes outside the workspace: `~/.gemini/GEMINI.md` is the one file it
ever writes, fixed by the tool (the model gives only the fact, never a path), and it
is the user's own memory file that every session reads as context. The write is
approved like an edit: the diff of GEMINI.md is shown and, by the default policy,
asked in every mode but yolo (Gemini CLI's `write.toml`). The file is read and
written on this machine (it belongs to the user's home, not to the editor's
workspace), under the path's writer lock; a new file is created private (0600 in a
0700 folder). After the write the session's context files are re-read
(`memory_saved` in the call's `ToolEnv.extra`), so the next model request carries
the fact and `/memory show` lists it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.errors import ToolError
from runtime.protocol import DisplayContent, DisplayDiff, DisplayText, ToolDisplay, ToolLocation
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import parse_error, required_str
from runtime.tools.builtin.results import CodedToolError, error_from_exception
from runtime.tools.io.disk_writes import check_writable, write_bytes_keeping, writer_lock

MEMORY_SECTION = "## Gemini Added Memories"
USER_HOME_KEY = "user_home"
"""`ToolEnv.extra` key: the user's home folder (the session's config; default `Path.home()`)."""
MEMORY_SAVED_KEY = "memory_saved"
"""`ToolEnv.extra` key: a callable run after a save (the session re-reads its context files)."""

_HEADER = re.compile(r"^" + re.escape(MEMORY_SECTION) + r"[ \t]*(?=\r?$)", re.MULTILINE)
_NEXT_SECTION = re.compile(r"^#{1,2} ", re.MULTILINE)


def memory_file(home: Path) -> Path:
    """The user's global memory file."""
    return home / ".gemini" / "GEMINI.md"


def one_line_fact(fact: str) -> str:
    """The fact as Gemini CLI stores it: one line, no leading dashes, no angle brackets."""
    text = re.sub(r"[\r\n]", " ", fact).strip()
    text = re.sub(r"^(-+\s*)+", "", text).strip()
    return re.sub(r"[<>]", " ", text)


def with_memory(current: str, fact: str) -> str:
    """`current` (a GEMINI.md's text, "" when missing) with `fact` added as a bullet at the
    end of the memories section, or in a new section at the end. Other text is kept."""
    newline = "\r\n" if "\r\n" in current else "\n"
    item = f"- {one_line_fact(fact)}"
    header = _HEADER.search(current)
    if header is None:
        if not current or current.endswith(newline * 2):
            separator = ""
        elif current.endswith(newline):
            separator = newline
        else:
            separator = newline * 2
        return f"{current}{separator}{MEMORY_SECTION}{newline}{item}{newline}"
    start = header.end()
    following = _NEXT_SECTION.search(current, header.end())
    end = following.start() if following else len(current)
    insert_at = start + len(current[start:end].rstrip())
    tail = current[insert_at:] or newline
    return f"{current[:insert_at]}{newline}{item}{tail}"


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CodedToolError(
            f"{path} is not UTF-8 text, so no memory was added to it.", "encoding"
        ) from None


def _write(path: Path, text: str, *, new: bool) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if new:  # private from the start: the user's memory is nobody else's
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    write_bytes_keeping(path, text.encode("utf-8"))


def append_fact(path: Path, fact: str) -> tuple[str | None, str]:
    """Add `fact` to the memory file at `path` (created when missing): its text before
    (None: new) and after. Callers in the event loop hold `writer_lock(path)`."""
    current = _read(path)
    check_writable(path)
    after = with_memory(current or "", fact)
    _write(path, after, new=current is None)
    return current, after


def _tilde(path: Path, home: Path) -> str:
    try:
        return f"~/{path.relative_to(home).as_posix()}"
    except ValueError:
        return str(path)


def _home(env: ToolEnv) -> Path:
    home = env.extra.get(USER_HOME_KEY)
    return home if isinstance(home, Path) else Path.home()


class SaveMemoryTool(GcliTool):
    """`save_memory`: append a fact to `~/.gemini/GEMINI.md` (see the module docstring)."""

    name = "save_memory"
    kind = "edit"
    description = (
        "Saves a specific piece of information or fact to your long-term memory, the user's "
        "global GEMINI.md, which every later session reads. Use it when the user explicitly "
        "asks you to remember something, or states a clear, concise fact about themselves or "
        "their preferences worth keeping across sessions. Not for conversation history or "
        "large amounts of data. The user may review the change before it is written."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "fact": {
                    "type": "string",
                    "description": (
                        "The fact or piece of information to remember: one clear, "
                        "self-contained statement."
                    ),
                }
            },
            "required": ["fact"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        problem = parse_error(lambda a: required_str(a, "fact"), args)
        if problem is None and not one_line_fact(str(args["fact"])):
            return "The 'fact' parameter must contain text."
        return problem

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        path = memory_file(_home(env))
        return ToolDisplay(
            title=f"Save memory in {_tilde(path, _home(env))}",
            kind="edit",
            locations=(ToolLocation(path=str(path)),),
        )

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        path = memory_file(_home(env))
        current = await asyncio.to_thread(_read, path)
        await asyncio.to_thread(check_writable, path)
        after = with_memory(current or "", required_str(args, "fact"))
        return (DisplayDiff(path=str(path), before_text=current, after_text=after),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        home = _home(env)
        path = memory_file(home)
        try:
            fact = required_str(args, "fact")
            async with writer_lock(path):  # appended to the file as it is now
                current, after = await asyncio.to_thread(append_fact, path, fact)
        except (ToolError, OSError) as exc:
            failed = error_from_exception(exc)
            detail = f"Failed to save memory in {_tilde(path, home)}: {failed.llm_content}"
            return ToolResult(
                llm_content=json.dumps({"success": False, "error": detail}),
                display=(DisplayText(text=detail),),
                is_error=True,
                error_type="memory_tool_execution_error",
            )
        saved: Callable[[], object] | None = env.extra.get(MEMORY_SAVED_KEY)
        if saved is not None:
            saved()
        message = f'Okay, I\'ve remembered that: "{one_line_fact(fact)}"'
        return ToolResult(
            llm_content=json.dumps({"success": True, "message": message}),
            display=(
                DisplayDiff(path=str(path), before_text=current, after_text=after),
                DisplayText(text=message),
            ),
            raw_output={"path": str(path), "created": current is None},
        )
