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
from typing import TYPE_CHECKING

from runtime.checkpoint_commands import offer_file_restore, restore
from runtime.durations import format_duration
from runtime.errors import RuntimeAgentError, ToolError
from runtime.services.record import UserMessage, is_typed_prompt, tool_calls
from runtime.tools.catalog import append_fact, memory_file
from runtime.tools.policy.modes import MODES, is_mode

if TYPE_CHECKING:
    from runtime.session import AgentSession

_COMMAND = re.compile(r"^/([A-Za-z][\w-]*(?::[\w.-]+)?)(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    hint: str | None = None


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "List the commands"),
    SlashCommand("rewind", "Remove the last exchanges from the conversation", "[n]"),
    SlashCommand("restore", "List the checkpoints, or restore the files to one", "[name]"),
    SlashCommand("clear", "Start the conversation over (the model forgets it)"),
    SlashCommand("compress", "Summarize older turns to free the context window"),
    SlashCommand("model", "Show the model, or switch to another", "[model id]"),
    SlashCommand("mode", "Show the approval mode, or switch to another", "[mode id]"),
    SlashCommand(
        "memory", "Context files: show, reload, or add a memory", "show|reload|add <text>"
    ),
    SlashCommand("stats", "Tokens per model, tool calls and time in this session"),
    SlashCommand("mcp", "MCP servers: their state, tools, prompts and resources"),
)


@dataclass
class CommandOutcome:
    """`text` answers the command; `prompt`, when set, is sent to the model as the
    user's message instead (an MCP prompt)."""

    text: str
    changed: set[str] = field(default_factory=set)
    prompt: str | None = None


def available(session: AgentSession) -> list[SlashCommand]:
    """The built-in commands, then the session's MCP prompts as `/<server>:<prompt>`."""
    out = list(COMMANDS)
    servers = session.mcp.servers if session.mcp is not None else None
    for connection in servers.ready_connections() if servers is not None else ():
        for prompt in connection.prompts:
            names = [a.name for a in prompt.arguments or ()]
            out.append(
                SlashCommand(
                    f"{connection.name}:{prompt.name}",
                    (prompt.description or f"The {prompt.name} prompt of {connection.name}")[:200],
                    " ".join(f"{n}=…" for n in names) or None,
                )
            )
    return out


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
    """Run `/name args`; the session is in use meanwhile (`Handover.in_use`: taken back
    first if another process had it, and not handed over while the command runs)."""
    async with session.handover.in_use():
        if ":" in name:
            return await _mcp_prompt(session, name, args)
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


def _prompt_text(message: UserMessage) -> str:
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
    prompts = [m for m in removed if is_typed_prompt(m)]
    if not prompts:
        return CommandOutcome("Nothing to rewind: the conversation is empty.")
    listed = "\n".join(f"- {_prompt_text(m)}" for m in prompts)
    edited = sorted(
        {
            str(location["path"])
            for m in removed
            for call in tool_calls(m)
            if call.get("kind") in ("edit", "delete", "move") and call.get("status") == "success"
            for location in call.get("locations") or ()
            if isinstance(location, dict) and location.get("path")
        }
    )
    files = f": {', '.join(f'`{p}`' for p in edited)}" if edited else ""
    restored = await offer_file_restore(session, removed)
    return CommandOutcome(
        f"Rewound {len(prompts)} exchange(s) ({len(removed)} message(s) removed); "
        f"the model no longer sees:\n{listed}\n\n"
        + (
            restored
            or f"File edits made in those exchanges were kept; /rewind does not undo them{files}."
        )
    )


async def _restore(session: AgentSession, args: str) -> CommandOutcome:
    return CommandOutcome(await restore(session, args))


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
            f"Model: `{session.model_choice}` (next call: `{session.model_state.default_model}`). "
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
        path = memory_file(session.config.home)
        try:
            append_fact(path, text)
        except (ToolError, OSError) as exc:
            return CommandOutcome(f"Nothing was remembered: {exc}")
        prompt.reload()
        return CommandOutcome(f"Remembered in {path}: {text}")
    return CommandOutcome("Usage: `/memory show`, `/memory reload` or `/memory add <text>`.")


async def _stats(session: AgentSession, args: str) -> CommandOutcome:
    recorder = session.recorder
    if recorder is None:
        return CommandOutcome("This session is not recorded.")
    per_model: dict[str, list[int]] = {}
    calls: dict[str, int] = {}
    prompts = 0
    for message in recorder.recording.messages:
        if is_typed_prompt(message):
            prompts += 1
        tokens = message.get("tokens")
        if message.get("type") == "gemini" and isinstance(tokens, dict):
            row = per_model.setdefault(str(message.get("model") or "unknown"), [0, 0, 0, 0])
            row[0] += 1
            row[1] += int(tokens.get("input") or 0)
            row[2] += int(tokens.get("output") or 0) + int(tokens.get("thoughts") or 0)
            row[3] += int(tokens.get("cached") or 0)
        for call in tool_calls(message):
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


async def _mcp(session: AgentSession, args: str) -> CommandOutcome:
    servers = session.mcp.servers if session.mcp is not None else None
    if servers is None or not servers.connections:
        return CommandOutcome(
            "No MCP servers: add them in the editor, or under `mcpServers` in "
            "`.gemini/settings.json`."
        )
    await servers.wait_ready()
    lines = []
    for c in servers.connections:
        state = "ready" if c.state == "ready" else f"{c.state} ({c.failure or 'no details'})"
        lines.append(f"**{c.name}** ({c.config.options.source}): {state}")
        offered = [t.name for t in c.tools if c.config.options.offers(t.name)]
        if offered:
            lines.append(f"- tools: {', '.join(offered)}")
        if c.prompts:
            lines.append(f"- prompts: {', '.join(f'/{c.name}:{p.name}' for p in c.prompts)}")
        for resource in c.resources:
            lines.append(f"- resource `@{resource.uri}`: {resource.name}")
    lines.append("Mention a resource as `@<uri>` in a prompt to give its content to the model.")
    return CommandOutcome("\n".join(lines))


def _prompt_arguments(names: list[str], args: str) -> dict[str, str]:
    """`key=value` pairs; other words fill the arguments in order (the last takes the rest)."""
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in args.split():
        key, sep, value = word.partition("=")
        if sep and key in names:
            values[key] = value
        else:
            loose.append(word)
    free = [n for n in names if n not in values]
    for i, name in enumerate(free):
        if i >= len(loose):
            break
        values[name] = " ".join(loose[i:]) if i == len(free) - 1 else loose[i]
    return values


async def _mcp_prompt(session: AgentSession, name: str, args: str) -> CommandOutcome:
    server, _, prompt_name = name.partition(":")
    servers = session.mcp.servers if session.mcp is not None else None
    connection = (
        next((c for c in servers.ready_connections() if c.name == server), None)
        if servers is not None
        else None
    )
    prompt = (
        next((p for p in connection.prompts if p.name == prompt_name), None) if connection else None
    )
    if connection is None or prompt is None:
        return CommandOutcome(help_text(f"Unknown command `/{name}`."))
    names = [a.name for a in prompt.arguments or ()]
    values = _prompt_arguments(names, args)
    missing = [a.name for a in prompt.arguments or () if a.required and a.name not in values]
    if missing:
        usage = " ".join(f"{n}=…" for n in names)
        return CommandOutcome(f"`/{name}` needs {', '.join(missing)}: `/{name} {usage}`.")
    try:
        result = await connection.get_prompt(prompt_name, values)
    except Exception as exc:  # noqa: BLE001 - any server failure is an answer, not a crash
        return CommandOutcome(f"`/{name}` failed: {exc}")
    texts = []
    for message in result.messages:
        text = getattr(message.content, "text", None)
        if isinstance(text, str):
            texts.append(text)
    if not texts:
        return CommandOutcome(f"`/{name}` gave no text to send.")
    return CommandOutcome("", prompt="\n\n".join(texts))


def _elapsed(metadata: dict[str, object]) -> str:
    start = metadata.get("startTime")
    if not isinstance(start, str):
        return "unknown"
    try:
        began = datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "unknown"
    return format_duration(max(0, int(time.time() - began)))


_HANDLERS: dict[str, Callable[[AgentSession, str], Awaitable[CommandOutcome]]] = {
    "help": _help,
    "rewind": _rewind,
    "restore": _restore,
    "clear": _clear,
    "compress": _compress,
    "model": _model,
    "mode": _mode,
    "memory": _memory,
    "stats": _stats,
    "mcp": _mcp,
}
