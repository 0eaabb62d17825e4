"""What a built-in tool takes from its ToolEnv: file and command access, paths
resolved in the roots, short forms for titles."""

from __future__ import annotations

from pathlib import Path

from runtime.protocol import ToolLocation
from runtime.tools.base import ToolEnv
from runtime.tools.io.commands import CommandRunner
from runtime.tools.io.files import FileAccess
from runtime.tools.io.paths import absolute_for_display, display_path, resolve_in_roots


def files_of(env: ToolEnv) -> FileAccess:
    """The session's FileAccess (`env.files`); one for `env.host` is set there when unset."""
    files: FileAccess | None = env.files
    if files is None:
        files = FileAccess(env.host)
        env.files = files
    return files


def commands_of(env: ToolEnv) -> CommandRunner:
    """The session's CommandRunner (`env.commands`); one for `env.host` when unset."""
    commands: CommandRunner | None = env.commands
    if commands is None:
        commands = CommandRunner(env.host)
        env.commands = commands
    return commands


def resolve(env: ToolEnv, raw: str) -> Path:
    """`raw` resolved inside the session's roots, or the session's plans folder (plan
    mode's plan files); raises PathOutsideWorkspaceError."""
    return resolve_in_roots(raw, (*env.roots, env.temp_dir / "plans"))


def shown(env: ToolEnv, path: str | Path) -> str:
    """A path as shown in titles and told to the model."""
    return display_path(path, env.roots)


def location(env: ToolEnv, raw: str | None, line: int | None = None) -> tuple[ToolLocation, ...]:
    if not raw:
        return ()
    return (ToolLocation(path=absolute_for_display(raw, env.roots), line=line),)


def short_title_arg(text: str, limit: int = 80) -> str:
    """One line of at most `limit` characters for a title."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if len(first) > limit or "\n" in text.strip():
        return first[: limit - 1].rstrip() + "…"
    return first
