"""SessionService: the session lifecycle over the store (design: session lifecycle;
not ADK's session service, which is `runtime.adk.session_service.GcliSessionService`).

It opens new sessions, reopens recorded ones (load, resume), forks, lists and
deletes them, and owns what lies beside a record: the store (the session store seam,
`RecordStore`, resolved once: `--store`/`$ADK_ACP_STORE`/`general.sessionStore` for a
PostgreSQL database, else the JSONL files of `--sessions-dir`/the user setting/the XDG
state dir), Gemini CLI's chats (listed, and imported into the store the first time one
is opened) and each session's tool-outputs folder. Every session is recorded from
its first prompt; a reopened or forked one gets its recorded conversation back as the
model's history, with its recorded mode and model choice. It speaks no protocol: its
errors are the runtime's (`SessionNotFoundError`, `WrongWorkspaceError`, `WorkspaceError`, and
`AuthRequiredError` from the credentials, `SessionLeasedError` when another process
drives a database session).
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Sequence
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
    load_record,
)
from runtime.services.session_store import (
    FileRecordStore,
    InvalidCursorError,
    NewRecord,
    RecordStore,
    SessionLeasedError,
    SessionPage,
    subagent_records,
)
from runtime.session.agent_session import AgentSession, SessionFactory
from runtime.session.factory import create_session
from runtime.session.paths import outputs_dir
from runtime.session.spec import OpenRequest, SessionSpec
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


__all__ = ["InvalidCursorError", "SessionLeasedError", "SessionPage", "SessionService"]


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
        self._records: RecordStore | None = None

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

    def records(self) -> RecordStore:
        """The session store seam: a PostgreSQL database when one is configured (a bad
        URL is a `ConfigError`), else the JSONL files of `store()`."""
        if self._records is None:
            from runtime.config import resolve_store_url

            url = resolve_store_url(self.flags, self.env, self.home())
            if url is not None:
                from runtime.services.pg.store import PgRecordStore, lease_seconds

                self._records = PgRecordStore(
                    url, lease_s=lease_seconds(self.env), gemini_cli=self._gemini_cli()
                )
            else:
                self._records = FileRecordStore(self.store(), self._gemini_cli())
        return self._records

    async def aclose(self) -> None:
        """Let go of the store's connections (the sessions are closed first)."""
        if self._records is not None:
            await self._records.close()

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
        config = self._config(cwd)
        auth = resolve_auth(
            self.env,
            fake_responses=self.flags.fake_responses,
            api_key_override=request.auth.api_key,
            prefer=request.auth.prefer,
            model=(config.restored(recorded[1].metadata) if recorded is not None else config).model,
        )
        client_prompt = request.client_prompt
        if recorded is None:
            recording = await self.records().create(NewRecord(session_id, cwd, extra))
            history: tuple[Any, ...] = ()
        else:
            recording, record = recorded
            config = config.restored(record.metadata)
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
            records=self.records(),
            history=history,
            client_prompt=client_prompt,
            start_source="startup" if recorded is None else "resume",
        )
        try:
            return await self._create(spec)
        except BaseException:
            await recording.aclose()
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
            await live.handover.drive()  # handed over: the lease and the record taken back
            assert live.recorder is not None
            recording = live.recorder.recording
            if request.client_prompt is not None:
                live.prompt.client = request.client_prompt
                live.prompt.reload()
                recording.set_metadata(**{CLIENT_PROMPT_KEY: request.client_prompt.as_record()})
            return live, ConversationRecord(session_id, recording.metadata, recording.messages)
        recorded = await self._recorded(session_id, request.cwd)
        return await self.open(session_id, request, recorded), recorded[1]

    async def fork(
        self, source_id: str, request: OpenRequest, live: AgentSession | None = None
    ) -> AgentSession:
        """A new session on a copy of `source_id`'s record (the live one's if open)."""
        if live is not None and live.recorder is not None and not live.handover.handed_over:
            rec = live.recorder.recording
            record = ConversationRecord(source_id, dict(rec.metadata), rec.messages)
        else:
            record = await self._source(source_id, request.cwd)
        cwd = workspace_dir(request.cwd, "cwd")
        session_id = uuid.uuid4().hex
        copy = await self.records().create(
            NewRecord(session_id, cwd, self._roots(request), extra={"forkedFrom": source_id})
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

    async def list(self, cwd_raw: str | None, cursor: str | None = None) -> SessionPage:
        """Newest first, from `cursor` (one this store gave out), a page at a time
        (`RecordStore.page`; the files list Gemini CLI's chats of `cwd` too)."""
        cwd = workspace_dir(cwd_raw, "cwd") if cwd_raw else None
        return await self.records().page(cwd, cursor, PAGE_SIZE)

    def delete(self, session_id: str) -> bool:
        """`remove` for the JSONL files, synchronously (the files only)."""
        store = self.store()
        path = store.find(session_id)
        cwd = load_record(path).cwd if path is not None else None
        deleted = store.delete(session_id)
        self._drop_outputs(cwd, session_id)
        return deleted

    async def remove(self, session_id: str) -> bool:
        """Remove the record and its tool outputs (the session must be closed first);
        False when there was no record."""
        records = self.records()
        record = await records.read(session_id)
        deleted = await records.delete(session_id)
        self._drop_outputs(record.cwd if record is not None else None, session_id)
        return deleted

    def _drop_outputs(self, cwd: str | None, session_id: str) -> None:
        if cwd is not None:  # the full tool outputs go with the record
            temp_dir = self._config(Path(cwd)).temp_dir
            shutil.rmtree(outputs_dir(temp_dir, session_id), ignore_errors=True)

    # ------------------------------------------------------------ records

    async def subagent_records(self, messages: Sequence[Message]) -> dict[str, tuple[Message, ...]]:
        """The recorded messages of the subagent sessions that `messages` ran
        (`session_store.subagent_records`)."""
        return await subagent_records(self.records(), messages)

    async def _recorded(
        self, session_id: str, cwd_raw: str
    ) -> tuple[ChatRecordingService, ConversationRecord]:
        """A recorded session opened to be driven (its lease taken)."""
        records = self.records()
        if session_id.startswith(GEMINI_CLI_PREFIX) and await records.read(session_id) is None:
            return await self._imported(session_id, workspace_dir(cwd_raw, "cwd"))
        opened = await records.open(session_id)
        if opened is None:
            raise SessionNotFoundError(session_id)
        recording, record = opened
        try:
            _same_workspace(record, cwd_raw)
        except WrongWorkspaceError:
            await recording.aclose()
            raise
        return recording, record

    async def _source(self, session_id: str, cwd_raw: str) -> ConversationRecord:
        """The record a fork copies, read without driving it."""
        record = await self.records().read(session_id)
        if record is None and session_id.startswith(GEMINI_CLI_PREFIX):
            recording, record = await self._imported(session_id, workspace_dir(cwd_raw, "cwd"))
            await recording.aclose()
        if record is None:
            raise SessionNotFoundError(session_id)
        _same_workspace(record, cwd_raw)
        return record

    async def _imported(
        self, session_id: str, cwd: Path
    ) -> tuple[ChatRecordingService, ConversationRecord]:
        """A Gemini CLI chat, copied into our store the first time it is opened."""
        chat = self._gemini_cli().read(cwd, session_id)
        if chat is None:
            raise SessionNotFoundError(session_id)
        recording = await self.records().create(NewRecord(session_id, cwd, extra=chat.metadata))
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


def _same_workspace(record: ConversationRecord, cwd_raw: str) -> None:
    recorded_cwd = record.cwd
    if recorded_cwd is not None and Path(recorded_cwd) != workspace_dir(cwd_raw, "cwd"):
        raise WrongWorkspaceError(record.session_id, recorded_cwd, cwd_raw)
