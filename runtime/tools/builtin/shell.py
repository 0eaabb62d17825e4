"""`run_shell_command`: run `bash -c <command>` in the editor's terminal or locally."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import RuntimeAgentError
from runtime.protocol import DisplayContent, DisplayTerminal, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import bool_arg, parse_error, required_str, str_arg
from runtime.tools.builtin.env import commands_of, location, resolve, short_title_arg, shown
from runtime.tools.builtin.results import error_from_exception, error_result
from runtime.tools.io.commands import DEFAULT_OUTPUT_LIMIT, DISPLAY_TAIL_BYTES, CommandResult
from runtime.tools.io.process_group import group_alive

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 600.0
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass(frozen=True)
class _ShellArgs:
    command: str
    description: str | None
    dir_path: str | None
    is_background: bool


def _parse(args: dict[str, Any]) -> _ShellArgs:
    return _ShellArgs(
        command=required_str(args, "command"),
        description=str_arg(args, "description"),
        dir_path=str_arg(args, "dir_path") or None,
        is_background=bool_arg(args, "is_background", False),
    )


def format_for_model(command: str, directory: str, result: CommandResult, error: str | None) -> str:
    """Gemini CLI's layout: Command, Directory, Output, then the lines that apply."""
    output = strip_ansi(result.output).rstrip()
    if result.truncated and output:
        output = "[Earlier output was dropped; this is the end of it.]\n" + output
    lines = [f"Command: {command}", f"Directory: {directory}", f"Output: {output or '(empty)'}"]
    if error:
        lines.append(f"Error: {error}")
    if result.exit_code not in (None, 0):
        lines.append(f"Exit Code: {result.exit_code}")
    if result.signal:
        lines.append(f"Signal: {result.signal}")
    if result.background_pids:
        lines.append("Background PIDs: " + ", ".join(str(p) for p in result.background_pids))
    if result.pid is not None:
        lines.append(f"Process Group PGID: {result.pid}")
    return "\n".join(lines)


class RunShellCommandTool(GcliTool):
    """`run_shell_command`: one shell command, its output and exit status."""

    name = "run_shell_command"
    kind = "execute"
    description = (
        "Runs a command with `bash -c <command>` and returns its combined stdout and stderr, "
        "with the exit code when it is not 0 and the signal when one ended it. Runs in the "
        "workspace root unless dir_path names another directory inside the workspace. For "
        "servers and watchers, set is_background to true: the command is started, checked "
        "briefly, and its process id returned while it keeps running. Prefer quiet flags and "
        "disable pagers (e.g. `git --no-pager`)."
    )

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        background_check_s: float = 0.5,
    ) -> None:
        self._timeout_s = timeout_s
        self._output_limit = output_limit
        self._background_check_s = background_check_s

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The exact bash command to run."},
                "description": {
                    "type": "string",
                    "description": "A short description of what the command does, for the user.",
                },
                "dir_path": {
                    "type": "string",
                    "description": (
                        "Optional: existing directory inside the workspace to run in; the root "
                        "when omitted."
                    ),
                },
                "is_background": {
                    "type": "boolean",
                    "description": (
                        "Optional: start a long-running command (server, watcher) without "
                        "waiting for it."
                    ),
                },
            },
            "required": ["command"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        command = args.get("command") if isinstance(args.get("command"), str) else ""
        dir_path = args.get("dir_path") if isinstance(args.get("dir_path"), str) else None
        title = f"Run `{short_title_arg(str(command), 120)}`"
        if dir_path and dir_path != ".":
            title += f" in {shown(env, dir_path)}"
        if args.get("is_background") is True:
            title += " (background)"
        return ToolDisplay(title=title, kind="execute", locations=location(env, dir_path))

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse(args)
            cwd = resolve(env, parsed.dir_path or ".")
            if not cwd.is_dir():
                return error_result(f"Directory not found: {shown(env, cwd)}", "file_not_found")
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        directory = shown(env, cwd)
        if parsed.is_background:
            return await self._background(parsed, env, cwd, directory)
        runner = commands_of(env)
        try:
            result = await runner.run(
                parsed.command, cwd, self._timeout_s, self._output_limit, env.on_progress
            )
        except (OSError, RuntimeAgentError) as exc:
            failed = CommandResult(output="", exit_code=None)
            text = format_for_model(
                parsed.command, directory, failed, f"could not start the command: {exc}"
            )
            return ToolResult(llm_content=text, is_error=True, error_type="execution_failed")
        error = (
            f"Command timed out after {self._timeout_s:g} s and was stopped."
            if result.timed_out
            else None
        )
        if result.sandbox_denial is not None and error is None:
            error = (
                f"The command ran in a sandbox, which probably stopped it: {result.sandbox_denial}."
            )
        display: tuple[DisplayContent, ...] = (
            DisplayTerminal(terminal_id=result.terminal_id, exit_code=result.exit_code)
            if result.terminal_id
            else DisplayTerminal(
                pid=result.pid, exit_code=result.exit_code, ansi=result.output[-DISPLAY_TAIL_BYTES:]
            ),
        )
        raw = {
            "exit_code": result.exit_code,
            "signal": result.signal,
            "timed_out": result.timed_out,
            "truncated": result.truncated,
            "terminal_id": result.terminal_id,
            "pid": result.pid,
        }
        if result.sandboxed:
            raw["sandboxed"] = True
        return ToolResult(
            llm_content=format_for_model(parsed.command, directory, result, error),
            display=display,
            is_error=result.timed_out,
            raw_output=raw,
            error_type="timeout" if result.timed_out else None,
            sandbox_denial=result.sandbox_denial,
        )

    async def _background(
        self, parsed: _ShellArgs, env: ToolEnv, cwd: Path, directory: str
    ) -> ToolResult:
        runner = commands_of(env)
        if runner.uses_editor_terminal:
            return error_result(
                "Background commands are not supported while commands run in the editor's "
                "terminal: the terminal ends with the tool call. Run the command in the "
                "foreground (is_background false) instead.",
                "unsupported",
            )
        log_path = env.temp_dir / "background" / f"{env.session_id}-{uuid.uuid4().hex[:8]}.log"
        try:
            started = await runner.start_background(parsed.command, cwd, log_path)
        except OSError as exc:
            return error_result(
                f"Could not start the background command: {exc}", "execution_failed"
            )
        await asyncio.sleep(self._background_check_s)
        running = group_alive(started.pid)
        early = _read_log(log_path)
        lines = [f"Command: {parsed.command}", f"Directory: {directory}"]
        if running:
            lines.append(f"Output: {early or '(none yet)'}")
            lines.append(f"Background PIDs: {started.pid}")
            lines.append(f"Process Group PGID: {started.pid}")
            lines.append(
                f"The command keeps running in the background; its output goes to {log_path}."
            )
        else:
            lines.append(f"Output: {early or '(empty)'}")
            lines.append(
                "The command has already finished (its exit code is unknown in the background)."
            )
        return ToolResult(
            llm_content="\n".join(lines),
            display=(DisplayTerminal(pid=started.pid, ansi=early or None),),
            raw_output={"pid": started.pid, "log_path": str(log_path), "running": running},
        )


def _read_log(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        logger.debug("cannot read background log %s: %s", path, exc)
        return ""
    return strip_ansi(data[-limit:].decode("utf-8", errors="replace")).rstrip()
