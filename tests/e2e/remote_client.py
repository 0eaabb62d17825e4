"""Clients of `adk-acp serve` for the serve tests: a real `adk-acp serve` process on
loopback (`start_serve`), and `RemoteAcp`, a JSON-RPC client over WebSocket
(`RemoteAcp.websocket`) or Streamable HTTP (`RemoteAcp.http`) with the official
schema checked on every message the agent sends (`TrafficCheck`, as `acp_client`).

Agent requests (permission questions) wait in `asked` until the test answers them
(`answer`), unless `auto_permission` names an option kind to pick at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, JsonObject
from tests.e2e.official_schema import TrafficCheck, official_schema

TOKEN = "serve-test-token-0123456789abcdef"
READY = re.compile(rb"serving ACP on wss?://([\d.]+):(\d+)/acp")


class RemoteError(Exception):
    def __init__(self, method: str, error: JsonObject) -> None:
        super().__init__(f"{method}: {error.get('code')} {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")


@dataclass
class Served:
    """A running `adk-acp serve`."""

    process: asyncio.subprocess.Process
    host: str
    port: int
    stderr: bytearray = field(default_factory=bytearray)

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}/acp"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}/acp"

    def log(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()


def serve_env(home: Path, base_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    if base_url is not None:
        env |= {"GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": base_url}
    return env | extra


async def start_serve(home: Path, base_url: str | None, *args: str, **env: str) -> Served:
    """`adk-acp serve --port 0 ARGS` (with `--token TOKEN` unless ARGS give a token
    source); returns once it says where it listens."""
    home.mkdir(parents=True, exist_ok=True)
    token_given = any(a.startswith(("--token", "--insecure")) for a in args) or env.get(
        "ADK_ACP_TOKEN"
    )
    argv = [*AGENT_COMMAND, "serve", "--port", "0", *args]
    if not token_given:
        argv += ["--token", TOKEN]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=serve_env(home, base_url, **env),
        cwd=str(home),
    )
    assert process.stderr is not None
    served = Served(process, "", 0)
    asyncio.ensure_future(_read_all(process.stderr, served.stderr))
    for _ in range(1200):
        if match := READY.search(served.stderr):
            served.host, served.port = match.group(1).decode(), int(match.group(2))
            return served
        if process.returncode is not None:
            raise AssertionError(f"serve exited {process.returncode}: {served.log()}")
        await asyncio.sleep(0.05)
    raise AssertionError(f"serve did not start: {served.log()}")


async def _read_all(stream: asyncio.StreamReader, into: bytearray) -> None:
    while chunk := await stream.read(65536):
        into.extend(chunk)


def bearer(token: str | None = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class RemoteAcp:
    """One client connection: requests, the agent's updates and questions."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[Any, tuple[str, asyncio.Future[Any]]] = {}
        self.notifications: list[JsonObject] = []
        self.asked: asyncio.Queue[JsonObject] = asyncio.Queue()
        self.cancelled: list[Any] = []
        self.auto_permission: str | None = None
        self.violations: list[str] = []
        self._changed = asyncio.Event()
        schema = official_schema()
        self._check = TrafficCheck(schema) if schema is not None else None
        self._send: Callable[[JsonObject], Any] = lambda message: None
        self._close: Callable[[], Any] = lambda: None
        self.initialized: JsonObject = {}
        self.connection_id: str | None = None
        self.closed = asyncio.Event()
        """Set when the server ended the connection (the WebSocket, or the HTTP
        connection's own SSE stream)."""

    # ------------------------------------------------------------ transports

    @classmethod
    async def websocket(cls, url: str, token: str | None = TOKEN) -> RemoteAcp:
        client = cls()
        ws: ClientConnection = await connect(url, additional_headers=bearer(token))
        client._send = lambda message: ws.send(json.dumps(message))
        reader = asyncio.ensure_future(client._read_ws(ws))

        async def close() -> None:
            await ws.close()
            reader.cancel()

        client._close = close
        return client

    async def _read_ws(self, ws: ClientConnection) -> None:
        with contextlib.suppress(Exception):
            async for frame in ws:
                await self._received(json.loads(frame))
        self.closed.set()
        self._fail_all("the WebSocket closed")

    @classmethod
    async def http(
        cls, url: str, token: str | None = TOKEN, capabilities: JsonObject | None = None
    ) -> RemoteAcp:
        """Streamable HTTP: `initialize` is sent here (its answer is the POST's body)."""
        client = cls()
        http = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
        streams: dict[str | None, asyncio.Task[None]] = {}
        connection: dict[str, str] = {}

        def open_stream(session_id: str | None) -> None:
            if session_id in streams:
                return
            headers = {**bearer(token), "Accept": "text/event-stream", **connection}
            if session_id is not None:
                headers["Acp-Session-Id"] = session_id
            reading = client._read_sse(http, url, headers, ends_connection=session_id is None)
            streams[session_id] = asyncio.ensure_future(reading)

        async def send(message: JsonObject) -> None:
            params = message.get("params")
            sid = params.get("sessionId") if isinstance(params, dict) else None
            if isinstance(sid, str):
                open_stream(sid)
            headers = {**bearer(token), **connection}
            if isinstance(sid, str):
                headers["Acp-Session-Id"] = sid
            response = await http.post(url, json=message, headers=headers)
            if response.status_code != 202:
                client._fail_all(f"POST answered {response.status_code}: {response.text}")
            result = message.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                open_stream(result["sessionId"])

        init = client._request_message("initialize", _init_params(capabilities))
        response = await http.post(url, json=init, headers=bearer(token))
        if response.status_code != 200:
            await http.aclose()
            error = {"code": response.status_code, "message": response.text}
            raise RemoteError("initialize", error)
        connection["Acp-Connection-Id"] = response.headers["Acp-Connection-Id"]
        await client._received(response.json())
        client.initialized = response.json()["result"]
        client.connection_id = connection["Acp-Connection-Id"]
        client._send = send
        open_stream(None)

        async def close() -> None:
            with contextlib.suppress(httpx.HTTPError):
                await http.delete(url, headers={**bearer(token), **connection})
            for task in streams.values():
                task.cancel()
            await http.aclose()

        client._close = close
        return client

    async def _read_sse(
        self, http: httpx.AsyncClient, url: str, headers: dict[str, str], ends_connection: bool
    ) -> None:
        with contextlib.suppress(httpx.HTTPError):
            async with http.stream("GET", url, headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        await self._received(json.loads(line[6:]))
        if ends_connection:
            self.closed.set()

    # ------------------------------------------------------------ messages

    def _request_message(self, method: str, params: Any) -> JsonObject:
        msg_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self._waiting[msg_id] = (method, asyncio.get_running_loop().create_future())
        if self._check is not None:
            self._check.client_message(message)
        return message

    async def _received(self, message: JsonObject) -> None:
        waiting = self._waiting.pop(message.get("id"), None) if "method" not in message else None
        if self._check is not None:
            problem = self._check.agent_message(message, waiting[0] if waiting else None)
            if problem:
                self.violations.append(problem)
        if waiting is not None:
            if not waiting[1].done():
                waiting[1].set_result(message)
        elif message.get("method") == "$/cancel_request":
            self.cancelled.append(message["params"]["requestId"])
        elif "id" in message and "method" in message:
            if self.auto_permission and message["method"] == "session/request_permission":
                await self.answer(message, _pick(message, self.auto_permission))
            else:
                self.asked.put_nowait(message)
        elif "method" in message:
            self.notifications.append(message)
        self._changed.set()

    def _fail_all(self, why: str) -> None:
        for method, future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError(f"{method}: {why}"))

    async def request(self, method: str, params: Any, timeout: float = 90) -> Any:
        message = self._request_message(method, params)
        future = self._waiting[message["id"]][1]
        await self._send(message)
        answer = await asyncio.wait_for(future, timeout)
        if "error" in answer:
            raise RemoteError(method, answer["error"])
        return answer["result"]

    def start(self, method: str, params: Any) -> asyncio.Task[Any]:
        """A request in the background (its failure when the connection goes is expected)."""
        task = asyncio.ensure_future(self.request(method, params))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def answer(self, asked: JsonObject, result: JsonObject) -> None:
        message = {"jsonrpc": "2.0", "id": asked["id"], "result": result}
        if self._check is not None:
            self._check.client_message(message)
        await self._send(message)

    async def close(self) -> None:
        await self._close()

    # ------------------------------------------------------------ ACP helpers

    async def initialize(self, capabilities: JsonObject | None = None) -> JsonObject:
        """`initialize` as a v1 client with `capabilities` (none by default)."""
        result: JsonObject = await self.request("initialize", _init_params(capabilities))
        return result

    async def new_session(self, cwd: Path) -> str:
        result = await self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    def prompt_params(self, session_id: str, text: str) -> JsonObject:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}

    def updates(self, session_id: str, kind: str | None = None) -> list[JsonObject]:
        return [
            n["params"]["update"]
            for n in self.notifications
            if n.get("method") == "session/update"
            and n["params"].get("sessionId") == session_id
            and (kind is None or n["params"]["update"].get("sessionUpdate") == kind)
        ]

    def text_of(self, session_id: str) -> str:
        return "".join(
            u["content"].get("text", "")
            for u in self.updates(session_id, "agent_message_chunk")
            if u["content"].get("type") == "text"
        )

    def last_cursor(self) -> int:
        cursors = [
            n["params"].get("_meta", {}).get("adkAcp", {}).get("cursor", 0)
            for n in self.notifications
            if n.get("method") == "session/update"
        ]
        return max(cursors, default=0)

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 60) -> None:
        async def watch() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(watch(), timeout)


def _init_params(capabilities: JsonObject | None = None) -> JsonObject:
    return {"protocolVersion": 1, "clientCapabilities": capabilities or {}}


def _pick(asked: JsonObject, kind: str) -> JsonObject:
    option = next(o for o in asked["params"]["options"] if o["kind"] == kind)
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


@contextlib.asynccontextmanager
async def remote(
    kind: str, served: Served, token: str | None = TOKEN, capabilities: JsonObject | None = None
) -> AsyncIterator[RemoteAcp]:
    """An initialized client over `kind` ("ws" or "http") with `capabilities`, closed at
    the end; the agent's schema violations fail the test."""
    if kind == "ws":
        client = await RemoteAcp.websocket(served.ws_url, token)
        await client.initialize(capabilities)
    else:
        client = await RemoteAcp.http(served.http_url, token, capabilities)
    try:
        yield client
    finally:
        await client.close()
    assert not client.violations, client.violations
