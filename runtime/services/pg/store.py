"""PgRecordStore: the session store seam on PostgreSQL (`--store postgresql://…`;
the seam is `runtime.services.session_store.RecordStore`).

Tables (`sql/0001_sessions.sql`, applied by `migrations.migrate` on connect):
`adk_sessions` (one row per session: cwd, kind, title, the record's metadata line,
`updated_at` for listing), `adk_records` (the record's lines, append-only, in order
of `seq`) and `adk_leases` (`lease.py`). A record loads as the JSONL store's does:
the metadata line, then the lines folded by `record.parse_record`. Several
processes share one database: any of them lists and reads any session; one at a
time drives it (its lease), and a second one opening it waits up to one lease
period (`ADK_ACP_LEASE_SECONDS`, default 30) before it is told who holds it, unless
the holder lets go or answers why not before (`LeaseHandoff`: `wanted`, `refuse`).
Gemini CLI's chats of a workspace are listed beside its sessions, as the files
store lists them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import ConfigError
from runtime.services.pg.lease import POLL_S, REFUSE, TAKE, WANTED, Lease, new_holder
from runtime.services.pg.migrations import migrate
from runtime.services.pg.recording import PgChatRecording
from runtime.services.record import parse_record
from runtime.services.recording import (
    ChatRecordingService,
    ConversationRecord,
    SessionSummary,
)
from runtime.services.session_store import (
    InvalidCursorError,
    NewRecord,
    SessionLeasedError,
    SessionPage,
)

if TYPE_CHECKING:
    import asyncpg

    from runtime.services.gemini_cli_chats import GeminiCliChats

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S = 30.0
LEASE_ENV = "ADK_ACP_LEASE_SECONDS"

APPEND = """
WITH held AS (
    SELECT 1 FROM adk_leases WHERE session_id = $1 AND holder = $2
), written AS (
    INSERT INTO adk_records (session_id, line)
    SELECT $1, u.line::json FROM unnest($3::text[]) WITH ORDINALITY AS u(line, n)
    WHERE EXISTS (SELECT 1 FROM held) ORDER BY u.n
    RETURNING seq
)
UPDATE adk_sessions SET
    updated_at = clock_timestamp(),
    title = coalesce((
        SELECT u.line::json -> '$set' ->> 'title'
        FROM unnest($3::text[]) WITH ORDINALITY AS u(line, n)
        WHERE (u.line::json -> '$set' ->> 'title') IS NOT NULL ORDER BY u.n DESC LIMIT 1
    ), title)
WHERE id = $1 AND EXISTS (SELECT 1 FROM held)
RETURNING (SELECT count(*) FROM written)
"""
LISTED = """
SELECT id, cwd, title, additional_directories::text AS extra, updated_at,
       extract(epoch FROM updated_at)::float8 AS epoch
FROM adk_sessions
WHERE kind <> 'subagent' AND ($1::text IS NULL OR cwd = $1)
  AND ($2::timestamptz IS NULL OR (updated_at, id) < ($2, $3::text))
ORDER BY updated_at DESC, id DESC
LIMIT $4
"""

IMPORTED = "SELECT id FROM adk_sessions WHERE id = ANY($1::text[])"


def lease_seconds(env: dict[str, str]) -> float:
    raw = env.get(LEASE_ENV)
    try:
        value = float(raw) if raw else DEFAULT_LEASE_S
    except ValueError:
        value = DEFAULT_LEASE_S
    return value if value > 0 else DEFAULT_LEASE_S


class PgRecordStore:
    """Sessions in PostgreSQL (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        gemini_cli: GeminiCliChats | None = None,
    ) -> None:
        self.url = url
        self.gemini_cli = gemini_cli
        """Gemini CLI's chats, listed (with a `cwd`) beside the database's sessions."""
        self.holder = new_holder()
        self.lease_s = lease_s
        self.wait_s = lease_s + 2 * POLL_S
        """How long opening a session waits for another holder to let go or expire."""
        self._pool: asyncpg.Pool | None = None
        self._connecting = asyncio.Lock()

    async def pool(self) -> asyncpg.Pool:
        """The connection pool, made (and the schema migrated) on first use."""
        async with self._connecting:
            if self._pool is None:
                self._pool = await _connect(self.url)
            return self._pool

    # ------------------------------------------------------------ the seam

    async def create(self, new: NewRecord) -> ChatRecordingService:
        pool = await self.pool()
        metadata = new.metadata()
        session_id = new.session_id
        title = metadata.get("title")
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO adk_sessions (id, cwd, kind, title, additional_directories, metadata)"
                " VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)",
                session_id,
                str(new.cwd),
                new.kind,
                title if isinstance(title, str) else None,
                json.dumps(metadata["additionalDirectories"]),
                json.dumps(metadata, ensure_ascii=False),
            )
            await conn.fetchval(TAKE, session_id, self.holder, self.lease_s)
        lease = Lease(pool, session_id, self.holder, self.lease_s)
        return PgChatRecording(self.append, ConversationRecord(session_id, metadata), lease)

    async def open(self, session_id: str) -> tuple[ChatRecordingService, ConversationRecord] | None:
        pool = await self.pool()
        if await pool.fetchval("SELECT 1 FROM adk_sessions WHERE id = $1", session_id) is None:
            return None
        lease = await Lease.take(pool, session_id, self.holder, self.lease_s, self.wait_s)
        record = await self.read(session_id)  # after the lease: all its last holder wrote
        if record is None:  # deleted meanwhile
            await lease.release()
            return None
        return PgChatRecording(self.append, record, lease), record

    async def read(self, session_id: str) -> ConversationRecord | None:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
            metadata = await conn.fetchval(
                "SELECT metadata::text FROM adk_sessions WHERE id = $1", session_id
            )
            if metadata is None:
                return None
            rows = await conn.fetch(
                "SELECT line::text AS line FROM adk_records WHERE session_id = $1 ORDER BY seq",
                session_id,
            )
        text = "\n".join([metadata, *(row["line"] for row in rows)])
        return parse_record(text, session_id=session_id, source=f"database session {session_id}")

    async def page(self, cwd: Path | None, cursor: str | None, limit: int) -> SessionPage:
        """Newest first, by the last line written; the cursor is the last listed
        (time, id), so sessions written meanwhile neither repeat nor skip others. With
        a `cwd`, Gemini CLI's chats of that workspace not yet imported are listed too
        (by their file's time), as the files store lists them."""
        after_at, after_id = _after(cursor)
        pool = await self.pool()
        rows = await pool.fetch(LISTED, str(cwd) if cwd else None, after_at, after_id, limit + 1)
        found = [(row["updated_at"], _summary(row)) for row in rows]
        if cwd is not None and self.gemini_cli is not None:
            found += await self._chats(pool, cwd, after_at, after_id)
            found.sort(key=lambda item: (item[0], item[1].session_id), reverse=True)
        listed = found[:limit]
        more = len(found) > limit
        next_cursor = _cursor(listed[-1][0], listed[-1][1].session_id) if more else None
        return SessionPage(tuple(s for _, s in listed), next_cursor)

    async def _chats(
        self, pool: asyncpg.Pool, cwd: Path, after_at: datetime | None, after_id: str | None
    ) -> list[tuple[datetime, SessionSummary]]:
        """Gemini CLI's chats of `cwd` listed after the cursor, not imported yet."""
        assert self.gemini_cli is not None
        chats = [
            (datetime.fromtimestamp(s.updated_at, UTC), s)
            for s in await asyncio.to_thread(self.gemini_cli.list, cwd)
        ]
        if after_at is not None and after_id is not None:
            chats = [(at, s) for at, s in chats if (at, s.session_id) < (after_at, after_id)]
        if not chats:
            return []
        ids = [s.session_id for _, s in chats]
        imported = {r["id"] for r in await pool.fetch(IMPORTED, ids)}
        return [(at, s) for at, s in chats if s.session_id not in imported]

    async def delete(self, session_id: str) -> bool:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.transaction():
            held = await conn.fetchrow(
                "SELECT holder, expires_at FROM adk_leases WHERE session_id = $1 AND holder <> $2"
                " AND expires_at > clock_timestamp() FOR UPDATE",
                session_id,
                self.holder,
            )
            if held is not None:
                until = held["expires_at"].isoformat(timespec="seconds")
                raise SessionLeasedError(session_id, held["holder"], until)
            status = await conn.execute("DELETE FROM adk_sessions WHERE id = $1", session_id)
        return bool(status == "DELETE 1")

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # ------------------------------------------------------------ handing over (LeaseHandoff)

    async def wanted(self) -> list[str]:
        """Sessions this store holds that another process waits for (`Lease.take`)."""
        if self._pool is None:
            return []
        rows = await self._pool.fetch(WANTED, self.holder, self.wait_s)
        return [row["session_id"] for row in rows]

    async def refuse(self, session_id: str, why: str, advice: str | None = None) -> None:
        pool = await self.pool()
        answer = f"{why}\n{advice}" if advice else why
        await pool.execute(REFUSE, session_id, self.holder, answer)

    # ------------------------------------------------------------ for the recordings

    async def append(self, session_id: str, holder: str, lines: list[str]) -> bool:
        """Insert `lines` in order if `holder` still holds the lease; False if not."""
        pool = await self.pool()
        return await pool.fetchval(APPEND, session_id, holder, lines) is not None


async def _connect(url: str) -> asyncpg.Pool:
    try:
        import asyncpg
    except ImportError as exc:
        raise ConfigError(
            "a postgresql:// session store needs asyncpg: pip install 'adk-acp[postgres]'"
        ) from exc
    try:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=8, command_timeout=30)
    except (OSError, asyncpg.PostgresError, ValueError) as exc:
        raise ConfigError(f"cannot reach the session database: {exc}") from exc
    async with pool.acquire() as conn:
        await migrate(conn)
    return pool


def _summary(row: Any) -> SessionSummary:
    extra = json.loads(row["extra"])
    return SessionSummary(
        session_id=row["id"],
        cwd=row["cwd"],
        title=row["title"],
        updated_at=float(row["epoch"]),
        additional_directories=tuple(str(d) for d in extra if isinstance(d, str)),
    )


def _cursor(at: datetime, session_id: str) -> str:
    return base64.urlsafe_b64encode(f"at:{at.isoformat()}|{session_id}".encode()).decode()


def _after(cursor: str | None) -> tuple[datetime | None, str | None]:
    if not cursor:
        return None, None
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        at, _, session_id = value.partition("|")
        if kind == "at" and session_id:
            parsed = datetime.fromisoformat(at)
            if parsed.tzinfo is not None:
                return parsed, session_id
    except (ValueError, UnicodeDecodeError):
        pass
    raise InvalidCursorError
