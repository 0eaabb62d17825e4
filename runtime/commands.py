"""Slash commands (design: "Slash commands" live outside the protocol layer).

A prompt whose text is `/name [args]`, with a name of letters, digits, `-` or `_`,
is a command and never reaches the model (so `/usr/bin/env is broken` is a prompt,
not a command). Each command acts on the `AgentSession` and answers with text;
`changed` names what the editor must be told (mode, model). An unknown command
answers with the list of commands.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import RuntimeAgentError
from runtime.tools.policy.modes import MODES, is_mode

if TYPE_CHECKING:
    from runtime.session import AgentSession

_COMMAND = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.DOTALL)
MEMORY_SECTION = "## Gemini Added Memories"


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    hint: str | None = None


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "List the commands"),
    SlashCommand("rewind", "Remove the last exchanges from the conversation", "[n]"),
    SlashCommand("clear", "Start the conversation over (the model forgets it)"),
    SlashCommand("compress", "Summarize older turns to free the context window"),
    SlashCommand("model", "Show the model, or switch to another", "[model id]"),
    SlashCommand("mode", "Show the approval mode, or switch to another", "[mode id]"),
    SlashCommand(
        "memory", "Context files: show, reload, or add a memory", "show|reload|add <text>"
    ),
    SlashCommand("stats", "Tokens per model, tool calls and time in this session"),
)


@dataclass
class CommandOutcome:
    text: str
    changed: set[str] = field(default_factory=set)


def parse_command(text: str) -> tuple[str, str] | None:
    """(name, arguments) when `text` is a slash command, else None."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def help_text(prefix: str = "") -> str:
    lines = [prefix] if prefix else []
    lines.append("Commands:")
    for command in COMMANDS:
        hint = f" {command.hint}" if command.hint else ""
        lines.append(f"- `/{command.name}{hint}`: {command.description}")
    return "\n".join(lines)


async def run_command(session: AgentSession, name: str, args: str) -> CommandOutcome:
    handler = _HANDLERS.get(name)
    if handler is None:
        return CommandOutcome(help_text(f"Unknown command `/{name}`."))
    try:
        return await handler(session, args)
    except RuntimeAgentError as exc:
        return CommandOutcome(f"`/{name}` failed: {exc}")


# ---------------------------------------------------------------- the commands


async def _help(session: AgentSession, args: str) -> CommandOutcome:
    return CommandOutcome(help_text())


def _prompt_text(message: dict[str, object]) -> str:
    shown = message.get("displayContent")
    text = shown if isinstance(shown, str) else ""
    first = text.strip().splitlines()[0] if text.strip() else "(no text)"
    return first if len(first) <= 80 else first[:79] + "…"


async def _rewind(session: AgentSession, args: str) -> CommandOutcome:
    turns = 1
    if args:
        if not args.isdigit() or int(args) < 1:
            return CommandOutcome("Usage: `/rewind [n]` with n ≥ 1 (the exchanges to remove).")
        turns = int(args)
    removed = await session.rewind(turns)
    prompts = [m for m in removed if m.get("type") == "user" and not m.get("synthetic")]
    if not prompts:
        return CommandOutcome("Nothing to rewind: the conversation is empty.")
    listed = "\n".join(f"- {_prompt_text(m)}" for m in prompts)
    return CommandOutcome(
        f"Rewound {len(prompts)} exchange(s) ({len(removed)} message(s) removed); "
        f"the model no longer sees:\n{listed}"
    )


async def _clear(session: AgentSession, args: str) -> CommandOutcome:
    removed = await session.rewind(10**9)
    await session.session_end("clear")
    await session.session_start("clear")
    if not removed:
        return CommandOutcome("The conversation is already empty.")
    return CommandOutcome(f"Cleared the conversation ({len(removed)} message(s) removed).")


async def _compress(session: AgentSession, args: str) -> CommandOutcome:
    from runtime.services.compression import CompressionError
    from runtime.session import compression_notice

    try:
        result = await session.compress()
    except CompressionError as exc:
        return CommandOutcome(f"Could not compress the conversation ({exc}); it is unchanged.")
    return CommandOutcome(compression_notice(result))


async def _model(session: AgentSession, args: str) -> CommandOutcome:
    if not args:
        return CommandOutcome(
            f"Model: `{session.model_choice}` (next call: `{session.models.default_model}`). "
            "Switch with `/model <id>`, e.g. `auto`, `gemini-2.5-pro`, `gemini-2.5-flash`."
        )
    if not re.fullmatch(r"[\w.\-/]+", args):
        return CommandOutcome(f"`{args}` is not a model id.")
    session.choose_model(args)
    return CommandOutcome(f"Model set to `{args}`.", {"model"})


async def _mode(session: AgentSession, args: str) -> CommandOutcome:
    known = ", ".join(f"`{m.id}`" for m in MODES)
    if not args:
        return CommandOutcome(f"Mode: `{session.mode}`. Modes: {known}.")
    if not is_mode(args):
        return CommandOutcome(f"Unknown mode `{args}`. Modes: {known}.")
    session.set_mode(args)
    return CommandOutcome(f"Mode set to `{args}`.", {"mode"})


async def _memory(session: AgentSession, args: str) -> CommandOutcome:
    prompt = session.prompt
    if prompt is None:
        return CommandOutcome("This session has no context files.")
    verb, _, rest = args.partition(" ")
    verb = verb or "show"
    if verb == "show":
        files = prompt.files()
        if not files:
            return CommandOutcome("No context files (GEMINI.md, AGENTS.md) are in use.")
        blocks = []
        for path in files:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                text = f"(cannot read: {exc})"
            blocks.append(f"**{path}**\n\n{text.strip()}")
        return CommandOutcome("\n\n".join(blocks))
    if verb == "reload":
        files = prompt.reload()
        names = "\n".join(f"- {p}" for p in files) or "(none)"
        return CommandOutcome(f"Reloaded the context files:\n{names}")
    if verb == "add":
        text = rest.strip()
        if not text:
            return CommandOutcome("Usage: `/memory add <text>`.")
        path = session.config.home / ".gemini" / "GEMINI.md"
        _add_memory(path, text)
        prompt.reload()
        return CommandOutcome(f"Remembered in {path}: {text}")
    return CommandOutcome("Usage: `/memory show`, `/memory reload` or `/memory add <text>`.")


def _add_memory(path: Path, text: str) -> None:
    """Gemini CLI's save_memory layout: a bullet under `## Gemini Added Memories`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    entry = f"- {' '.join(text.split())}\n"
    if MEMORY_SECTION in current:
        head, _, tail = current.partition(MEMORY_SECTION)
        body = tail.lstrip("\n")
        current = f"{head}{MEMORY_SECTION}\n{entry}{body}"
    else:
        sep = (
            ""
            if not current or current.endswith("\n\n")
            else ("\n" if current.endswith("\n") else "\n\n")
        )
        current = f"{current}{sep}{MEMORY_SECTION}\n{entry}"
    path.write_text(current, encoding="utf-8")


async def _stats(session: AgentSession, args: str) -> CommandOutcome:
    recorder = session.recorder
    if recorder is None:
        return CommandOutcome("This session is not recorded.")
    per_model: dict[str, list[int]] = {}
    calls: dict[str, int] = {}
    prompts = 0
    for message in recorder.recording.messages:
        if message.get("type") == "user" and not message.get("synthetic"):
            prompts += 1
        tokens = message.get("tokens")
        if message.get("type") == "gemini" and isinstance(tokens, dict):
            row = per_model.setdefault(str(message.get("model") or "unknown"), [0, 0, 0, 0])
            row[0] += 1
            row[1] += int(tokens.get("input") or 0)
            row[2] += int(tokens.get("output") or 0) + int(tokens.get("thoughts") or 0)
            row[3] += int(tokens.get("cached") or 0)
        for call in message.get("toolCalls") or ():
            status = str(call.get("status"))
            calls[status] = calls.get(status, 0) + 1
    lines = [f"Prompts: {prompts}", f"Session time: {_elapsed(recorder.recording.metadata)}"]
    if per_model:
        lines.append("| model | requests | input tokens | output tokens | cached |")
        lines.append("|---|---:|---:|---:|---:|")
        for model, (n, inp, out, cached) in sorted(per_model.items()):
            lines.append(f"| {model} | {n} | {inp:,} | {out:,} | {cached:,} |")
    total = sum(calls.values())
    detail = ", ".join(f"{n} {status}" for status, n in sorted(calls.items()))
    lines.append(f"Tool calls: {total}" + (f" ({detail})" if detail else ""))
    return CommandOutcome("\n".join(lines))


def _elapsed(metadata: dict[str, object]) -> str:
    start = metadata.get("startTime")
    if not isinstance(start, str):
        return "unknown"
    try:
        began = datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "unknown"
    seconds = max(0, int(time.time() - began))
    return f"{seconds // 3600}h {seconds % 3600 // 60}m {seconds % 60}s"


_HANDLERS: dict[str, Callable[[AgentSession, str], Awaitable[CommandOutcome]]] = {
    "help": _help,
    "rewind": _rewind,
    "clear": _clear,
    "compress": _compress,
    "model": _model,
    "mode": _mode,
    "memory": _memory,
    "stats": _stats,
}
