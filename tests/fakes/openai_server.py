"""A fake OpenAI-compatible server (and a fake Ollama) on 127.0.0.1, in the real wire format.

The real `openai` client (which ADK's `OpenAILlm` drives, and so adk-acp with
`--model openai/NAME` or `ollama/NAME`) talks to it unchanged: point
`OPENAI_BASE_URL` at `server.base_url` (`http://127.0.0.1:PORT/v1`), or
`OLLAMA_HOST` at `server.root_url` for the Ollama flavour.

Routes:

- `POST /v1/chat/completions`: without `stream` one `chat.completion` JSON; with
  `stream: true`, `text/event-stream` frames `data: <chat.completion.chunk>\\n\\n`
  ending in `data: [DONE]`: the role, then each text delta (`content`), reasoning delta
  (`reasoning_content`, as vLLM and DeepSeek send it) and tool-call delta (the first
  with `id`, `type` and `function.name`, then the arguments in pieces, by `index`;
  several calls in one answer are parallel tool calls), the finish reason, and, when
  the request asked for `stream_options.include_usage`, a last chunk with `usage` and
  no choices;
- `GET /v1/models`: the `models` given (`{"object": "list", "data": [...]}`);
- Ollama flavour (`FakeOpenAIServer(flavor="ollama")`): also `GET /api/tags` and
  `GET /api/version`, as Ollama serves them beside its OpenAI-compatible `/v1`.

A script of `Reply` objects is consumed in order, one per chat call; with the script
empty, `default` answers. A reply may be an error (`error_reply`: HTTP status, OpenAI's
error body, headers such as `retry-after`), may drop the connection after N chunks
(`drop_after`), wait between chunks (`chunk_delay`) or wait at a `HangPoint` until
released (cancel tests). Every request is recorded (`RecordedChat`).

Two ways to run it, as `gemini_server.FakeGeminiServer`:

    async with FakeOpenAIServer([text_reply(["Hel", "lo"])]) as server:   # this loop
    with FakeOpenAIServer(script) as server:                             # its own thread

Command line (benchmarks): `python -m tests.fakes.openai_server --port 0
[--default-text TEXT] [--chunks N]` prints the base URL on its first stdout line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

from aiohttp import web

Flavor = Literal["openai", "ollama"]


@dataclass(frozen=True)
class ToolCall:
    """One function call of an answer; its JSON arguments are streamed in `pieces` parts."""

    name: str
    arguments: dict[str, Any]
    id: str = ""
    pieces: int = 3


@dataclass
class HangPoint:
    """The server waits here until `release()`; `reached` is set when a request gets here."""

    reached: threading.Event = field(default_factory=threading.Event)
    _go: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self._go.set()

    async def wait(self) -> None:
        self.reached.set()
        while not self._go.is_set():
            await asyncio.sleep(0.02)


@dataclass
class Reply:
    """One chat call's answer (a stream or, for a non-stream call, merged into one)."""

    text: Sequence[str] = ()
    reasoning: Sequence[str] = ()
    tool_calls: Sequence[ToolCall] = ()
    finish: str | None = None
    usage: tuple[int, int] | None = (12, 5)
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    chunk_delay: float = 0.0
    hang: HangPoint | None = None
    hang_after: int = 1

    def finish_reason(self) -> str:
        if self.finish is not None:
            return self.finish
        return "tool_calls" if self.tool_calls else "stop"


def text_reply(chunks: Sequence[str], **options: Any) -> Reply:
    return Reply(text=tuple(chunks), **options)


def tool_reply(*calls: ToolCall, text: Sequence[str] = (), **options: Any) -> Reply:
    return Reply(text=tuple(text), tool_calls=calls, **options)


def error_reply(
    status: int,
    message: str,
    *,
    type_: str = "server_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`."""
    body = {"message": message, "type": type_, "param": None, "code": code}
    return Reply(status=status, error=body, headers=dict(headers or {}), usage=None)


def rate_limited(retry_after_s: float = 1) -> Reply:
    return error_reply(
        429,
        "Rate limit reached for requests. Please try again later.",
        type_="requests",
        code="rate_limit_exceeded",
        headers={"retry-after": f"{retry_after_s:g}"},
    )


def context_too_long(limit: int = 8192, got: int = 9000) -> Reply:
    return error_reply(
        400,
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {got} tokens. Please reduce the length of the messages.",
        type_="invalid_request_error",
        code="context_length_exceeded",
    )


@dataclass(frozen=True)
class RecordedChat:
    """One request the server got: its path, JSON body and headers (lower-case names)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools") or []]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


class FakeOpenAIServer:
    """The fake server; `base_url` is its `/v1` URL, `root_url` the bare host."""

    def __init__(
        self,
        script: Sequence[Reply] = (),
        *,
        models: Sequence[str] = ("fake-model",),
        default: Reply | None = None,
        flavor: Flavor = "openai",
    ) -> None:
        self.script: deque[Reply] = deque(script)
        self.models = list(models)
        self.default = default or text_reply(["Hello", " from the fake model."])
        self.flavor = flavor
        self.requests: list[RecordedChat] = []
        self.served_models: int = 0
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = threading.Event()
        self.port = 0

    # ------------------------------------------------------------ life

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def chats(self) -> list[RecordedChat]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_chats(self, count: int, timeout: float = 30) -> list[RecordedChat]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.chats()
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise TimeoutError(f"{len(self.chats())} chat requests, expected {count}")

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        if self.flavor == "ollama":
            app.router.add_get("/api/tags", self._tags)
            app.router.add_get("/api/version", self._version)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self._app(), handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def start_in_thread(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self.start())
            ready.set()
            try:
                loop.run_until_complete(self._until_stopped())
                loop.run_until_complete(self.close())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the fake OpenAI server did not start")

    async def _until_stopped(self) -> None:
        while not self._stopped.is_set():
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        self.start_in_thread()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------ routes

    def _record(self, request: web.Request, body: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            self.requests.append(RecordedChat(request.path, body, headers))

    def _next(self) -> Reply:
        with self._lock:
            return self.script.popleft() if self.script else self.default

    async def _models(self, request: web.Request) -> web.Response:
        self._record(request, {})
        with self._lock:
            self.served_models += 1
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _tags(self, request: web.Request) -> web.Response:
        self._record(request, {})
        data = [
            {"name": name, "model": name, "size": 1, "digest": "0" * 12, "details": {}}
            for name in self.models
        ]
        return web.json_response({"models": data})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.0.0-fake"})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "not JSON"}}, status=400)
        self._record(request, body)
        reply = self._next()
        if reply.error is not None:
            return web.json_response(
                {"error": reply.error}, status=reply.status, headers=reply.headers
            )
        model = str(body.get("model", ""))
        if not body.get("stream"):
            return web.json_response(_completion(reply, model))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            await self._stream(request, response, reply, model, include_usage)
        except ConnectionResetError:  # the client went away (a cancel): nothing to finish
            return response
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        reply: Reply,
        model: str,
        include_usage: bool,
    ) -> None:
        frames = _chunks(reply, model, include_usage)
        for index, frame in enumerate(frames):
            if reply.drop_after is not None and index >= reply.drop_after:
                transport = request.transport
                if transport is not None:
                    transport.abort()  # the client sees the body end mid-stream
                return
            if reply.hang is not None and index == reply.hang_after:
                await reply.hang.wait()
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            await response.write(f"data: {json.dumps(frame)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()


# ------------------------------------------------------------ the wire shapes


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage(reply: Reply) -> dict[str, int] | None:
    if reply.usage is None:
        return None
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _chunks(reply: Reply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    frames = [_chunk(model, {"role": "assistant", "content": ""})]
    frames += [_chunk(model, {"reasoning_content": piece}) for piece in reply.reasoning]
    frames += [_chunk(model, {"content": piece}) for piece in reply.text]
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id or f"call_{index}"
        start = {"index": index, "id": call_id, "type": "function"}
        start["function"] = {"name": call.name, "arguments": ""}
        frames.append(_chunk(model, {"tool_calls": [start]}))
        for piece in _pieces(json.dumps(call.arguments), call.pieces):
            delta = {"index": index, "function": {"arguments": piece}}
            frames.append(_chunk(model, {"tool_calls": [delta]}))
    frames.append(_chunk(model, {}, reply.finish_reason()))
    usage = _usage(reply)
    if include_usage and usage is not None:
        frames.append(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    return frames


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason()}],
    }
    usage = _usage(reply)
    if usage is not None:
        body["usage"] = usage
    return body


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--default-text", default="Hello from the fake model.")
    parser.add_argument("--chunks", type=int, default=1, help="the default text in N chunks")
    parser.add_argument("--flavor", choices=("openai", "ollama"), default="openai")
    args = parser.parse_args(argv)
    default = text_reply(_pieces(args.default_text, args.chunks))
    server = FakeOpenAIServer(default=default, flavor=args.flavor)
    server.start_in_thread()
    print(server.base_url, flush=True)  # noqa: T201 - the command line's one output
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
