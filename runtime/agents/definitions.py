"""Subagent definitions (design Phase B: AgentDescriptor).

Markdown files with YAML front matter, in `~/.gemini/agents/*.md` and
`<workspace>/.gemini/agents/*.md` (the workspace's win on a name clash):
`name`, `description`, `display_name?`, `tools?` (tool names; default: the read-only
tools), `model?`, `max_turns?` (30), `timeout_mins?` (10), `inputs?` (name →
`{type, description, required}`; default: one required `task` string),
`workspace_directories?` (folders its run may reach besides the workspace),
`memory_inbox_access?`, `auto_memory_extraction_write_access?` (its run's scope:
`scope`; Gemini CLI's camelCase spellings are read too).
The body is
the subagent's system prompt. A file that cannot be read or parsed is logged and
skipped. One definition is built in: `codebase_investigator`, read-only.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

logger = logging.getLogger(__name__)

READ_ONLY = ("read_file", "read_many_files", "list_directory", "glob", "grep_search")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
_CAMEL = {
    "workspaceDirectories": "workspace_directories",
    "memoryInboxAccess": "memory_inbox_access",
    "autoMemoryExtractionWriteAccess": "auto_memory_extraction_write_access",
}


class AgentInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str = "string"
    description: str = ""
    required: bool = True


class AgentDefinition(BaseModel):
    """One subagent: who it is, what it may use, how long it may run."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    description: str
    display_name: str | None = None
    tools: tuple[str, ...] = READ_ONLY
    model: str | None = None
    max_turns: int = Field(default=30, ge=1, le=200)
    timeout_mins: float = Field(default=10, gt=0, le=120)
    inputs: dict[str, AgentInput] = Field(
        default_factory=lambda: {
            "task": AgentInput(description="What the subagent should do, in full.")
        }
    )
    prompt: str = ""
    source: str = "built-in"
    workspace_directories: tuple[str, ...] = ()
    memory_inbox_access: bool = False
    auto_memory_extraction_write_access: bool = False

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("a name of letters, digits, - and _ (a function name)")
        return value

    @property
    def title(self) -> str:
        return self.display_name or self.name


CODEBASE_INVESTIGATOR = AgentDefinition(
    name="codebase_investigator",
    display_name="Codebase investigator",
    description=(
        "Investigates the codebase to answer a question (where something is defined, how "
        "a feature works, what a change would touch), reading and searching only, and "
        "reports its findings. Give it the question in full."
    ),
    prompt=(
        "You are a codebase investigator. Answer the task by reading and searching the "
        "code: list directories, glob, grep, read files. You cannot change anything. Be "
        "thorough but quick; cite file paths and line numbers. When you know the answer, "
        "call `complete_task` with a concise, complete report."
    ),
)


def parse_definition(text: str, source: str) -> AgentDefinition:
    """A definition from a file's text; raises ValueError with the reason."""
    import yaml  # type: ignore[import-untyped]

    match = re.match(r"^---\s*\n(.*?)\n---\s*\n?(.*)$", text, re.DOTALL)
    if match is None:
        raise ValueError("no YAML front matter (--- ... ---)")
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"bad front matter: {exc}") from None
    if not isinstance(front, dict):
        raise ValueError("the front matter is not a mapping")
    fields: dict[str, Any] = {_CAMEL.get(str(k), str(k)): v for k, v in front.items()}
    if isinstance(fields.get("tools"), str):
        fields["tools"] = [t.strip() for t in fields["tools"].split(",") if t.strip()]
    fields["prompt"] = match.group(2).strip()
    fields["source"] = source
    try:
        return AgentDefinition.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(problems) from None


def load_definitions(workspace: Path, home: Path) -> list[AgentDefinition]:
    """The built-in investigator, then the user's, then the workspace's (by name)."""
    found: dict[str, AgentDefinition] = {CODEBASE_INVESTIGATOR.name: CODEBASE_INVESTIGATOR}
    for folder in (home / ".gemini" / "agents", workspace / ".gemini" / "agents"):
        try:
            files = sorted(folder.glob("*.md"))
        except OSError:
            continue
        for path in files:
            try:
                definition = parse_definition(path.read_text(encoding="utf-8"), str(path))
            except (OSError, ValueError) as exc:
                logger.warning("subagent definition %s skipped: %s", path, exc)
                continue
            found[definition.name] = definition
    return list(found.values())
