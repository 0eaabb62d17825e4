"""HubUpkeep: a serving process lets go of sessions nobody uses (part of the remote
layer's `SessionHub`).

Every tick it looks at the hub's sessions. A session is *quiet* when no client is
attached, no turn runs and no question waits. A quiet session is dropped from the
hub after `idle_timeout_s` without activity: closed here (its engine, its MCP
servers), its lease let go; its record stays in the store and any client (on any
instance sharing the store) resumes it later.

With a store several instances share (`LeaseHandoff`: PostgreSQL), another instance
may ask for a session this one holds (a client resumed it there). A quiet session is
then dropped at once, so the other instance takes its lease; a session with a client
attached here, or a question waiting here for an answer, is kept, and the other
instance is told why (its client gets a clear error). A turn running here with
nobody attached is let go when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from acp_server.handoff import Busy, answer_asks, busy, poll
from acp_server.state import one_at_a_time
from runtime.services.session_store import LeaseHandoff

if TYPE_CHECKING:
    from acp_server.remote.hub import SessionHub

logger = logging.getLogger(__name__)

HANDOFF_POLL_S = 0.5
"""How often a store shared with other instances is asked which sessions they wait for."""


class HubUpkeep:
    """The hub's housekeeping task (see the module docstring)."""

    def __init__(self, hub: SessionHub, idle_timeout_s: float) -> None:
        self.hub = hub
        self.idle_timeout_s = idle_timeout_s
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="hub upkeep")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        async def tick() -> bool:
            await self.tick()
            return True

        period = min(HANDOFF_POLL_S, max(0.05, self.idle_timeout_s / 4))
        await poll(period, tick, "the hub's upkeep")

    def quiet(self, session_id: str) -> Busy | None:
        """None when nobody uses the session here; otherwise why it is kept."""
        return busy(self.hub.sessions.get(session_id), self.hub.channels.get(session_id))

    async def tick(self) -> None:
        loop = asyncio.get_running_loop()
        for session_id in list(self.hub.sessions):
            channel = self.hub.channels.get(session_id)
            idle_since = channel.last_activity if channel is not None else 0.0
            if self.quiet(session_id) is None and loop.time() - idle_since >= self.idle_timeout_s:
                await self.drop(session_id, "idle")
        if not self.hub.sessions:
            return
        store = self.hub.service.records()
        if isinstance(store, LeaseHandoff):
            await answer_asks(store, self._refusal)

    async def _refusal(self, session_id: str) -> tuple[str, str | None] | None:
        if session_id not in self.hub.sessions:
            return None  # not here
        why = self.quiet(session_id)
        if why is None:
            await self.drop(session_id, "asked for by another instance")
            return None
        if why is Busy.TURN:  # a running turn's session goes when it ends
            return None
        channel = self.hub.channels.get(session_id)
        return why.told(clients=len(channel.clients) if channel else 0), None

    async def drop(self, session_id: str, why: str) -> None:
        """Close a session nobody uses here; its lease goes with it. Under the lock its
        openings take: one being opened here is not let go (a client came meanwhile),
        and one being let go is opened again only once it is closed and its lease free."""
        async with one_at_a_time(self.hub.opening, session_id):
            if self.quiet(session_id) is not None:
                return
            session = self.hub.remove(session_id)
            if session is None:
                return
            self.dropped += 1
            logger.info("session %s let go (%s)", session_id, why)
            await session.close()
