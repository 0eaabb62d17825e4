"""Versioned schema migrations of the PostgreSQL session store (part of the session
store seam, `runtime.services.session_store`).

The migrations are the numbered SQL files shipped in `sql/` (`0001_sessions.sql`, ...),
applied in order, each in the same transaction as its row in `adk_acp_migrations`.
Every process runs `migrate` when it connects: an advisory lock makes concurrent
starts wait for each other, and applied versions are skipped, so it is idempotent.
A database migrated by a newer adk-acp is refused rather than written wrongly.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from runtime.errors import ConfigError

if TYPE_CHECKING:
    import asyncpg

logger = logging.getLogger(__name__)

TABLE = "adk_acp_migrations"
LOCK_KEY = 0x61646B_61_6370  # "adk" "acp": the advisory lock migrations hold
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def shipped() -> list[Migration]:
    """The migrations in the package, by version."""
    found = []
    for entry in resources.files(__package__ or "runtime.services.pg").joinpath("sql").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    return found


async def migrate(conn: asyncpg.Connection) -> list[int]:
    """Bring the schema up to date; returns the versions applied now (none if current)."""
    known = shipped()
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (version integer PRIMARY KEY, "
            "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        done = {row["version"] for row in await conn.fetch(f"SELECT version FROM {TABLE}")}
        newest = max((m.version for m in known), default=0)
        if done and max(done) > newest:
            raise ConfigError(
                f"the session database's schema is at version {max(done)}, newer than this "
                f"adk-acp knows ({newest}): upgrade adk-acp"
            )
        for migration in known:
            if migration.version in done:
                continue
            await conn.execute(migration.sql)
            await conn.execute(
                f"INSERT INTO {TABLE} (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
    if applied:
        logger.info("session database migrated to version %d", applied[-1])
    return applied
