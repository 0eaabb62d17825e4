"""The lease: which process drives a session (part of the PostgreSQL session store).

A row per driven session in `adk_leases`: the holder (host, pid and a random tag of
the store that took it) and when it expires. A process takes the lease when it opens
a session (new, load, resume, fork) and keeps renewing it while the session is open,
through turns and between them; closing lets it go. A holder that dies stops
renewing, and once `expires_at` passes any process may take the lease over. Taking
is one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` statement, so two processes
racing for a lease cannot both win. Record lines are written only while the writer
still holds the lease (`store.APPEND`), so a holder that lost it cannot interleave
its lines with the new holder's.

Handing over (a `serve` instance asked for a session another instance holds): the
asking process marks the lease `wanted_at` while it waits; the holder's hub looks for
its wanted leases (`wanted`) and lets go of a session nobody uses there, or answers
why it keeps it (`refuse`; a line of its own after the reason says what the asker
can do, when that is not "connect to that process"), which the asker raises at once
as `SessionLeasedError`. A stdio agent answers the same way
(`acp_server/handoff.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from runtime.services.session_store import SessionLeasedError

if TYPE_CHECKING:
    import asyncpg

logger = logging.getLogger(__name__)

POLL_S = 0.25
"""How often a waiting process looks again (a lease let go is taken within this)."""

TAKE = """
INSERT INTO adk_leases (session_id, holder, expires_at)
VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3))
ON CONFLICT (session_id) DO UPDATE
    SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
        wanted_at = NULL, refused = NULL
    WHERE adk_leases.holder = EXCLUDED.holder OR adk_leases.expires_at < clock_timestamp()
RETURNING holder
"""
RENEW = """
UPDATE adk_leases SET expires_at = clock_timestamp() + make_interval(secs => $3)
WHERE session_id = $1 AND holder = $2
"""
RELEASE = "DELETE FROM adk_leases WHERE session_id = $1 AND holder = $2"
WANT = """
UPDATE adk_leases SET wanted_at = clock_timestamp()
WHERE session_id = $1 AND holder <> $2 AND refused IS NULL
"""
REFUSED = """
UPDATE adk_leases AS l SET refused = NULL, wanted_at = NULL
FROM (
    SELECT session_id, refused FROM adk_leases
    WHERE session_id = $1 AND holder <> $2 AND refused IS NOT NULL FOR UPDATE
) AS old
WHERE l.session_id = old.session_id
RETURNING l.holder, old.refused
"""
WANTED = """
SELECT session_id FROM adk_leases
WHERE holder = $1 AND refused IS NULL
  AND wanted_at > clock_timestamp() - make_interval(secs => $2)
"""
REFUSE = """
UPDATE adk_leases SET refused = $3, wanted_at = NULL
WHERE session_id = $1 AND holder = $2 AND wanted_at IS NOT NULL
"""
HELD_BY = """
SELECT holder, expires_at,
       greatest(extract(epoch FROM expires_at - clock_timestamp()), 0)::float8 AS left_s
FROM adk_leases WHERE session_id = $1
"""


def new_holder() -> str:
    """This store's name in lease rows: host, pid and a random tag."""
    return f"{socket.gethostname()} pid {os.getpid()} #{uuid.uuid4().hex[:8]}"


class Lease:
    """One process's hold on one session (see the module docstring)."""

    def __init__(self, pool: asyncpg.Pool, session_id: str, holder: str, ttl_s: float) -> None:
        self.pool = pool
        self.session_id = session_id
        self.holder = holder
        self.ttl_s = ttl_s
        self.lost = False
        self._keeper: asyncio.Task[None] | None = None

    @classmethod
    async def take(
        cls, pool: asyncpg.Pool, session_id: str, holder: str, ttl_s: float, wait_s: float
    ) -> Lease:
        """Take the lease, waiting up to `wait_s` for its holder to let go (asked to:
        `wanted_at`) or expire; `SessionLeasedError` if it does not, at once if the
        holder answers why it keeps the session."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            if await pool.fetchval(TAKE, session_id, holder, ttl_s) is not None:
                return cls(pool, session_id, holder, ttl_s)
            refused = await pool.fetchrow(REFUSED, session_id, holder)
            if refused is not None:
                why, _, advice = str(refused["refused"]).partition("\n")
                raise SessionLeasedError(session_id, refused["holder"], "", why, advice or None)
            await pool.execute(WANT, session_id, holder)
            held = await pool.fetchrow(HELD_BY, session_id)
            if held is None:
                continue  # let go between the two statements
            now = loop.time()
            if now >= deadline:
                until = held["expires_at"]
                shown = until.isoformat(timespec="seconds") if isinstance(until, datetime) else "?"
                raise SessionLeasedError(session_id, held["holder"], shown)
            await asyncio.sleep(min(POLL_S, float(held["left_s"]) + 0.01, deadline - now))

    def keep(self, on_lost: Callable[[], None] | None = None) -> None:
        """Renew every third of the lease's time until `release` (or until lost)."""
        if self._keeper is None:
            self._keeper = asyncio.get_running_loop().create_task(self._keep(on_lost))

    async def _keep(self, on_lost: Callable[[], None] | None) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                renewed = await self.renew()
            except Exception as exc:  # noqa: BLE001 - asyncpg's errors: keep trying
                logger.warning("cannot renew the lease of %s: %s", self.session_id, exc)
                continue
            if not renewed:
                self.lost = True
                logger.error(
                    "session %s: another process took its lease; this one stops recording it",
                    self.session_id,
                )
                if on_lost is not None:
                    on_lost()
                return

    async def renew(self) -> bool:
        status = await self.pool.execute(RENEW, self.session_id, self.holder, self.ttl_s)
        return bool(status.endswith(" 1"))

    async def release(self) -> None:
        """Stop renewing and let go (a lease already lost stays with its new holder)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
            self._keeper = None
        await self.pool.execute(RELEASE, self.session_id, self.holder)
