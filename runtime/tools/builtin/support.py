"""Small helpers shared by the tool modules: argument reading, error results, I/O layers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.errors import PathOutsideWorkspaceError, ToolError
from runtime.protocol import ToolLocation
from runtime.tools.base import ToolEnv, ToolResult
from runtime.tools.io.commands import CommandRunner
from runtime.tools.io.files import FileAccess
from runtime.tools.io.paths import absolute_for_display, display_path, resolve_in_roots


class ArgError(ToolError):
    """An argument has the wrong type or value."""


class CodedToolError(ToolError):
    """A tool failure with a machine-readable `error_type` (e.g. `edit_no_match`)."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


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


def parse_error(parse: Callable[[dict[str, Any]], object], args: dict[str, Any]) -> str | None:
    """A tool's `validate`: the message of the ArgError `parse(args)` raises, else None."""
    try:
        parse(args)
    except ArgError as exc:
        return str(exc)
    return None


def error_result(message: str, error_type: str) -> ToolResult:
    return ToolResult(llm_content=message, is_error=True, error_type=error_type)


def error_from_exception(exc: BaseException) -> ToolResult:
    """The expected failures of file tools as results for the model."""
    if isinstance(exc, PathOutsideWorkspaceError):
        return error_result(str(exc), "path_outside_workspace")
    if isinstance(exc, CodedToolError):
        return error_result(str(exc), exc.error_type)
    if isinstance(exc, ArgError):
        return error_result(str(exc), "invalid_arguments")
    if isinstance(exc, FileNotFoundError):
        return error_result(str(exc) or "File not found", "file_not_found")
    if isinstance(exc, IsADirectoryError):
        return error_result(str(exc) or "Path is a directory", "is_directory")
    if isinstance(exc, ToolError):
        return error_result(str(exc), str(getattr(exc, "error_type", "tool_error")))
    if isinstance(exc, PermissionError):
        return error_result(f"Permission denied: {exc.filename or exc}", "permission_denied")
    return error_result(f"{type(exc).__name__}: {exc}", "io_error")


# ------------------------------------------------------------ argument readers


def str_arg(
    args: dict[str, Any], name: str, *, required: bool = False, default: str | None = None
) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ArgError(f"The '{name}' parameter is required.")
        return default
    if not isinstance(value, str):
        raise ArgError(f"The '{name}' parameter must be a string.")
    return value


def required_str(args: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = str_arg(args, name, required=True)
    assert value is not None
    if not allow_empty and not value.strip():
        raise ArgError(f"The '{name}' parameter must not be empty.")
    return value


def bool_arg(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ArgError(f"The '{name}' parameter must be a boolean.")
    return value


def int_arg(
    args: dict[str, Any], name: str, *, default: int | None = None, minimum: int | None = None
) -> int | None:
    """An integer; JSON numbers such as 10.0 are accepted."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ArgError(f"The '{name}' parameter must be an integer.")
    number = int(value)
    if minimum is not None and number < minimum:
        raise ArgError(f"The '{name}' parameter must be at least {minimum}.")
    return number


def str_list_arg(args: dict[str, Any], name: str, *, required: bool = False) -> list[str]:
    value = args.get(name)
    if value is None:
        if required:
            raise ArgError(f"The '{name}' parameter is required.")
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgError(f"The '{name}' parameter must be a list of strings.")
    return list(value)


# ------------------------------------------------------------ paths


def resolve(env: ToolEnv, raw: str) -> Path:
    """`raw` resolved inside the session's roots (raises PathOutsideWorkspaceError)."""
    return resolve_in_roots(raw, env.roots)


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
