"""StdioHandoff: an editor's agent (stdio) on a store several processes share answers
their asks for the sessions it drives (the ACP face of the store's `LeaseHandoff`;
`remote/upkeep.py` is `serve`'s).

Every `POLL_S`, while sessions are open on a PostgreSQL store, it asks the store which
of this process's sessions another process waits for (a `serve` client or another
editor resumed one there). An idle one is handed over (`AgentSession.handover`: its
queued record lines written, its lease let go, the session still open in the editor,
taken back at its next use); a busy one (a turn running, a permission question waiting
for the editor, a slash command running: `/compress` calls the model) is kept, and the
other process is told why and where, at once. The session's own check under its lock
(`Handover.let_go`) keeps one whose command or turn started after this one looked.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from runtime.services.session_store import LeaseHandoff

if TYPE_CHECKING:
    from acp_server.session import AcpSession
    from acp_server.state import ServerState

logger = logging.getLogger(__name__)

POLL_S = 0.5
"""How often the store is asked which sessions other processes wait for."""
WHERE = "in an editor (adk-acp over stdio)"
ADVICE = "let it end there (or cancel it, or close the session in that editor) and try again"


def busy(session: AcpSession) -> str | None:
    """None when the session is idle here; otherwise why it is kept, and where."""
    if session.asking:
        return f"a permission request waits there for an answer, {WHERE}"
    if session.running:
        return f"a turn runs there, {WHERE}"
    if session.agent.handover.busy:
        return f"a command runs there, {WHERE}"
    return None


class StdioHandoff:
    """The stdio server's answers to hand-off asks (see the module docstring)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def run(self) -> None:
        """Until cancelled (the server's end), or for good on a store of one process."""
        while True:
            await asyncio.sleep(POLL_S)
            try:
                if not await self.tick():
                    return  # a store nobody else shares: nothing will ever be asked
            except Exception:  # the next tick tries again; the server keeps serving
                logger.exception("answering hand-off asks failed")

    async def tick(self) -> bool:
        """Answer the asks waiting now; False when the store is not a shared one."""
        if not self.state.sessions:
            return True  # the store is resolved by the first session (no start-up cost)
        store = self.state.service.records()
        if not isinstance(store, LeaseHandoff):
            return False
        for session_id in await store.wanted():
            session = self.state.sessions.get(session_id)
            if session is None:
                continue
            why = busy(session)
            if why is None and await session.agent.handover.let_go():
                continue
            why = why or busy(session) or f"a turn runs there, {WHERE}"
            await store.refuse(session_id, why, ADVICE)
        return True
