"""ChatRecordingService on PostgreSQL (design: ChatRecordingService; part of the
session store seam, `runtime.services.session_store`).

The record's lines are the JSONL store's, each one row of `adk_records` instead of
one line of a file. The recorder writes synchronously (`record_message`,
`set_metadata`, `rewind_to`), so a line is serialized at once (later changes to the
message cannot alter it) and queued; one writer task per session inserts what is
queued, in order, a batch per round trip, only while this process holds the
session's lease. A `kill -9` loses at most the lines queued and not yet inserted,
like the line being written of a file. A database that does not answer is retried
until the session closes (then what is still queued is logged as lost).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.services.recording import ChatRecordingService, ConversationRecord

if TYPE_CHECKING:
    from runtime.services.pg.lease import Lease

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 10.0
"""How long closing waits for queued lines to reach the database."""
RETRY_MAX_S = 5.0

_closing: set[asyncio.Task[None]] = set()  # closes started from sync code, kept alive

Append = Callable[[str, str, list[str]], Awaitable[bool]]
"""The store's insert: (session id, lease holder, lines) → False if the lease is gone."""


class PgChatRecording(ChatRecordingService):
    """One session's record in PostgreSQL, driven under `lease` (module docstring)."""

    def __init__(self, append: Append, record: ConversationRecord, lease: Lease) -> None:
        self.path = Path(f"postgresql:{record.session_id}")
        self._remember(record)
        self._fd = None
        self._append = append
        self.lease = lease
        self._closed = False
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._writer = loop.create_task(self._drain(), name=f"record {record.session_id}")
        lease.keep()

    # ------------------------------------------------------------ writing

    def _write(self, line: Mapping[str, Any]) -> None:
        if self._closed:
            logger.warning("session %s is closed; a record line was not written", self.session_id)
            return
        self._queue.put_nowait(json.dumps(line, ensure_ascii=False, separators=(",", ":")))

    def _write_raw(self, data: bytes) -> None:
        raise NotImplementedError("a database record has no raw lines")

    async def _drain(self) -> None:
        done = False
        while not done:
            first = await self._queue.get()
            batch = [] if first is None else [first]
            done = first is None
            while not done and not self._queue.empty():
                line = self._queue.get_nowait()
                done = line is None
                if line is not None:
                    batch.append(line)
            if batch:
                await self._insert(batch)

    async def _insert(self, batch: list[str]) -> None:
        delay = 0.1
        while True:
            if self.lease.lost:
                logger.error("session %s: %d record line(s) dropped", self.session_id, len(batch))
                return
            try:
                written = await self._append(self.session_id, self.lease.holder, batch)
            except Exception as exc:  # noqa: BLE001 - asyncpg's and the socket's errors: retried
                logger.warning("cannot write the record of %s (retrying): %s", self.session_id, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            if not written:
                self.lease.lost = True
                continue  # logged and dropped above
            return

    async def still_driving(self) -> bool:
        """The lease renewed now (a turn starts): False once another process took it."""
        if self.lease.lost:
            return False
        try:
            if not await self.lease.renew():
                self.lease.lost = True
        except Exception as exc:  # noqa: BLE001 - the database unreachable: lines are fenced anyway
            logger.warning("cannot renew the lease of %s: %s", self.session_id, exc)
        return not self.lease.lost

    # ------------------------------------------------------------ closing

    def close(self) -> None:
        """Start closing (sync callers); `aclose` waits for it."""
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._writer), CLOSE_WAIT_S)
        except TimeoutError:
            self._writer.cancel()
            logger.error(
                "session %s: the database did not take its last record lines; they are lost",
                self.session_id,
            )
        try:
            await self.lease.release()
        except Exception as exc:  # noqa: BLE001 - it expires by itself
            logger.warning("cannot let go of the lease of %s: %s", self.session_id, exc)
