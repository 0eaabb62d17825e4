"""The session lifecycle: `session/new`, `load`, `resume`, `fork`, `list`, `close`, `delete`.

Every session is recorded (`runtime.services.recording`) from its first prompt.
`load` replays the record as `session/update`s and answers after the last one;
`resume` reopens without replay; `fork` copies a record into a new session. In
each of these the model gets the recorded conversation back as its history, the
client's MCP servers start as in `new`, and the recorded mode and model choice
are restored. An unknown id is answered with -32002 and nothing is created.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import schema

from acp_server.errors import from_runtime, invalid_params, session_not_found
from acp_server.host import AcpHost
from acp_server.mcp import mcp_servers
from acp_server.replay import replay_updates
from acp_server.session import AcpSession
from runtime.config import resolve_auth, resolve_config
from runtime.errors import AuthRequiredError
from runtime.services.gemini_cli_chats import PREFIX as GEMINI_CLI_PREFIX
from runtime.services.gemini_cli_chats import GeminiCliChats
from runtime.services.recording import (
    ChatRecordingService,
    ConversationRecord,
    Message,
    SessionSummary,
    load_record,
)
from runtime.tools.policy.modes import is_mode

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from acp_server.early import EarlySession
    from acp_server.server import AcpServer

PAGE_SIZE = 50


def _directory(raw: str, what: str) -> Path:
    shown = raw if len(raw) <= 200 else f"{raw[:200]}… ({len(raw)} chars)"
    path = Path(raw)
    if not path.is_absolute():
        raise invalid_params(f"{what} must be an absolute path, got {shown!r}")
    try:
        usable = path.is_dir()
        resolved = path.resolve() if usable else path
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop of links
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise invalid_params(f"{what} is not a usable directory ({reason}): {shown}") from None
    if not usable:
        raise invalid_params(f"{what} does not exist or is not a directory: {shown}")
    return resolved


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


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
    raise invalid_params("cursor is not one this agent gave out")


def register(server: AcpServer) -> None:  # noqa: C901 - one closure per method
    async def open_session(
        *,
        session_id: str,
        cwd_raw: str,
        additional_raw: list[str] | None,
        raw_servers: list[Any] | None,
        recording: ChatRecordingService | None,
        record: ConversationRecord | None,
    ) -> AcpSession:
        """Build one engine session: fresh (`record` None) or from a record."""
        from runtime.session import SessionSpec, create_session

        cwd = _directory(cwd_raw, "cwd")
        extra = tuple(_directory(d, "additionalDirectories entry") for d in additional_raw or [])
        flags = server.options.flags
        try:
            auth = resolve_auth(
                server.options.env,
                fake_responses=flags.fake_responses,
                api_key_override=server.api_key_override,
                prefer=server.auth_preference,  # type: ignore[arg-type]
            )
        except AuthRequiredError as exc:
            raise from_runtime(exc) from exc
        config = resolve_config(cwd, flags, env=server.options.env, home=server.options.home)
        history: tuple[Message, ...] = ()
        if record is not None:
            meta = record.metadata
            mode, choice = meta.get("mode"), meta.get("modelChoice")
            if isinstance(mode, str) and is_mode(mode):
                config = replace(config, approval_mode=mode)
            if isinstance(choice, str) and choice:
                config = config.with_model(choice)
            history = tuple(record.messages)
        if recording is None:
            recording = server.store().create(session_id, cwd, additional=extra)
        host = AcpHost(server.engine, session_id, server.client_capabilities)
        try:
            runtime = await create_session(
                SessionSpec(
                    config=config,
                    auth=auth,
                    host=host,
                    session_id=session_id,
                    additional_roots=extra,
                    mcp_servers=mcp_servers(raw_servers or []),
                    recording=recording,
                    history=history,
                )
            )
        except BaseException:
            recording.close()
            raise
        session = AcpSession(server.engine, runtime, host, server.config_options)
        server.sessions[session_id] = session
        return session

    def answer(session: AcpSession, **extra: Any) -> dict[str, Any]:
        return {
            **extra,
            "modes": server.config_options.modes(session.runtime),
            "configOptions": server.config_options.options(session.runtime),
        }

    def gemini_cli() -> GeminiCliChats:
        return GeminiCliChats(server.home())

    def imported(session_id: str, cwd: Path) -> tuple[ChatRecordingService, ConversationRecord]:
        """A Gemini CLI chat, copied into our store the first time it is opened."""
        chat = gemini_cli().read(cwd, session_id)
        if chat is None:
            raise session_not_found(session_id)
        recording = server.store().create(session_id, cwd, extra=chat.metadata)
        for message in chat.messages:
            recording.record_message(message.copy())
        if chat.title:
            recording.set_metadata(title=chat.title)
        return recording, ConversationRecord(session_id, recording.metadata, recording.messages)

    def recorded(session_id: str, cwd_raw: str) -> tuple[ChatRecordingService, ConversationRecord]:
        opened = server.store().open(session_id)
        if opened is None and session_id.startswith(GEMINI_CLI_PREFIX):
            return imported(session_id, _directory(cwd_raw, "cwd"))
        if opened is None:
            raise session_not_found(session_id)
        recording, record = opened
        recorded_cwd = record.cwd
        if recorded_cwd is not None and Path(recorded_cwd) != _directory(cwd_raw, "cwd"):
            recording.close()
            raise invalid_params(
                f"session {session_id} belongs to {recorded_cwd}, not to {cwd_raw}",
                {"sessionId": session_id, "cwd": recorded_cwd},
            )
        return recording, record

    opening: dict[str, tuple[asyncio.Lock, int]] = {}  # session id → (lock, users)

    async def reopen(
        session_id: str, cwd: str, extra: list[str] | None, servers: list[Any] | None
    ) -> tuple[AcpSession, ConversationRecord]:
        """The live session, or one opened from its record. Two loads (or resumes) of one
        session sent back to back are served one after the other: the second finds the
        engine the first built (one engine, one set of MCP servers)."""
        lock, users = opening.get(session_id) or (asyncio.Lock(), 0)
        opening[session_id] = (lock, users + 1)
        try:
            async with lock:
                if users:  # the load before this one is answered before this one replays
                    await asyncio.sleep(0)
                return await reopen_now(session_id, cwd, extra, servers)
        finally:
            lock, users = opening[session_id]
            if users <= 1:
                del opening[session_id]
            else:
                opening[session_id] = (lock, users - 1)

    async def reopen_now(
        session_id: str, cwd: str, extra: list[str] | None, servers: list[Any] | None
    ) -> tuple[AcpSession, ConversationRecord]:
        live = server.sessions.get(session_id)
        if live is not None:  # already open in this process: the same session
            workspace = live.runtime.config.workspace
            if workspace != _directory(cwd, "cwd"):
                raise invalid_params(
                    f"session {session_id} belongs to {workspace}, not to {cwd}",
                    {"sessionId": session_id, "cwd": str(workspace)},
                )
            assert live.runtime.recorder is not None
            recording = live.runtime.recorder.recording
            return live, ConversationRecord(session_id, recording.metadata, recording.messages)
        recording, record = recorded(session_id, cwd)
        session = await open_session(
            session_id=session_id,
            cwd_raw=cwd,
            additional_raw=extra,
            raw_servers=servers,
            recording=recording,
            record=record,
        )
        return session, record

    async def new_session(params: schema.NewSessionRequest) -> dict[str, Any]:
        session_id = uuid.uuid4().hex
        session = await open_session(
            session_id=session_id,
            cwd_raw=params.cwd,
            additional_raw=params.additional_directories,
            raw_servers=params.mcp_servers,
            recording=None,
            record=None,
        )
        session.announce_commands()
        return answer(session, sessionId=session_id)

    async def load_session(params: schema.LoadSessionRequest) -> dict[str, Any]:
        session, record = await reopen(
            params.session_id, params.cwd, params.additional_directories, params.mcp_servers
        )
        runtime = session.runtime
        for update in replay_updates(
            record.messages,
            record.metadata,
            mode=runtime.mode,
            config_options=server.config_options.options(runtime),
        ):
            session.send_update(update)
        session.announce_commands()
        return answer(session)

    async def resume_session(params: schema.ResumeSessionRequest) -> dict[str, Any]:
        session, _ = await reopen(
            params.session_id, params.cwd, params.additional_directories, params.mcp_servers
        )
        session.announce_commands()
        return answer(session)

    async def fork_session(params: schema.ForkSessionRequest) -> dict[str, Any]:
        source = server.sessions.get(params.session_id)
        if source is not None and source.runtime.recorder is not None:
            rec = source.runtime.recorder.recording
            record = ConversationRecord(params.session_id, dict(rec.metadata), rec.messages)
        else:
            recording, record = recorded(params.session_id, params.cwd)
            recording.close()
        cwd = _directory(params.cwd, "cwd")
        extra = tuple(
            _directory(d, "additionalDirectories entry")
            for d in params.additional_directories or []
        )
        session_id = uuid.uuid4().hex
        title = record.title
        copy = server.store().create(
            session_id,
            cwd,
            additional=extra,
            extra={"forkedFrom": params.session_id},
        )
        for message in record.messages:
            copy.record_message(message.copy())
        kept = ("mode", "modelChoice", "plan")
        fields: dict[str, Any] = {k: record.metadata[k] for k in kept if k in record.metadata}
        if title:
            fields["title"] = f"{title} (fork)"
        copy.set_metadata(**fields)
        forked = ConversationRecord(session_id, copy.metadata, copy.messages)
        session = await open_session(
            session_id=session_id,
            cwd_raw=params.cwd,
            additional_raw=params.additional_directories,
            raw_servers=params.mcp_servers,
            recording=copy,
            record=forked,
        )
        session.announce_commands()
        return answer(session, sessionId=session_id)

    async def list_sessions(params: schema.ListSessionsRequest) -> dict[str, Any]:
        """Newest first; only the listed page's index files are read."""
        cwd = _directory(params.cwd, "cwd") if params.cwd else None
        offset = _offset(params.cursor)
        store = server.store()
        found: list[tuple[float, Any]] = list(store.entries(cwd))
        if cwd is not None:  # Gemini CLI's chats of this workspace, not yet imported
            ours = {path.name.removesuffix(".jsonl") for _, path in found}
            theirs = [s for s in gemini_cli().list(cwd) if s.session_id not in ours]
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
        sessions = [
            {
                "sessionId": s.session_id,
                "cwd": s.cwd,
                "title": s.title,
                "updatedAt": _iso(s.updated_at),
                **({"_meta": {"source": s.source}} if s.source != "adk-acp" else {}),
                **(
                    {"additionalDirectories": list(s.additional_directories)}
                    if s.additional_directories
                    else {}
                ),
            }
            for s in page
        ]
        result: dict[str, Any] = {"sessions": sessions}
        if index < len(found):
            result["nextCursor"] = _cursor(index)
        return result

    async def close_session(params: schema.CloseSessionRequest) -> dict[str, Any]:
        session = server.sessions.pop(params.session_id, None)
        if session is None:
            raise session_not_found(params.session_id)
        await session.close()
        return {}

    async def delete_session(params: schema.DeleteSessionRequest) -> dict[str, Any]:
        import shutil

        from runtime.session_build import outputs_dir

        session_id = params.session_id
        session = server.sessions.pop(session_id, None)
        if session is not None:
            await session.close()
        path = server.store().find(session_id)
        cwd = load_record(path).cwd if path is not None else None
        if not server.store().delete(session_id) and session is None:
            raise session_not_found(session_id)
        if cwd is not None:  # the full tool outputs go with the record
            config = resolve_config(
                Path(cwd), server.options.flags, env=server.options.env, home=server.options.home
            )
            shutil.rmtree(outputs_dir(config.temp_dir, session_id), ignore_errors=True)
        return {}

    async def open_early(early: EarlySession) -> None:
        """The engine of a session/new answered before the server was up (`early.py`)."""
        try:
            params = schema.NewSessionRequest.model_validate(early.params)
            session = await open_session(
                session_id=early.session_id,
                cwd_raw=params.cwd,
                additional_raw=params.additional_directories,
                raw_servers=params.mcp_servers,
                recording=None,
                record=None,
            )
        except Exception as exc:  # noqa: BLE001 - told to whoever uses the session next
            logger.exception("the early session %s could not be built", early.session_id)
            server.failed_sessions[early.session_id] = getattr(exc, "message", None) or str(exc)
            return
        session.announce_commands()

    server.open_early = open_early
    engine = server.engine
    engine.register("session/new", schema.NewSessionRequest, new_session)
    engine.register("session/load", schema.LoadSessionRequest, load_session)
    engine.register("session/resume", schema.ResumeSessionRequest, resume_session)
    engine.register("session/fork", schema.ForkSessionRequest, fork_session)
    engine.register("session/list", schema.ListSessionsRequest, list_sessions)
    engine.register("session/close", schema.CloseSessionRequest, close_session)
    engine.register("session/delete", schema.DeleteSessionRequest, delete_session)
