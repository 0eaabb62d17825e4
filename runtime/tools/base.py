"""The tool contract every tool of the catalog implements (Gemini CLI's tool definitions).

A tool describes itself (name, kind, JSON-schema parameters), shows what a call
will do (`display`, `preview` — the diff of an edit before it is approved), and
executes. Execution never raises for expected failures: it returns a
`ToolResult` with `is_error=True` whose `llm_content` explains what went wrong to
the model. Cancellation arrives as `asyncio.CancelledError` in `execute`.

Tools never touch the disk or spawn processes directly: they go through
`ToolEnv.files` and `ToolEnv.commands`, which route to the editor when it offers
`fs` / `terminal` and to the local machine otherwise.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.protocol import DisplayContent, ToolDisplay, ToolKind

if TYPE_CHECKING:
    from runtime.host import Host
    from runtime.tools.io.commands import CommandRunner, ProgressCallback
    from runtime.tools.io.files import FileAccess


MEDIA_KEY = "_media"
"""Where a function response carries its media until `ToolMediaProcessor` moves it."""


@dataclass
class ToolResult:
    """What a call produced.

    `llm_content` goes back to the model; `display` is shown in the editor's tool
    call; `raw_output` is the structured result for the editor; `plan` carries
    todo entries (write_todos) as dicts `{content, status, priority}`.
    """

    llm_content: str
    display: tuple[DisplayContent, ...] = ()
    is_error: bool = False
    raw_output: dict[str, Any] | None = None
    plan: list[dict[str, str]] | None = None
    plan_id: str | None = None
    """Which plan `plan` is (a plan file's id; None: the todo list)."""
    plan_markdown: str | None = None
    """The plan as Markdown (plan mode's plan file), beside its entries."""
    error_type: str | None = None
    switch_mode: str | None = None
    """A mode the session switches to once the call completes (`exit_plan_mode`)."""
    media: list[dict[str, str]] | None = None
    """Images or audio for the model (`{"mimeType", "data"}` base64), sent as inline data
    beside the function response (`ToolMediaProcessor`), not as text."""
    sandbox_denial: str | None = None
    """Why the sandbox probably stopped this call (a command): the scheduler may ask the
    user to run it again outside the sandbox."""


@dataclass
class ToolEnv:
    """Everything a tool may use for one call. Built per session; never global.

    `roots` are the session's workspace roots (cwd first, then additional
    directories); every path is resolved against them. `temp_dir` is the
    project's temp folder (full tool outputs are saved below it).
    """

    roots: tuple[Path, ...]
    host: Host
    session_id: str
    temp_dir: Path
    files: FileAccess | None = None
    """The session's file access (the editor's fs or local); None: one for `host` is
    made at first use (`builtin.env.files_of`)."""
    commands: CommandRunner | None = None
    """The session's command runner (the editor's terminal or local); None: as `files`."""
    on_progress: ProgressCallback | None = None
    """Where a running call reports its display (a terminal id, the output so far)."""
    preview: tuple[DisplayContent, ...] = ()
    """What `preview` showed the user for this call (set for `execute` only): an edit
    tool reads the file again and compares it with the text its approved diff was made
    of, so a change made while the user decided is kept or the edit fails."""
    reviewed: str | None = None
    """The user's version of the proposed file, when they changed it before allowing
    (set for `execute` only, for a tool with `user_editable`): written instead of the
    tool's own, and the model told what the user changed."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        return self.roots[0]


class GcliTool(abc.ABC):
    """One tool of the catalog, with Gemini CLI's name and parameters."""

    name: str
    kind: ToolKind
    description: str
    mcp_server: str | None = None
    """The MCP server the tool comes from (None: a built-in tool). Policy `mcpName`
    rules, "always allow this server", truncation and the approval request key on it."""
    read_only: bool = False
    """Marked read-only by its MCP server (`readOnlyHint`), or an MCP resource tool:
    the MCP tools plan mode offers and runs (built-in tools are judged by name)."""
    user_editable: bool = False
    """The user may change the file this tool proposes before allowing it (its preview
    is one diff; `ToolEnv.reviewed` then holds their version at execution)."""

    def mcp_context(self) -> dict[str, Any] | None:
        """Gemini CLI's `mcp_context` for the tool hooks (server, the server's name of
        the tool, how the server is reached); None for a tool not from a server."""
        return None

    def notification_details(self, args: dict[str, Any]) -> dict[str, Any]:
        """Fields a call of this tool adds to the Notification hook's `details` when it
        needs approval (`web_fetch`: its prompt and URLs). Default: none."""
        return {}

    @abc.abstractmethod
    def parameters_schema(self) -> dict[str, Any]:
        """JSON schema (type object) of the arguments."""

    def validate(self, args: dict[str, Any]) -> str | None:
        """A message when the arguments are unusable, else None."""
        return None

    @abc.abstractmethod
    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        """Title, kind and locations for the editor (no I/O)."""

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        """What the user should see before approving (an edit's diff). Default: nothing.

        Raises `ToolError` when the call cannot succeed as given (an edit whose old
        text is not in the file): the scheduler then fails the call with that
        message instead of asking the user to approve it."""
        return ()

    @abc.abstractmethod
    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult: ...
