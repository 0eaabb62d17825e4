"""The `/acp` endpoint of `adk-acp serve`: WebSocket and Streamable HTTP on one path,
as the "Streamable HTTP & WebSocket transport" RFD and the official SDKs do it.

- WebSocket: `GET /acp` with `Upgrade: websocket`; one JSON-RPC message per text frame
  both ways; the `101` answer names the connection (`Acp-Connection-Id`).
- Streamable HTTP: `POST /acp` carries each client message; `initialize` (without
  `Acp-Connection-Id`) is answered in the POST's body with the new connection's id in
  `Acp-Connection-Id`; every later POST names it and gets `202`. `GET /acp` with
  `Accept: text/event-stream` opens the connection's SSE stream, or a session's with
  `Acp-Session-Id`; `DELETE /acp` ends the connection.

Every request needs `Authorization: Bearer <token>` (401 otherwise) unless the server
runs with `--insecure-loopback` and no token; an HTTP connection answers only to the
token that opened it. Bodies and frames over `max_message_bytes` are refused (413; a
WebSocket closes with 1009), connections over `max_connections` get 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from acp_server.errors import INVALID_REQUEST
from acp_server.remote.clients import HttpClient, Mailbox, RemoteClient
from acp_server.remote.hub import SessionHub
from acp_server.remote.tokens import OPEN_GRANT, Grant, TokenBook

logger = logging.getLogger(__name__)

CONNECTION_HEADER = "Acp-Connection-Id"
SESSION_HEADER = "Acp-Session-Id"
SSE_KEEPALIVE_S = 15.0
INITIALIZE_TIMEOUT_S = 60.0
TOKEN_CHECK_S = 0.25
"""How often the token file is looked at for revoked tokens."""


@dataclass(frozen=True)
class Limits:
    max_connections: int = 64
    max_message_bytes: int = 16 * 1024 * 1024
    buffer_bytes: int = 64 * 1024 * 1024
    """Output waiting for a slow reader, per stream, before the connection is closed."""
    body_timeout_s: float = 10.0
    """A POST body must arrive within this (headers: the server's header deadline)."""
    idle_close_s: float = 30.0
    """An HTTP connection without its SSE stream for this long is closed."""


def _text(body: str, status: int) -> Response:
    return PlainTextResponse(body, status_code=status)


class AcpEndpoint:
    """The ASGI app (`app`) over one hub."""

    def __init__(self, hub: SessionHub, tokens: TokenBook | None, limits: Limits) -> None:
        self.hub = hub
        self.tokens = tokens
        self.limits = limits
        self.connections = 0
        self.http: dict[str, HttpClient] = {}
        self.closers: dict[RemoteClient, Callable[[], object]] = {}
        """How to close each open connection (WebSocket or HTTP), by its client."""
        self._watcher: asyncio.Task[None] | None = None
        self.outboxes: set[Mailbox] = set()
        """The WebSocket connections' queues (HTTP's are in each `HttpClient.streams`)."""
        self.app = Starlette(
            routes=[
                Route("/acp", self.on_http, methods=["GET", "POST", "DELETE"]),
                WebSocketRoute("/acp", self.on_websocket),
                Route("/healthz", self.on_health, methods=["GET"]),
            ]
        )

    def start(self) -> None:
        """Watch the token file: a connection whose token was taken out of it (or whose
        roots changed) is closed within `TOKEN_CHECK_S` of the change."""
        if self.tokens is not None and self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch_tokens(self.tokens))

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher

    async def _watch_tokens(self, tokens: TokenBook) -> None:
        while True:
            await asyncio.sleep(TOKEN_CHECK_S)
            if tokens.refresh():
                self.revoke(tokens.grants())

    async def flush(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until what the agent sent has left for its clients:
        every queue empty, or no reader to take it."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            boxes = [*self.outboxes, *(b for c in self.http.values() for b in c.streams.values())]
            if all(box.empty or not box.receiving for box in boxes):
                return
            await asyncio.sleep(0.02)

    def revoke(self, valid: frozenset[Grant]) -> None:
        """Close every connection whose grant is not in `valid`."""
        for client, close in list(self.closers.items()):
            if client.grant not in valid:
                logger.warning("closing a connection: its token was revoked (%s)", client.grant.key)
                self.closers.pop(client, None)
                close()

    def authorize(self, authorization: str | None) -> Grant | None:
        if self.tokens is None:
            return OPEN_GRANT
        return self.tokens.check(authorization)

    async def on_health(self, _request: Request) -> Response:
        return _text("ok", 200)

    # ------------------------------------------------------------ WebSocket

    async def on_websocket(self, ws: WebSocket) -> None:
        grant = self.authorize(ws.headers.get("authorization"))
        if grant is None:
            logger.info("refused a WebSocket without a valid token")
            await ws.send_denial_response(_unauthorized())
            return
        if self.connections >= self.limits.max_connections:
            await ws.send_denial_response(_text("Too many connections", 503))
            return
        self.connections += 1

        def overflow() -> None:
            asyncio.ensure_future(ws.close(1008, "the client read too slowly"))

        outbox = Mailbox(self.limits.buffer_bytes, overflow)
        self.outboxes.add(outbox)
        client = RemoteClient(self.hub, grant, outbox.put)
        self.closers[client] = lambda: asyncio.ensure_future(ws.close(1008, "token revoked"))
        sender: asyncio.Task[None] | None = None
        try:
            await ws.accept(
                headers=[(CONNECTION_HEADER.lower().encode(), uuid.uuid4().hex.encode())]
            )
            outbox.receiving = True
            sender = asyncio.ensure_future(_send_frames(ws, outbox))
            await _receive_frames(ws, client)
        finally:
            self.connections -= 1
            self.closers.pop(client, None)
            self.outboxes.discard(outbox)
            if sender is not None:
                sender.cancel()
            await client.close()

    # ------------------------------------------------------------ Streamable HTTP

    async def on_http(self, request: Request) -> Response:
        grant = self.authorize(request.headers.get("authorization"))
        if grant is None:
            logger.info("refused an HTTP request without a valid token")
            return _unauthorized()
        if request.method == "POST":
            return await self._post(request, grant)
        connection = self._connection(request, grant)
        if connection is None:
            return _text("Unknown or missing Acp-Connection-Id", 404)
        if request.method == "DELETE":
            self.http.pop(connection.id, None)
            self.closers.pop(connection.client, None)
            self.connections -= 1
            await connection.close()
            return Response(status_code=202)
        if "text/event-stream" not in request.headers.get("accept", "").lower():
            return _text("Not Acceptable", 406)
        box = connection.stream(request.headers.get(SESSION_HEADER))
        if box.receiving:
            return _text("Outbound stream already has an active receiver", 409)
        connection_stream = SESSION_HEADER.lower() not in request.headers
        return StreamingResponse(
            self._events(connection, box, connection_stream),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    def _connection(self, request: Request, grant: Grant) -> HttpClient | None:
        """The connection named by the request, if the same token opened it."""
        connection = self.http.get(request.headers.get(CONNECTION_HEADER, ""))
        if connection is None or connection.client.grant.key != grant.key:
            return None
        return connection

    async def _post(self, request: Request, grant: Grant) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return _text("Unsupported Media Type", 415)
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return _text("Invalid JSON", 400)
        if isinstance(message, list):
            error = {"code": INVALID_REQUEST, "message": "JSON-RPC batches are not supported"}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
        if not isinstance(message, dict):
            return _text("Invalid JSON-RPC message", 400)
        is_initialize = message.get("method") == "initialize" and "id" in message
        if CONNECTION_HEADER.lower() not in request.headers:
            if not is_initialize:
                return _text("Missing Acp-Connection-Id", 400)
            return await self._initialize(message, grant)
        connection = self._connection(request, grant)
        if connection is None:
            return _text("Unknown Acp-Connection-Id", 404)
        if is_initialize:
            return _text("Initialize not allowed on existing connection", 400)
        connection.post(message, request.headers.get(SESSION_HEADER))
        return Response(status_code=202)

    async def _body(self, request: Request) -> bytes | Response:
        limit = self.limits.max_message_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return _text(f"Message larger than {limit} bytes", 413)
        chunks: list[bytes] = []
        size = 0

        async def read() -> None:
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return
                chunks.append(chunk)

        try:
            await asyncio.wait_for(read(), self.limits.body_timeout_s)
        except TimeoutError:
            return _text("Request body too slow", 408)
        if size > limit:
            return _text(f"Message larger than {limit} bytes", 413)
        return b"".join(chunks)

    async def _initialize(self, message: dict[str, object], grant: Grant) -> Response:
        if self.connections >= self.limits.max_connections:
            return _text("Too many connections", 503)
        connection = HttpClient(self.hub, grant, self.limits.buffer_bytes)
        self.connections += 1
        self.http[connection.id] = connection
        self.closers[connection.client] = lambda: asyncio.ensure_future(self._drop(connection))
        try:
            answer = await connection.initialize(message, INITIALIZE_TIMEOUT_S)
        except TimeoutError:
            await self._drop(connection)
            return _text("Initialize failed", 500)
        self._close_when_idle(connection)
        return JSONResponse(answer, headers={CONNECTION_HEADER: connection.id})

    def _close_when_idle(self, connection: HttpClient) -> None:
        loop = asyncio.get_running_loop()
        connection.idle_close = loop.call_later(
            self.limits.idle_close_s, lambda: asyncio.ensure_future(self._drop(connection))
        )

    async def _drop(self, connection: HttpClient) -> None:
        self.closers.pop(connection.client, None)
        if self.http.pop(connection.id, None) is not None:
            self.connections -= 1
            logger.info("closed an HTTP connection without a reader")
        await connection.close()

    async def _events(
        self, connection: HttpClient, box: Mailbox, connection_stream: bool
    ) -> AsyncIterator[bytes]:
        box.receiving = True
        if connection_stream and connection.idle_close is not None:
            connection.idle_close.cancel()
        try:
            while True:
                try:
                    data = await asyncio.wait_for(box.get(), SSE_KEEPALIVE_S)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                if data is None:
                    return
                yield b"data: " + data + b"\n\n"
        finally:
            box.receiving = False
            if connection_stream and connection.id in self.http:
                self._close_when_idle(connection)


def _unauthorized() -> Response:
    return PlainTextResponse(
        "Unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"}
    )


async def _send_frames(ws: WebSocket, outbox: Mailbox) -> None:
    while True:
        data = await outbox.get()
        if data is None:
            return
        await ws.send_text(data.decode("utf-8"))


async def _receive_frames(ws: WebSocket, client: RemoteClient) -> None:
    """Text frames to the connection until the client goes; a binary frame closes it."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            await ws.close(1003, "ACP messages are text frames")
            return
        client.feed(text.encode("utf-8"))
