"""One remote client (a connection) and the Streamable HTTP routing of its output.

`RemoteClient` is what every transport makes per connection: a `JsonRpcConnection`
whose output goes to `deliver` (a WebSocket frame, an SSE event) and a `RemoteState`
on the hub. Under Streamable HTTP a connection's output is split, as the RFD and the
TypeScript SDK's transport do it: messages about a session (their `params.sessionId`,
or answers to requests posted for a session) go to that session's SSE stream once
the client opened it (before that, as after a resume on a new connection, to the
connection's stream), the rest to the connection's stream; each stream buffers while
no receiver reads it, up to a byte limit past which the connection is closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from typing import IO, Any, cast

from acp_server.remote.hub import SessionHub
from acp_server.remote.tokens import Grant
from acp_server.stdio import Output
from acp_server.transport import JsonRpcConnection

logger = logging.getLogger(__name__)


class _Sink:
    """The byte stream `Output` writes to: each message (one line) to `deliver`."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self._deliver = deliver

    def write(self, data: bytes) -> int:
        self._deliver(data.rstrip(b"\n"))
        return len(data)

    def flush(self) -> None:
        return None


class RemoteClient:
    """One connection: its JSON-RPC connection and its state on the hub."""

    def __init__(self, hub: SessionHub, grant: Grant, deliver: Callable[[bytes], None]) -> None:
        self.grant = grant
        self.output = Output(cast(IO[bytes], _Sink(deliver)))
        self.conn = JsonRpcConnection(self.output)
        self.state = hub.connect(self.conn, grant)
        self.closed = False

    def feed(self, data: bytes) -> None:
        if not self.closed:
            self.conn.feed(data)

    async def close(self) -> None:
        """Stop writing and detach from the sessions (which run on)."""
        if self.closed:
            return
        self.closed = True
        self.output.closed = True
        await self.state.shutdown()


class Mailbox:
    """One SSE stream's messages: queued until its one receiver reads them."""

    def __init__(self, limit_bytes: int, overflow: Callable[[], None]) -> None:
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._bytes = 0
        self._limit = limit_bytes
        self._overflow = overflow
        self.receiving = False

    def put(self, data: bytes) -> None:
        self._bytes += len(data)
        if self._bytes > self._limit:
            logger.warning("a client read too slowly (%d bytes waiting); closing it", self._bytes)
            self._overflow()
            return
        self._queue.put_nowait(data)

    @property
    def empty(self) -> bool:
        return self._queue.empty()

    def end(self) -> None:
        self._queue.put_nowait(None)

    async def get(self) -> bytes | None:
        data = await self._queue.get()
        if data is not None:
            self._bytes -= len(data)
        return data


def _id_key(value: Any) -> str | None:
    if isinstance(value, str | int) and not isinstance(value, bool):
        return f"{type(value).__name__}:{value}"
    return None


def session_of(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    sid = params.get("sessionId") if isinstance(params, dict) else None
    return sid if isinstance(sid, str) else None


class HttpClient:
    """A Streamable HTTP connection: a `RemoteClient` with its streams and routes."""

    def __init__(self, hub: SessionHub, grant: Grant, buffer_bytes: int) -> None:
        self.id = uuid.uuid4().hex
        self._buffer_bytes = buffer_bytes
        self.streams: dict[str | None, Mailbox] = {}
        """None: the connection's stream; otherwise a session's."""
        self._routes: dict[str, str | None] = {}
        self._first_answer: tuple[str, asyncio.Future[dict[str, Any]]] | None = None
        self.client = RemoteClient(hub, grant, self._route)
        self.idle_close: asyncio.TimerHandle | None = None

    def stream(self, session_id: str | None) -> Mailbox:
        box = self.streams.get(session_id)
        if box is None:
            box = Mailbox(self._buffer_bytes, self._overflow)
            self.streams[session_id] = box
        return box

    def _overflow(self) -> None:
        asyncio.ensure_future(self.close())

    async def initialize(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Feed the `initialize` request; its answer comes back here, not on a stream."""
        key = _id_key(message.get("id"))
        assert key is not None
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._first_answer = (key, future)
        self.client.feed(json.dumps(message).encode("utf-8"))
        return await asyncio.wait_for(future, timeout)

    def post(self, message: dict[str, Any], session_header: str | None) -> None:
        """A client message: a request's answer will go where the request was about."""
        if "method" in message:
            key = _id_key(message.get("id"))
            if key is not None:
                self._routes[key] = session_header or session_of(message)
        self.client.feed(json.dumps(message).encode("utf-8"))

    def _route(self, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            logger.warning("dropped an outgoing message that is not JSON")
            return
        if not isinstance(message, dict):
            return
        if "method" not in message:  # an answer
            key = _id_key(message.get("id"))
            if self._first_answer is not None and key == self._first_answer[0]:
                future = self._first_answer[1]
                self._first_answer = None
                if not future.done():
                    future.set_result(message)
                return
            target = self._routes.pop(key, None) if key is not None else None
        else:
            target = session_of(message)
        if target not in self.streams:  # its stream not opened yet (a resume on a new
            target = None  # connection): the connection's stream, as the SDKs expect
        self.stream(target).put(data)

    async def close(self) -> None:
        if self.idle_close is not None:
            self.idle_close.cancel()
        for box in self.streams.values():
            box.end()
        await self.client.close()
