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
import enum
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from runtime.services.session_store import LeaseHandoff

if TYPE_CHECKING:
    from acp_server.remote.channel import SessionChannel
    from acp_server.session import AcpSession
    from acp_server.state import ServerState

logger = logging.getLogger(__name__)

POLL_S = 0.5
"""How often the store is asked which sessions other processes wait for."""
WHERE = "in an editor (adk-acp over stdio)"
ADVICE = "let it end there (or cancel it, or close the session in that editor) and try again"


class Busy(enum.Enum):
    """Why a session is kept where it is (the one answer to "is it busy", for the stdio
    agent and for `serve`'s hub alike); its value is what the other process is told."""

    OPENING = "it is opening there"
    CLIENTS = "client(s) attached there"
    ASKING = "a permission request waits there for an answer"
    TURN = "a turn runs there"
    COMMAND = "a command runs there"
    """A slash command (`/compress` calls the model): `Handover.busy` with no turn."""

    def told(self, where: str | None = None, clients: int = 0) -> str:
        text = f"{clients} {self.value}" if self is Busy.CLIENTS else self.value
        return f"{text}, {where}" if where else text


def busy(session: AcpSession | None, channel: SessionChannel | None = None) -> Busy | None:
    """None when nobody uses the session here; otherwise why it is kept. `channel`: the
    hub's fan-out of a `serve` session (its clients, its questions)."""
    if session is None:
        return Busy.OPENING
    if channel is not None and channel.clients:
        return Busy.CLIENTS
    if session.asking or (channel is not None and channel.asking):
        return Busy.ASKING
    if session.running or session.agent.protocol.active:
        return Busy.TURN
    if session.agent.handover.busy:
        return Busy.COMMAND
    return None


async def poll(period_s: float, tick: Callable[[], Awaitable[bool]], what: str) -> None:
    """`tick()` every `period_s` until cancelled, or until it answers False; a failing
    tick is logged and the next one tries again (the server keeps serving)."""
    while True:
        await asyncio.sleep(period_s)
        try:
            if not await tick():
                return
        except Exception:
            logger.exception("%s failed", what)


async def answer_asks(
    store: LeaseHandoff, refusal: Callable[[str], Awaitable[tuple[str, str | None] | None]]
) -> None:
    """Each session another process waits for: `refusal(id)` lets it go (None) or says
    why it is kept (and what to do), which the other process is told at once."""
    for session_id in await store.wanted():
        refused = await refusal(session_id)
        if refused is not None:
            await store.refuse(session_id, *refused)


class StdioHandoff:
    """The stdio server's answers to hand-off asks (see the module docstring)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def run(self) -> None:
        """Until cancelled (the server's end), or for good on a store of one process."""
        await poll(POLL_S, self.tick, "answering hand-off asks")

    async def tick(self) -> bool:
        """Answer the asks waiting now; False when the store is not a shared one."""
        if not self.state.sessions:
            return True  # the store is resolved by the first session (no start-up cost)
        store = self.state.service.records()
        if not isinstance(store, LeaseHandoff):
            return False
        await answer_asks(store, self._refusal)
        return True

    async def _refusal(self, session_id: str) -> tuple[str, str | None] | None:
        session = self.state.sessions.get(session_id)
        if session is None:
            return None  # not here (any more)
        why = busy(session)
        if why is None and await session.agent.handover.let_go():
            return None
        # `let_go` declined: a turn or a command started after the look
        why = why or busy(session) or Busy.TURN
        return why.told(WHERE), ADVICE
