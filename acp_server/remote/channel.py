"""SessionChannel: one hub session's link to the clients attached to it.

It is the `ClientLink` the session's `AcpSession` and `AcpHost` speak through.
Every update goes to every attached client and into a bounded log, numbered by a
cursor carried in `_meta.adkAcp.cursor`, so a client that comes back can be sent
what it missed (`replay_since`). A cursor is the update's time in microseconds
since the epoch, strictly increasing per session: a cursor from before this channel
(`opened`: another instance drove the session, or it was let go and opened again)
names a point in the session's recorded history instead (`turns.after_reopen`).
A request (a permission question) goes to every attached client and to each that
attaches while it waits; the first answer wins and the others get `$/cancel_request`
for their copy. With no client attached, a request
waits `permission_timeout_s` for one to come, then fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pygls.exceptions import JsonRpcException

from acp_server.errors import INTERNAL_ERROR
from acp_server.transport import ACP_CANCEL_REQUEST, JsonRpcConnection, dump

logger = logging.getLogger(__name__)

UPDATE_LOG_SIZE = 5000
"""Updates kept per session for clients that come back."""

_only_to: ContextVar[tuple[JsonRpcConnection, asyncio.Task[Any] | None] | None] = ContextVar(
    "adk_acp_only_to", default=None
)


@contextlib.contextmanager
def only_to(conn: JsonRpcConnection) -> Iterator[None]:
    """Inside this block, the notifications this task sends go to `conn` alone: a
    `session/load`'s replay is for the client that asked. (Tasks started meanwhile
    inherit the variable but not the task, so they still send to everyone.)"""
    token = _only_to.set((conn, asyncio.current_task()))
    try:
        yield
    finally:
        _only_to.reset(token)


@dataclass
class _Question:
    """One request to the clients, asked of each attached one."""

    method: str
    params: Any
    answer: asyncio.Future[Any]
    asked: dict[JsonRpcConnection, tuple[str, asyncio.Task[Any]]] = field(default_factory=dict)


class SessionChannel:
    """Fan-out of one session to its attached clients (see the module docstring)."""

    def __init__(self, session_id: str, permission_timeout_s: float) -> None:
        self.session_id = session_id
        self.permission_timeout_s = permission_timeout_s
        self.clients: list[JsonRpcConnection] = []
        self._log: deque[tuple[int, dict[str, Any]]] = deque(maxlen=UPDATE_LOG_SIZE)
        self.opened = now_cursor()
        self._cursor = self.opened - 1
        self.last_activity = asyncio.get_running_loop().time()
        """When a client came or went, or an update or question went out (loop time)."""
        self._questions: list[_Question] = []
        self._some_client = asyncio.Event()
        self._no_client = asyncio.Event()
        self._no_client.set()

    @property
    def cursor(self) -> int:
        return self._cursor

    @property
    def asking(self) -> bool:
        """A question (a permission request) waits for an answer."""
        return bool(self._questions)

    def _touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    # ------------------------------------------------------------ clients

    def attach(self, conn: JsonRpcConnection) -> None:
        """Add a client (once); the questions waiting for an answer are asked of it too."""
        if conn in self.clients:
            return
        self._touch()
        self.clients.append(conn)
        self._some_client.set()
        self._no_client.clear()
        for question in self._questions:
            self._ask(question, conn)

    def detach(self, conn: JsonRpcConnection) -> None:
        """A client left: its copies of the questions are forgotten; the turn runs on."""
        if conn not in self.clients:
            return
        self._touch()
        self.clients.remove(conn)
        for question in self._questions:
            asked = question.asked.pop(conn, None)
            if asked is not None:
                asked[1].cancel()
        if not self.clients:
            self._some_client.clear()
            self._no_client.set()

    # ------------------------------------------------------------ updates

    def notify(self, method: str, params: Any) -> None:
        data = dump(params)
        target = _only_to.get()
        if target is not None and target[1] is asyncio.current_task():
            target[0].notify(method, data)
            return
        self._touch()
        if method == "session/update" and isinstance(data, dict):
            self._cursor = max(self._cursor + 1, now_cursor())
            meta = dict(data.get("_meta") or {})
            meta["adkAcp"] = {**(meta.get("adkAcp") or {}), "cursor": self._cursor}
            data = {**data, "_meta": meta}
            self._log.append((self._cursor, data))
        for conn in list(self.clients):
            conn.notify(method, data)

    def replay_since(self, conn: JsonRpcConnection, cursor: int) -> int:
        """Send `conn` the logged updates after `cursor`; how many were sent. Updates
        older than the log keeps are gone (the record's `session/load` has them)."""
        sent = 0
        for number, data in list(self._log):
            if number > cursor:
                conn.notify("session/update", data)
                sent += 1
        return sent

    # ------------------------------------------------------------ requests

    async def request(self, method: str, params: Any) -> Any:
        loop = asyncio.get_running_loop()
        question = _Question(method, dump(params), loop.create_future())
        self._questions.append(question)
        self._touch()
        for conn in list(self.clients):
            self._ask(question, conn)
        try:
            return await self._answer(question)
        finally:
            self._questions.remove(question)
            self._touch()
            for conn, (msg_id, task) in question.asked.items():
                if not task.done():
                    task.cancel()
                    conn.notify(ACP_CANCEL_REQUEST, {"requestId": msg_id})

    def _ask(self, question: _Question, conn: JsonRpcConnection) -> None:
        msg_id = f"hub-{uuid.uuid4().hex[:12]}"
        task = asyncio.ensure_future(conn.request(question.method, question.params, msg_id))
        question.asked[conn] = (msg_id, task)

        def answered(done: asyncio.Task[Any]) -> None:
            if done.cancelled() or question.answer.done():
                return
            exc = done.exception()
            if exc is not None:
                question.answer.set_exception(exc)
            else:
                question.answer.set_result(done.result())

        task.add_done_callback(answered)

    async def _answer(self, question: _Question) -> Any:
        while not question.answer.done():
            if self.clients:
                await _first(question.answer, self._no_client.wait())
                continue
            came = await _first(
                question.answer, self._some_client.wait(), timeout=self.permission_timeout_s
            )
            if not came:
                raise JsonRpcException(
                    code=INTERNAL_ERROR,
                    message=f"no client was attached to answer {question.method} "
                    f"within {self.permission_timeout_s:g} s",
                )
        return question.answer.result()


def now_cursor() -> int:
    """A cursor for now: microseconds since the epoch (exact in a JSON number)."""
    return time.time_ns() // 1000


async def _first(
    answer: asyncio.Future[Any], other: Awaitable[Any], timeout: float | None = None
) -> bool:
    """Wait until `answer` is done or `other` completes; False if `timeout` ran out."""
    waiter = asyncio.ensure_future(other)
    try:
        done, _ = await asyncio.wait(
            {answer, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
    return bool(done)
