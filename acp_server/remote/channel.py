"""SessionChannel: one hub session's link to the clients attached to it.

It is the `ClientLink` the session's `AcpSession` and `AcpHost` speak through.
Every update goes to every attached client and into a bounded log, numbered by a
cursor carried in `_meta.adkAcp.cursor`, so a client that comes back can be sent
what it missed (`replay_since`). A cursor is the update's time in microseconds
since the epoch, strictly increasing per session: a cursor from before this channel
(`opened`: another instance drove the session, or it was let go and opened again)
names a point in the session's recorded history instead (`turns.after_reopen`).
Each client gets the updates it opted in to at `initialize` (`ClientUpdates`, given at
`attach`): the session makes them for a client that takes every optional update
(`ClientUpdates.every`), and each is sent to a client without that opt-in in its
fallback form, or not at all (`updates_v121.client_form`), live, in `replay_since` and
in a load's replay alike. Doing it here, from updates made once, keeps one cursor per
update for every client and one translator per session; a client that opted in gets
its own kinds whichever client opened the session. A subagent's question in its child
session is asked of a client that does not follow subagents in this session.
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

from acp_server.errors import INTERNAL_ERROR, METHOD_NOT_FOUND
from acp_server.transport import ACP_CANCEL_REQUEST, JsonRpcConnection, dump
from acp_server.updates import ClientUpdates
from acp_server.updates_v121 import client_form

logger = logging.getLogger(__name__)

UPDATE_LOG_SIZE = 5000
"""Updates kept per session for clients that come back."""

EVERY = ClientUpdates.every()
FORM = "elicitation/create"

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
        self._takes: dict[JsonRpcConnection, ClientUpdates] = {}
        """What each attached client opted in to."""
        self._log: deque[tuple[int, dict[str, Any]]] = deque(maxlen=UPDATE_LOG_SIZE)
        """The updates sent, as made (not yet in any client's form), by cursor."""
        self.opened = now_cursor()
        self._cursor = self.opened - 1
        self._dropped = False
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
    def log_start(self) -> int:
        """From this cursor on the log holds every update sent: since the channel
        opened, or since its oldest kept update once the log dropped older ones."""
        if self._dropped and self._log:
            return self._log[0][0]
        return self.opened

    @property
    def asking(self) -> bool:
        """A question (a permission request) waits for an answer."""
        return bool(self._questions)

    def _touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    # ------------------------------------------------------------ clients

    def attach(self, conn: JsonRpcConnection, takes: ClientUpdates = EVERY) -> None:
        """Add a client (once) that opted in to `takes`; the questions waiting for an
        answer are asked of it too."""
        self._takes[conn] = takes
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
        self._takes.pop(conn, None)
        for question in self._questions:
            asked = question.asked.pop(conn, None)
            if asked is not None:
                asked[1].cancel()
        if not self.clients:
            self._some_client.clear()
            self._no_client.set()

    # ------------------------------------------------------------ updates

    def notify(self, method: str, params: Any) -> None:
        made = params if isinstance(params, dict) else dump(params)
        target = _only_to.get()
        if target is not None and target[1] is asyncio.current_task():
            for data in self._form(target[0], method, made, None):
                target[0].notify(method, data)
            return
        self._touch()
        cursor = None
        if method == "session/update" and isinstance(made, dict):
            self._cursor = cursor = max(self._cursor + 1, now_cursor())
            self._dropped = self._dropped or len(self._log) == self._log.maxlen
            self._log.append((cursor, made))
        forms: dict[ClientUpdates, list[Any]] = {}
        for conn in list(self.clients):
            takes = self._takes.get(conn, EVERY)
            if takes not in forms:
                forms[takes] = self._form(conn, method, made, cursor)
            for data in forms[takes]:
                conn.notify(method, data)

    def replay_since(self, conn: JsonRpcConnection, cursor: int) -> int:
        """Send `conn` the logged updates after `cursor`, in its form; how many were
        sent. Updates older than the log keeps are gone (the record's `session/load`
        has them)."""
        sent = 0
        for number, made in list(self._log):
            if number > cursor:
                for data in self._form(conn, "session/update", made, number):
                    conn.notify("session/update", data)
                    sent += 1
        return sent

    def _form(
        self, conn: JsonRpcConnection, method: str, made: Any, cursor: int | None
    ) -> list[Any]:
        """`made` as `conn`'s client takes it (see the module docstring), as JSON; a
        `session/update` with its `cursor` in `_meta.adkAcp.cursor`."""
        if method != "session/update" or not isinstance(made, dict):
            return [dump(made)]
        out = []
        for params in client_form(made, self.session_id, self._takes.get(conn, EVERY)):
            data = dump(params)
            if cursor is not None:
                meta = dict(data.get("_meta") or {})
                meta["adkAcp"] = {**(meta.get("adkAcp") or {}), "cursor": cursor}
                data = {**data, "_meta": meta}
            out.append(data)
        return out

    # ------------------------------------------------------------ requests

    async def request(self, method: str, params: Any) -> Any:
        if method == FORM and not all(self._takes.get(c, EVERY).forms for c in self.clients):
            # One follower can't answer a form: the asker falls back to a permission
            # request, which every client answers (`acp_server.fallback`).
            raise JsonRpcException(
                code=METHOD_NOT_FOUND, message="a client of this session does not take forms"
            )
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
        if question.method == FORM and not self._takes.get(conn, EVERY).forms:
            return  # attached after the form was asked; the others answer it
        msg_id = f"hub-{uuid.uuid4().hex[:12]}"
        params = question.params
        asked_in = params.get("sessionId") if isinstance(params, dict) else None
        if asked_in not in (None, self.session_id) and not self._takes.get(conn, EVERY).subagents:
            params = {**params, "sessionId": self.session_id}  # a subagent's, asked here
        task = asyncio.ensure_future(conn.request(question.method, params, msg_id))
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
