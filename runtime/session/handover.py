"""Handover: one session's lease let go to another process and taken back (part of the
session lifecycle, over the store's `LeaseHandoff`: PostgreSQL).

A process driving a session on a shared store holds the session's lease. When another
process asks for it, the face decides (an editor's agent over stdio:
`acp_server/handoff.py`; `serve`: `acp_server/remote/upkeep.py`): an idle session is
let go, a busy one kept. Busy (`busy`) is a stream running, or work on the session
marked with `in_use`: a slash command (`/compress` calls the model, then records its
summary), a prompt until its stream starts (an automatic compaction runs there);
`let_go` checks it again under its lock, so work that started after the face looked
is kept too. Letting go here (`let_go`) keeps the engine and the editor's session:
the lines queued for the record are written, the lease is released, and the session
is *handed over*: nothing more is recorded from it. Before the session is used
again (a prompt, a command, a title or model change, a load), `drive` takes the lease
back (waiting for the other process to let go, or raising its `SessionLeasedError`),
reads the record again (what the other process added meanwhile) and starts the
recorder and the model's history over from it; the mode and model the editor shows
are kept, and recorded when the other process changed them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from runtime.errors import RuntimeAgentError

if TYPE_CHECKING:
    from runtime.adk.recorder import SessionRecorder
    from runtime.services.recording import Message
    from runtime.session.spec import SessionSpec

logger = logging.getLogger(__name__)


class _Stream(Protocol):
    @property
    def active(self) -> bool: ...


class HandedSession(Protocol):
    """What a handover needs of its session (`AgentSession`)."""

    @property
    def id(self) -> str: ...
    @property
    def spec(self) -> SessionSpec: ...
    @property
    def recorder(self) -> SessionRecorder | None: ...
    @property
    def protocol(self) -> _Stream: ...
    @property
    def mode(self) -> str: ...
    @property
    def model_choice(self) -> str: ...
    async def restore(self, messages: list[Message], live: Any = None) -> None: ...


class SessionGoneError(RuntimeAgentError):
    """The session's record was deleted while another process drove it."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} was deleted by another adk-acp process while it drove it"
        )


class Handover:
    """One session's lease let go and taken back (see the module docstring)."""

    def __init__(self, session: HandedSession) -> None:
        self._session = session
        self._lock = asyncio.Lock()
        self.handed_over = False
        """The lease was let go: the record belongs to another process until `drive`."""
        self._users = 0

    @property
    def busy(self) -> bool:
        """A stream runs, or work marked with `in_use` does: not to be let go."""
        return self._users > 0 or self._session.protocol.active

    @contextlib.asynccontextmanager
    async def in_use(self) -> AsyncIterator[None]:
        """Work on the session (a slash command, a prompt until its stream runs): the
        lease taken back first (`drive`), and the session not let go until it ends."""
        await self.drive()
        self._users += 1  # no await since `drive` ended: no let-go came in between
        try:
            yield
        finally:
            self._users -= 1

    async def let_go(self) -> bool:
        """Write what is queued and release the lease, keeping the engine; False (and
        nothing done) when the session is not in a shared store or is `busy`."""
        session = self._session
        recorder = session.recorder
        if self.handed_over or recorder is None or session.spec.records is None:
            return False
        async with self._lock:
            if self.handed_over or self.busy:
                return False
            self.handed_over = True
            await recorder.recording.aclose()
        logger.info("session %s handed over to another process", session.id)
        return True

    async def drive(self) -> None:
        """Take the lease back if it was let go, and start over from the record."""
        if not self.handed_over:
            return
        async with self._lock:
            if self.handed_over:
                await self._take_back()

    async def _take_back(self) -> None:
        session = self._session
        records, recorder = session.spec.records, session.recorder
        assert records is not None and recorder is not None
        opened = await records.open(session.id)  # SessionLeasedError: the other keeps it
        if opened is None:
            raise SessionGoneError(session.id)
        recording, record = opened
        try:
            await session.restore(list(record.messages))
        except BaseException:
            await recording.aclose()  # its lease let go again: still handed over
            raise
        session.spec.recording = recording
        recorder.switch(recording)
        shown = {"mode": session.mode, "modelChoice": session.model_choice}
        changed = {k: v for k, v in shown.items() if record.metadata.get(k) != v}
        if changed:
            recording.set_metadata(**changed)
        self.handed_over = False
        logger.info(
            "session %s taken back (%d recorded messages)", session.id, len(record.messages)
        )
