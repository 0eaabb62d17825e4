"""What a session is made of (design: session factory, its input).

`SessionSpec` names everything the factory needs; nothing here builds anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runtime.config import AuthConfig, RuntimeConfig
from runtime.host import Host
from runtime.models.content_generator import ContentGenerator
from runtime.prompt import ClientPrompt
from runtime.services.recording import ChatRecordingService, Message
from runtime.tools.mcp.config import McpServerConfig

if TYPE_CHECKING:
    from runtime.services.session_store import RecordStore

APP_NAME = "adk_acp"
USER_ID = "user"

SessionKind = Literal["main", "subagent"]


@dataclass
class SessionSpec:
    """What a new session is made of. `generator` overrides the credentials (tests)."""

    config: RuntimeConfig
    auth: AuthConfig | None
    host: Host
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    additional_roots: tuple[Path, ...] = ()
    generator: ContentGenerator | None = None
    kind: SessionKind = "main"
    mcp_servers: tuple[McpServerConfig, ...] = ()
    start_source: Literal["startup", "resume", "clear"] = "startup"
    """Why the session starts (SessionStart's `source`): `startup` for a new session,
    `resume` for one opened from its record (load, resume, fork), as Gemini CLI's
    `--resume`; `clear` is fired by `/clear`."""
    recording: ChatRecordingService | None = None
    """Where the session is recorded (None: not recorded, as in the engine's own tests)."""
    records: RecordStore | None = None
    """The store `recording` lives in, where subagents' records go too (None: the
    files next to `recording`)."""
    history: tuple[Message, ...] = ()
    """The recorded messages a loaded or resumed session starts from."""
    system_prompt: str | None = None
    """A subagent's own system prompt (else the agent's, with the context files)."""
    client_prompt: ClientPrompt | None = None
    """The client's system prompt (append or override), kept in the record."""
    tool_names: tuple[str, ...] | None = None
    """A subagent's built-in tools (None: all of them)."""
    extra_tools: tuple[Any, ...] = ()
    """Tools of this session only (a subagent's `complete_task`)."""
    write_scope: Any = None
    """A subagent's write limits (`runtime.agents.scope.WriteScope`; None: none)."""


@dataclass(frozen=True)
class AuthChoice:
    """What the client chose at `authenticate`: a key of its own, a preferred kind."""

    api_key: str | None = None
    prefer: Literal["api_key", "vertex"] | None = None


@dataclass(frozen=True)
class OpenRequest:
    """A client's request to open a session (new, load, resume, fork): its workspace and
    roots as given (checked by the service), its MCP servers, its auth choice, and the
    editor's `Host` for a session id."""

    cwd: str
    host_for: Callable[[str], Host]
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    auth: AuthChoice = AuthChoice()
    client_prompt: ClientPrompt | None = None
    """The client's system prompt; None keeps the one recorded with the session."""
