"""SessionService: the session lifecycle over the store (design: session lifecycle;
not ADK's session service, which is `runtime.adk.session_service.GcliSessionService`).

It opens new sessions, reopens recorded ones (load, resume), forks, lists and
deletes them, and owns what lies beside a record: the store (`SessionStore`,
resolved once: flag, user setting, XDG state dir), Gemini CLI's chats (listed,
and imported into the store the first time one is opened) and each session's
tool-outputs folder. Every session is recorded from its first prompt; a reopened
or forked one gets its recorded conversation back as the model's history, with
its recorded mode and model choice. It speaks no protocol: its errors are the
runtime's (`SessionNotFoundError`, `WrongWorkspaceError`, `WorkspaceError`, and
`AuthRequiredError` from the credentials).
"""

from __future__ import annotations

import base64
import logging
import shutil
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runtime.config import AgentFlags, RuntimeConfig, resolve_auth, resolve_config
from runtime.errors import ConfigError, RuntimeAgentError
from runtime.prompt import ClientPrompt
from runtime.services.gemini_cli_chats import PREFIX as GEMINI_CLI_PREFIX
from runtime.services.gemini_cli_chats import GeminiCliChats
from runtime.services.recording import (
    ChatRecordingService,
    ConversationRecord,
    Message,
    SessionStore,
    SessionSummary,
    load_record,
)
from runtime.session.agent_session import AgentSession, SessionFactory
from runtime.session.factory import create_session
from runtime.session.paths import outputs_dir
from runtime.session.spec import OpenRequest, SessionSpec
from runtime.tools.policy.modes import is_mode
from runtime.workspace import workspace_dir

logger = logging.getLogger(__name__)

PAGE_SIZE = 50
CLIENT_PROMPT_KEY = "clientSystemPrompt"
"""The record's metadata key of the client's system prompt (`ClientPrompt.as_record`)."""
FORK_KEPT = ("mode", "modelChoice", "plan", "plans", CLIENT_PROMPT_KEY)
"""The recorded metadata a fork carries over (with the title, marked as a fork)."""


class SessionNotFoundError(RuntimeAgentError):
    """No live or recorded session (nor Gemini CLI chat) has this id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session not found: {session_id}")
        self.session_id = session_id


class WrongWorkspaceError(ConfigError):
    """The session was recorded (or is open) in another workspace than the one given."""

    def __init__(self, session_id: str, workspace: str, given: str) -> None:
        super().__init__(f"session {session_id} belongs to {workspace}, not to {given}")
        self.session_id = session_id
        self.workspace = workspace


class InvalidCursorError(ConfigError):
    """A `list` cursor this service did not give out."""

    def __init__(self) -> None:
        super().__init__("cursor is not one this agent gave out")


@dataclass(frozen=True)
class SessionPage:
    """One page of `list`: newest first; `next_cursor` None on the last page."""

    sessions: tuple[SessionSummary, ...]
    next_cursor: str | None


class SessionService:
    """Opens, reopens, forks, lists and deletes sessions (see the module docstring)."""

    def __init__(
        self,
        flags: AgentFlags,
        env: dict[str, str],
        home: Path | None = None,
        create: SessionFactory = create_session,
    ) -> None:
        self.flags = flags
        self.env = env
        self._home = home
        self._create = create
        self._store: SessionStore | None = None

    def home(self) -> Path:
        return self._home or Path(self.env.get("HOME") or Path.home())

    def store(self) -> SessionStore:
        """Where sessions are recorded (resolved once: flag, user setting, XDG state dir)."""
        if self._store is None:
            from runtime.config import resolve_sessions_dir
            from runtime.services.recording import default_sessions_dir

            try:
                root = resolve_sessions_dir(self.flags, self.env, self.home())
            except ConfigError as exc:
                logger.warning("%s; recording sessions in the default folder", exc)
                root = default_sessions_dir(self.env, self.home())
            self._store = SessionStore(root)
        return self._store

    # ------------------------------------------------------------ open

    async def open(
        self,
        session_id: str,
        request: OpenRequest,
        recorded: tuple[ChatRecordingService, ConversationRecord] | None = None,
    ) -> AgentSession:
        """Build one session: fresh (`recorded` None: a new record) or from a record."""
        cwd = workspace_dir(request.cwd, "cwd")
        extra = self._roots(request)
        auth = resolve_auth(
            self.env,
            fake_responses=self.flags.fake_responses,
            api_key_override=request.auth.api_key,
            prefer=request.auth.prefer,
        )
        config = self._config(cwd)
        client_prompt = request.client_prompt
        if recorded is None:
            recording = self.store().create(session_id, cwd, additional=extra)
            history: tuple[Any, ...] = ()
        else:
            recording, record = recorded
            config = _restored(config, record)
            history = tuple(record.messages)
            if client_prompt is None:
                client_prompt = ClientPrompt.from_record(record.metadata.get(CLIENT_PROMPT_KEY))
        if request.client_prompt is not None:
            recording.set_metadata(**{CLIENT_PROMPT_KEY: request.client_prompt.as_record()})
        spec = SessionSpec(
            config=config,
            auth=auth,
            host=request.host_for(session_id),
            session_id=session_id,
            additional_roots=extra,
            mcp_servers=request.mcp_servers,
            recording=recording,
            history=history,
            client_prompt=client_prompt,
        )
        try:
            return await self._create(spec)
        except BaseException:
            recording.close()
            raise

    async def reopen(
        self, session_id: str, request: OpenRequest, live: AgentSession | None = None
    ) -> tuple[AgentSession, ConversationRecord]:
        """The live session (`live`, already open in this process) or one opened from
        its record, with the record it shows."""
        if live is not None:
            workspace = live.config.workspace
            if workspace != workspace_dir(request.cwd, "cwd"):
                raise WrongWorkspaceError(session_id, str(workspace), request.cwd)
            assert live.recorder is not None
            recording = live.recorder.recording
            if request.client_prompt is not None:
                live.prompt.client = request.client_prompt
                live.prompt.reload()
                recording.set_metadata(**{CLIENT_PROMPT_KEY: request.client_prompt.as_record()})
            return live, ConversationRecord(session_id, recording.metadata, recording.messages)
        recorded = self._recorded(session_id, request.cwd)
        return await self.open(session_id, request, recorded), recorded[1]

    async def fork(
        self, source_id: str, request: OpenRequest, live: AgentSession | None = None
    ) -> AgentSession:
        """A new session on a copy of `source_id`'s record (the live one's if open)."""
        if live is not None and live.recorder is not None:
            rec = live.recorder.recording
            record = ConversationRecord(source_id, dict(rec.metadata), rec.messages)
        else:
            recording, record = self._recorded(source_id, request.cwd)
            recording.close()
        cwd = workspace_dir(request.cwd, "cwd")
        session_id = uuid.uuid4().hex
        copy = self.store().create(
            session_id, cwd, additional=self._roots(request), extra={"forkedFrom": source_id}
        )
        for message in record.messages:
            copy.record_message(message.copy())
        fields: dict[str, Any] = {k: record.metadata[k] for k in FORK_KEPT if k in record.metadata}
        if record.title:
            fields["title"] = f"{record.title} (fork)"
        copy.set_metadata(**fields)
        forked = ConversationRecord(session_id, copy.metadata, copy.messages)
        return await self.open(session_id, request, (copy, forked))

    # ------------------------------------------------------------ list, delete

    def list(self, cwd_raw: str | None, cursor: str | None = None) -> SessionPage:
        """Newest first, from `cursor` (one this service gave out); only the listed page's
        index files are read. With a `cwd`, Gemini CLI's chats of that workspace not yet
        imported are listed too."""
        cwd = workspace_dir(cwd_raw, "cwd") if cwd_raw else None
        offset = _offset(cursor)
        store = self.store()
        found: list[tuple[float, Any]] = list(store.entries(cwd))
        if cwd is not None:
            ours = {path.name.removesuffix(".jsonl") for _, path in found}
            theirs = [s for s in self._gemini_cli().list(cwd) if s.session_id not in ours]
            found = sorted(
                [*found, *((s.updated_at, s) for s in theirs)],
                key=lambda item: item[0],
                reverse=True,
            )
        page: list[SessionSummary] = []
        index = offset
        while index < len(found) and len(page) < PAGE_SIZE:
            mtime, item = found[index]
            index += 1
            summary = (
                item if isinstance(item, SessionSummary) else store.summary((mtime, item), cwd)
            )
            if summary is not None:
                page.append(summary)
        return SessionPage(tuple(page), _cursor(index) if index < len(found) else None)

    def delete(self, session_id: str) -> bool:
        """Remove the record and its tool outputs (the session must be closed first);
        False when there was no record."""
        store = self.store()
        path = store.find(session_id)
        cwd = load_record(path).cwd if path is not None else None
        deleted = store.delete(session_id)
        if cwd is not None:  # the full tool outputs go with the record
            temp_dir = self._config(Path(cwd)).temp_dir
            shutil.rmtree(outputs_dir(temp_dir, session_id), ignore_errors=True)
        return deleted

    # ------------------------------------------------------------ records

    def subagent_messages(self, session_id: str) -> tuple[Message, ...]:
        """A subagent session's recorded messages, read only (none if it has no record)."""
        path = self.store().find(session_id)
        if path is None:
            return ()
        record = load_record(path)
        return tuple(record.messages) if record.metadata.get("kind") == "subagent" else ()

    def _recorded(
        self, session_id: str, cwd_raw: str
    ) -> tuple[ChatRecordingService, ConversationRecord]:
        opened = self.store().open(session_id)
        if opened is None and session_id.startswith(GEMINI_CLI_PREFIX):
            return self._imported(session_id, workspace_dir(cwd_raw, "cwd"))
        if opened is None:
            raise SessionNotFoundError(session_id)
        recording, record = opened
        recorded_cwd = record.cwd
        if recorded_cwd is not None and Path(recorded_cwd) != workspace_dir(cwd_raw, "cwd"):
            recording.close()
            raise WrongWorkspaceError(session_id, recorded_cwd, cwd_raw)
        return recording, record

    def _imported(
        self, session_id: str, cwd: Path
    ) -> tuple[ChatRecordingService, ConversationRecord]:
        """A Gemini CLI chat, copied into our store the first time it is opened."""
        chat = self._gemini_cli().read(cwd, session_id)
        if chat is None:
            raise SessionNotFoundError(session_id)
        recording = self.store().create(session_id, cwd, extra=chat.metadata)
        for message in chat.messages:
            recording.record_message(message.copy())
        if chat.title:
            recording.set_metadata(title=chat.title)
        return recording, ConversationRecord(session_id, recording.metadata, recording.messages)

    def _gemini_cli(self) -> GeminiCliChats:
        return GeminiCliChats(self.home())

    def _roots(self, request: OpenRequest) -> tuple[Path, ...]:
        return tuple(
            workspace_dir(d, "additionalDirectories entry") for d in request.additional_directories
        )

    def _config(self, cwd: Path) -> RuntimeConfig:
        return resolve_config(cwd, self.flags, env=self.env, home=self._home)


def _restored(config: RuntimeConfig, record: ConversationRecord) -> RuntimeConfig:
    """The recorded mode and model choice over the configured ones."""
    mode, choice = record.metadata.get("mode"), record.metadata.get("modelChoice")
    if isinstance(mode, str) and is_mode(mode):
        config = replace(config, approval_mode=mode)
    if isinstance(choice, str) and choice:
        config = config.with_model(choice)
    return config


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "offset" and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise InvalidCursorError
