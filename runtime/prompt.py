"""The system prompt: a coding agent's instructions plus the workspace's context files.

Context files (`GEMINI.md`, `AGENTS.md`) are gathered from the workspace up to the
filesystem root (nearest last, so it weighs most) and from `~/.gemini/GEMINI.md`.
The prompt is built once per session and cached; it names the workspace, today's
date and the OS. A client may append to it or override the agent's own instructions
(`ClientPrompt`, ACP's `systemPrompt`).
"""

from __future__ import annotations

import logging
import platform
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

CONTEXT_FILE_NAMES = ("GEMINI.md", "AGENTS.md")
MAX_CONTEXT_BYTES = 200_000

PLAN_MODE_INSTRUCTIONS = """\
# Plan mode
You are in Plan mode: explore and plan, do not change anything. You may read and search
the code; you may not edit files or run commands. Write your plan as a Markdown file in
{plans_dir} (the only place you may write), with the steps as a checklist
(`- [ ] step`). When the plan is ready, call `exit_plan_mode` with the plan file's path:
the user reviews it and chooses whether to start.
"""

_CORE = """\
You are an interactive coding agent working inside the user's code editor. You help with \
software engineering tasks: understanding code, fixing bugs, adding features, refactoring, \
writing tests and explaining.

# How you work
- Understand first. Use `grep_search`, `glob`, `list_directory` and `read_file` \
(or `read_many_files`) to learn the code, its conventions and its tests before changing it.
- Follow the project's existing style, libraries and structure. Never assume a library is \
available: check the imports and the dependency files.
- Make changes with `replace` (exact `old_string` with enough surrounding context to be \
unique) or `write_file` for new files. Every edit is shown to the user as a diff and may need \
their approval; if they reject it, respect that and ask or propose another way.
- Verify: run the project's tests, linters or build with `run_shell_command` when that is \
useful. Explain what a command does before running anything that changes the system.
- For multi-step work, keep a plan with `write_todos` and update it as you go.
- Paths are relative to the workspace root unless absolute; never touch files outside \
the workspace.
- Be concise. Answer in Markdown. Do not repeat file contents back unless asked. When \
done, say briefly what changed and anything left to do.
- Never reveal secrets (API keys, tokens, .env contents) in your answers.
"""


def find_context_files(workspace: Path, home: Path) -> list[Path]:
    """Context files from the home folder, then from the filesystem root down to the workspace."""
    found: list[Path] = []
    global_file = home / ".gemini" / "GEMINI.md"
    if global_file.is_file():
        found.append(global_file)
    chain = [workspace, *workspace.parents]
    for folder in reversed(chain):
        for name in CONTEXT_FILE_NAMES:
            candidate = folder / name
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
    return found


@dataclass(frozen=True)
class ClientPrompt:
    """A client-supplied system prompt (ACP `systemPrompt`): `append` adds `text` after
    the agent's own instructions and context; `override` puts it in place of the agent's
    own instructions (the environment and context files stay)."""

    mode: Literal["append", "override"]
    text: str

    def as_record(self) -> dict[str, str]:
        return {"mode": self.mode, "text": self.text}

    @classmethod
    def from_record(cls, raw: object) -> ClientPrompt | None:
        """The recorded form back (None when absent or not of this shape)."""
        if not isinstance(raw, dict) or raw.get("mode") not in ("append", "override"):
            return None
        text = raw.get("text")
        return cls(mode=raw["mode"], text=text) if isinstance(text, str) and text else None


def build_system_prompt(
    workspace: Path,
    home: Path,
    *,
    extra_roots: tuple[Path, ...] = (),
    today: date | None = None,
    client: ClientPrompt | None = None,
) -> str:
    today = today or date.today()
    roots = "\n".join(f"- {root}" for root in (workspace, *extra_roots))
    parts = [
        client.text if client is not None and client.mode == "override" else _CORE,
        "# Environment\n"
        f"- Workspace root(s):\n{roots}\n"
        f"- Today's date: {today.isoformat()}\n"
        f"- Operating system: {platform.system()} {platform.release()}\n",
    ]
    budget = MAX_CONTEXT_BYTES
    for path in find_context_files(workspace, home):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            logger.warning("cannot read context file %s: %s", path, exc)
            continue
        text = text[:budget]
        budget -= len(text)
        parts.append(f"# Context from {path}\n{text.strip()}\n")
        if budget <= 0:
            break
    if client is not None and client.mode == "append":
        parts.append(f"# Instructions from the editor\n{client.text.strip()}\n")
    return "\n".join(parts)


class SystemPrompt:
    """The session's system prompt, rebuilt on `/memory reload` (context files re-read)."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        extra_roots: tuple[Path, ...] = (),
        *,
        plans_dir: Path | None = None,
        client: ClientPrompt | None = None,
    ) -> None:
        self.workspace, self.home, self.extra_roots = workspace, home, extra_roots
        self.plans_dir = plans_dir
        self.client = client
        self.text = build_system_prompt(workspace, home, extra_roots=extra_roots, client=client)

    def for_mode(self, mode: str) -> str:
        """The InstructionProvider: plan mode adds its rules and where the plan goes."""
        if mode != "plan" or self.plans_dir is None:
            return self.text
        return f"{self.text}\n{PLAN_MODE_INSTRUCTIONS.format(plans_dir=self.plans_dir)}"

    def reload(self) -> list[Path]:
        """Re-read the context files; returns the files now in use."""
        self.text = build_system_prompt(
            self.workspace, self.home, extra_roots=self.extra_roots, client=self.client
        )
        return self.files()

    def files(self) -> list[Path]:
        return find_context_files(self.workspace, self.home)
