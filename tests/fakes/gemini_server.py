"""A fake Gemini API server on 127.0.0.1, speaking the real wire format.

The real `google-genai` client (and so ADK and our own generators) talks to it
unchanged: point `HttpOptions(base_url=server.base_url)` or the
`GOOGLE_GEMINI_BASE_URL` environment variable at it.

Routes (`{ver}` is v1, v1beta, v1beta1 or v1alpha; the Vertex shape
`/{ver}/projects/{p}/locations/{l}/publishers/google/models/{model}:...` is accepted too):

- `POST /{ver}/models/{model}:generateContent` → one JSON GenerateContentResponse;
- `POST /{ver}/models/{model}:streamGenerateContent?alt=sse` → `text/event-stream`,
  frames `data: <GenerateContentResponse JSON>\\r\\n\\r\\n` (genai splits on blank
  lines and strips `\\r`, so `\\n\\n` works as well);
- `POST /{ver}/models/{model}:countTokens` → `{"totalTokens": N}` (scripted or estimated).

Google Search grounding: script `grounded_response(...)` for the request that
carries `tools: [{googleSearch: {}}]` (`RecordedRequest.uses_google_search`); its
candidate has `groundingMetadata` in the wire format (a JSONL script line may carry
the same `groundingMetadata` in its candidate).

A script of `Reply` objects is consumed in order, one per generate call, whichever
kind the call is: a multi-chunk reply served to `generateContent` is merged into one
response. Every request is recorded (`RecordedRequest`).

Two ways to run it:

    async with FakeGeminiServer([text_response(["Hel", "lo"])]) as server:   # this loop
        ...server.base_url...

    with FakeGeminiServer(script) as server:        # own thread and loop; same as
        ...                                         # server.start_in_thread() / server.stop()

The thread mode serves a subprocess agent while the test blocks or runs another loop.
Script edits, the recorded list and the waits are thread-safe in both modes; the
blocking `wait_for_requests` must not be called from the server's own loop (use
`wait_for_requests_async` there).

Command line (manual runs, benchmarks)::

    python -m tests.fakes.gemini_server --port 0 --script FILE.jsonl [--default-text TEXT]

prints the base URL on its first stdout line and serves until SIGINT/SIGTERM. The
script uses Gemini CLI's `--fake-responses` JSONL, one model call per line::

    {"method": "generateContentStream", "response": [<GenerateContentResponse>, ...]}
    {"method": "generateContent", "response": <GenerateContentResponse>}
    {"method": "countTokens", "response": {"totalTokens": 12}}

plus an error line (our extension, also read by `runtime/models/fake_generator.py`)::

    {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "...", "details": [...]}}

served with HTTP status `error.code` (or `"httpStatus"` when present). A generate line
may also carry `"chunkDelayMs": 50` (pause before each chunk) and `"dropAfter": N`
(send N chunks, then drop the connection).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.fakes import gemini_errors as ge

logger = logging.getLogger(__name__)

_PATH_RE = re.compile(
    r"^/(?P<ver>v1(?:beta1?|alpha)?)/"
    r"(?P<vertex>(?:projects/[^/]+/locations/[^/]+/)?publishers/[^/]+/)?"
    r"models/(?P<model>[^/:]+):(?P<action>[A-Za-z]+)$"
)
_GENERATE_ACTIONS = {"generateContent", "streamGenerateContent"}


# ---------------------------------------------------------------- stream steps


@dataclass(frozen=True)
class Pause:
    """Sleep this long before the next step."""

    seconds: float


@dataclass(frozen=True)
class Drop:
    """Close the connection abruptly here (the client sees an incomplete body)."""


@dataclass(frozen=True)
class Garbage:
    """Write these raw bytes into the stream (default: an SSE frame that is not JSON)."""

    data: bytes = b"data: {this is not json\r\n\r\n"


class HangPoint:
    """A place in a reply where the server waits until `release()` (for cancel tests).

    `reached` is set when a request gets there; `client_gone` when the client closed
    the connection while it waited. Releasing is thread-safe. The server also stops
    waiting when it shuts down.
    """

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()
        self.client_gone = threading.Event()

    def release(self) -> None:
        self.released.set()

    # A deadline, not a pause: the first prompt of a fresh agent process waits for the
    # engine's imports (`session/new` is answered before them), seconds on a loaded
    # 2-core machine.
    def wait_reached(self, timeout: float = 30.0) -> bool:
        """Block until a request reaches this point; False on timeout."""
        return self.reached.wait(timeout)

    async def wait_reached_async(self, timeout: float = 30.0) -> None:
        """Wait (without blocking the loop) until a request reaches this point."""
        await _poll(self.reached.is_set, timeout, "no request reached the hang point")


Step = Mapping[str, Any] | Pause | Drop | Garbage | HangPoint


# ---------------------------------------------------------------- replies


@dataclass(frozen=True)
class Reply:
    """One scripted answer to one model call.

    `steps` are GenerateContentResponse dicts (wire JSON, camelCase) and control
    steps. A non-200 `status` sends `error_body` as JSON instead. `chunk_delay` is
    slept before every chunk.
    """

    steps: tuple[Step, ...] = ()
    status: int = 200
    error_body: Mapping[str, Any] | None = None
    chunk_delay: float = 0.0

    @property
    def chunks(self) -> list[Mapping[str, Any]]:
        return [s for s in self.steps if isinstance(s, Mapping)]

    def with_delay(self, seconds: float) -> Reply:
        """The same reply with a pause before every chunk."""
        return dataclasses.replace(self, chunk_delay=seconds)

    def _insert_after(self, n: int, step: Step, *, truncate: bool) -> Reply:
        out: list[Step] = []
        seen = 0
        for s in self.steps:
            if seen == n and isinstance(s, Mapping):
                break
            out.append(s)
            seen += isinstance(s, Mapping)
        rest = [] if truncate else list(self.steps[len(out) :])
        return dataclasses.replace(self, steps=(*out, step, *rest))

    def drop_after(self, n: int) -> Reply:
        """Send the first `n` chunks, then drop the connection."""
        return self._insert_after(n, Drop(), truncate=True)

    def garbage_after(self, n: int, data: bytes = Garbage.data) -> Reply:
        """Send the first `n` chunks, then bytes that are not a valid frame, then stop."""
        return self._insert_after(n, Garbage(data), truncate=True)

    def error_after(self, n: int, body: Mapping[str, Any]) -> Reply:
        """Send the first `n` chunks, then a Google error body as an SSE frame (genai
        raises it as ClientError/ServerError mid-stream); `generateContent` gets the
        error as its HTTP answer."""
        return self._insert_after(n, dict(body), truncate=True)

    def hang_after(self, n: int, hang: HangPoint) -> Reply:
        """Send the first `n` chunks, wait at `hang` until released, then the rest."""
        return self._insert_after(n, hang, truncate=False)


@dataclass(frozen=True)
class CountTokensReply:
    """A scripted `countTokens` answer (kept apart from the generate script)."""

    total_tokens: int


ReplyFactory = Callable[["RecordedRequest"], Reply]
ScriptEntry = Reply | CountTokensReply | ReplyFactory


def usage(
    prompt: int = 10,
    output: int = 5,
    *,
    cached: int | None = None,
    thoughts: int | None = None,
    total: int | None = None,
) -> dict[str, Any]:
    """A `usageMetadata` dict."""
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": total if total is not None else prompt + output + (thoughts or 0),
    }
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    return meta


def chunk(
    parts: Sequence[Mapping[str, Any]],
    *,
    finish: str | None = None,
    usage: Mapping[str, Any] | None = None,
    model_version: str | None = None,
) -> dict[str, Any]:
    """One GenerateContentResponse holding `parts` from the model."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [dict(p) for p in parts]},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = finish
    response: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        response["usageMetadata"] = dict(usage)
    if model_version:
        response["modelVersion"] = model_version
    return response


def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def thought_part(text: str, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": text, "thought": True}
    if signature:
        part["thoughtSignature"] = signature
    return part


def function_call_part(
    name: str,
    args: Mapping[str, Any] | None = None,
    id: str | None = None,
    *,
    signature: str | None = None,
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": dict(args or {})}
    if id is not None:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if signature:
        part["thoughtSignature"] = signature
    return part


def parts_response(
    chunks: Sequence[Sequence[Mapping[str, Any]]],
    *,
    finish: str | None = "STOP",
    usage: Mapping[str, Any] | None = None,
    model_version: str | None = None,
) -> Reply:
    """A stream of chunks, each a list of parts; the last carries finish and usage."""
    steps: list[Step] = []
    for i, parts in enumerate(chunks):
        last = i == len(chunks) - 1
        steps.append(
            chunk(
                parts,
                finish=finish if last else None,
                usage=usage if last else None,
                model_version=model_version,
            )
        )
    return Reply(steps=tuple(steps))


def text_response(
    chunks: str | Sequence[str],
    *,
    finish: str | None = "STOP",
    usage: Mapping[str, Any] | None = None,
    thoughts: Sequence[str] = (),
    model_version: str | None = None,
) -> Reply:
    """Streamed text, one chunk per string (thought chunks first, if any)."""
    texts = [chunks] if isinstance(chunks, str) else list(chunks)
    parts: list[list[Mapping[str, Any]]] = [[thought_part(t)] for t in thoughts]
    parts += [[text_part(t)] for t in texts]
    return parts_response(parts, finish=finish, usage=usage, model_version=model_version)


def function_call_response(
    name: str,
    args: Mapping[str, Any] | None = None,
    id: str | None = None,
    *,
    text: str | None = None,
    usage: Mapping[str, Any] | None = None,
    signature: str | None = None,
) -> Reply:
    """A model turn that calls one function (optionally after some text)."""
    parts: list[Mapping[str, Any]] = [text_part(text)] if text else []
    parts.append(function_call_part(name, args, id, signature=signature))
    return parts_response([parts], usage=usage)


def function_calls_response(
    calls: Sequence[tuple[str, Mapping[str, Any]]], *, usage: Mapping[str, Any] | None = None
) -> Reply:
    """A model turn that calls several functions at once (run in parallel by ADK)."""
    return parts_response([[function_call_part(n, a) for n, a in calls]], usage=usage)


def grounded_response(
    text: str,
    sources: Sequence[tuple[str, str]],
    supports: Sequence[tuple[int, int, Sequence[int]]] = (),
    *,
    queries: Sequence[str] = (),
) -> Reply:
    """A Google Search grounded answer (the reply to a request with `googleSearch`):
    `text`, and the candidate's `groundingMetadata` as the API sends it: `sources` are
    `(title, uri)` web chunks, `supports` `(start_byte, end_byte, chunk_indices)` with
    UTF-8 byte offsets into `text` (a zero `startIndex` left out, as proto3 JSON does)."""
    metadata: dict[str, Any] = {
        "groundingChunks": [{"web": {"uri": uri, "title": title}} for title, uri in sources],
        "groundingSupports": [
            {
                "segment": {
                    **({"startIndex": start} if start else {}),
                    "endIndex": end,
                    "text": text.encode()[start:end].decode(errors="replace"),
                },
                "groundingChunkIndices": list(indices),
            }
            for start, end, indices in supports
        ],
    }
    if queries:
        metadata["webSearchQueries"] = list(queries)
    step = chunk([text_part(text)], finish="STOP", usage=usage())
    step["candidates"][0]["groundingMetadata"] = metadata
    return Reply(steps=(step,))


def blocked_prompt_response(reason: str = "SAFETY", message: str | None = None) -> Reply:
    """The API refused the prompt itself: no candidates, `promptFeedback.blockReason`
    (the shape the Gemini API streams for a blocked prompt)."""
    feedback: dict[str, Any] = {"blockReason": reason}
    if message:
        feedback["blockReasonMessage"] = message
    return Reply(steps=({"promptFeedback": feedback, "usageMetadata": usage(output=0)},))


def empty_answer_response(finish: str = "STOP", *, thoughts: Sequence[str] = ()) -> Reply:
    """An answer without text or tool call: optional thought chunks, then a candidate
    whose content has no parts, with `finish` (as Gemini returns an empty answer)."""
    steps: list[Step] = [chunk([thought_part(t)]) for t in thoughts]
    end = {"content": {"role": "model"}, "finishReason": finish, "index": 0}
    steps.append({"candidates": [end], "usageMetadata": usage(output=0)})
    return Reply(steps=tuple(steps))


def malformed_function_call_response(
    message: str = "Malformed function call: print(default_api.read_file(path=))",
) -> Reply:
    """A MALFORMED_FUNCTION_CALL finish with an empty content (the real wire shape)."""
    end = {"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": message}
    return Reply(steps=({"candidates": [{**end, "index": 0}]},))


def metadata_chunk(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A chunk with no candidates, only usage metadata (Gemini sends these)."""
    return {"usageMetadata": dict(meta or usage())}


def error_response(
    http_status: int,
    status: str | None = None,
    message: str = "error",
    details: Sequence[Mapping[str, Any]] = (),
) -> Reply:
    """An HTTP error with a Google error body (see `gemini_errors` for details builders)."""
    return Reply(
        status=http_status, error_body=ge.google_error_body(http_status, status, message, details)
    )


def per_day_quota_429(model: str) -> Reply:
    """429 with a PerDay QuotaFailure: terminal quota for `model`."""
    return Reply(status=429, error_body=ge.per_day_quota_body(model))


def per_minute_quota_429(model: str, retry: str = "12s") -> Reply:
    """429 with a PerMinute QuotaFailure and RetryInfo(`retry`): retryable."""
    return Reply(status=429, error_body=ge.per_minute_quota_body(model, retry=retry))


def capacity_429(model: str) -> Reply:
    """429 with ErrorInfo MODEL_CAPACITY_EXHAUSTED."""
    return Reply(status=429, error_body=ge.capacity_body(model))


def not_found_404(model: str) -> Reply:
    return Reply(status=404, error_body=ge.not_found_body(model))


def server_error_500(message: str = "An internal error has occurred. Please retry.") -> Reply:
    return Reply(status=500, error_body=ge.server_error_body(message))


def overloaded_503() -> Reply:
    return Reply(status=503, error_body=ge.overloaded_body())


def merge_chunks(chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fold streamed chunks into the single response `generateContent` would return."""
    parts: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    candidate: dict[str, Any] = {"index": 0}
    for c in chunks:
        for key, value in c.items():
            if key != "candidates":
                merged[key] = value
        for cand in c.get("candidates", [])[:1]:
            for key, value in cand.items():
                if key != "content":
                    candidate[key] = value
            for p in cand.get("content", {}).get("parts", []):
                prev = parts[-1] if parts else None
                mergeable = (
                    prev is not None
                    and set(prev) <= {"text", "thought"}
                    and set(p) <= {"text", "thought"}
                )
                if mergeable and prev is not None and prev.get("thought") == p.get("thought"):
                    prev["text"] += p["text"]
                else:
                    parts.append(dict(p))
    candidate["content"] = {"role": "model", "parts": parts}
    merged["candidates"] = [candidate]
    return merged


# ---------------------------------------------------------------- JSONL scripts


def reply_from_fake_response(entry: Mapping[str, Any]) -> Reply | CountTokensReply:
    """One line of a `--fake-responses` script (see the module docstring)."""
    if "error" in entry:
        error = dict(entry["error"])
        code = int(entry.get("httpStatus", error.get("code", 500)))
        return Reply(status=code, error_body={"error": error})
    method = entry.get("method", "generateContentStream")
    response = entry.get("response")
    if method == "countTokens":
        return CountTokensReply(int((response or {}).get("totalTokens", 0)))
    if method not in ("generateContent", "generateContentStream"):
        raise ValueError(f"unsupported fake response method {method!r}")
    chunks = response if isinstance(response, list) else [response]
    reply = Reply(steps=tuple(dict(c) for c in chunks))
    if "chunkDelayMs" in entry:
        reply = reply.with_delay(float(entry["chunkDelayMs"]) / 1000)
    if "dropAfter" in entry:
        reply = reply.drop_after(int(entry["dropAfter"]))
    return reply


def load_script(path: str | Path) -> list[Reply | CountTokensReply]:
    """Read a JSONL script; blank lines are skipped."""
    entries: list[Reply | CountTokensReply] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(reply_from_fake_response(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from exc
    return entries


# ---------------------------------------------------------------- recording


@dataclass
class RecordedRequest:
    """One HTTP request the server received.

    `model` and `action` come from the URL (`None` if it did not match a model
    route); `stream` is True for streamGenerateContent; `body` is the parsed JSON.
    `disconnected` is set if the client closed the connection before the reply ended.
    """

    index: int
    http_method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    api_version: str | None
    model: str | None
    action: str | None
    vertex: bool
    received_at: float = field(default_factory=time.monotonic)
    disconnected: threading.Event = field(default_factory=threading.Event)

    @property
    def stream(self) -> bool:
        return self.action == "streamGenerateContent"

    @property
    def contents(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        return list(body.get("contents") or [])

    @property
    def last_user_text(self) -> str:
        """The text parts of the last `user` content, joined."""
        for content in reversed(self.contents):
            if content.get("role", "user") == "user":
                return "".join(p.get("text", "") for p in content.get("parts", []))
        return ""

    @property
    def system_instruction_text(self) -> str:
        body = self.body if isinstance(self.body, dict) else {}
        si = body.get("systemInstruction") or {}
        return "".join(p.get("text", "") for p in si.get("parts", []))

    @property
    def uses_google_search(self) -> bool:
        """The request offers the `googleSearch` tool (a grounded search request)."""
        body = self.body if isinstance(self.body, dict) else {}
        return any("googleSearch" in tool for tool in body.get("tools") or [])

    @property
    def function_declaration_names(self) -> list[str]:
        body = self.body if isinstance(self.body, dict) else {}
        return [
            d.get("name", "")
            for tool in body.get("tools") or []
            for d in tool.get("functionDeclarations") or []
        ]


async def _poll(done: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.01)


# ---------------------------------------------------------------- the server


class FakeGeminiServer:
    """A scripted Gemini API on 127.0.0.1 (see the module docstring for usage).

    `default` answers calls once the script is empty: None means a 500 INTERNAL
    error naming the exhausted script; a string means that text; a `Reply` or a
    factory is used as is (and not consumed).
    """

    def __init__(
        self,
        script: Iterable[ScriptEntry] = (),
        *,
        default: Reply | ReplyFactory | str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        sse_separator: bytes = b"\r\n\r\n",
    ) -> None:
        self._lock = threading.Condition()
        self._script: deque[Reply | ReplyFactory] = deque()
        self._count_tokens: deque[CountTokensReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._hangs: set[HangPoint] = set()
        self.default: Reply | ReplyFactory | None = (
            text_response(default) if isinstance(default, str) else default
        )
        self._host = host
        self._port = port
        self._sep = sse_separator
        self._closing = threading.Event()
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self.add(*script)

    # ------------------------------------------------------------ script and records

    def add(self, *entries: ScriptEntry) -> None:
        """Append entries to the script (thread-safe)."""
        with self._lock:
            for e in entries:
                if isinstance(e, CountTokensReply):
                    self._count_tokens.append(e)
                else:
                    self._script.append(e)

    @property
    def remaining(self) -> int:
        """How many generate replies are still scripted."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def generate_requests(self) -> list[RecordedRequest]:
        """Only the generateContent / streamGenerateContent requests."""
        return [r for r in self.requests if r.action in _GENERATE_ACTIONS]

    @property
    def models_called(self) -> list[str | None]:
        return [r.model for r in self.generate_requests]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `n` requests arrived. Not from the server's own loop."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"fake Gemini server got {len(self._requests)} of {n} requests")
            return list(self._requests)

    async def wait_for_requests_async(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Like `wait_for_requests`, without blocking the running loop."""
        await _poll(lambda: len(self._requests) >= n, timeout, f"fewer than {n} requests arrived")
        return self.requests

    def release_all(self) -> None:
        """Release every hang point a request is waiting at (also done on stop)."""
        with self._lock:
            hangs = set(self._hangs)
            for entry in self._script:
                if isinstance(entry, Reply):
                    hangs.update(s for s in entry.steps if isinstance(s, HangPoint))
        for hang in hangs:
            hang.release()

    # ------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("FakeGeminiServer is not started")
        return self._base_url

    async def astart(self) -> str:
        """Start serving in the running loop; returns the base URL."""
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._closing.clear()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        sock.listen(128)
        port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        self._base_url = f"http://{self._host}:{port}"
        logger.debug("fake Gemini server at %s", self._base_url)
        return self._base_url

    async def aclose(self) -> None:
        """Stop serving (in-loop mode). Hanging replies are released first."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeGeminiServer:
        await self.astart()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def start_in_thread(self, timeout: float = 10.0) -> str:
        """Serve from a background thread with its own loop; returns the base URL."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._thread_loop = loop
            try:
                loop.run_until_complete(self.astart())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-gemini-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError("fake Gemini server thread did not start")
        if failure:
            raise failure[0]
        return self.base_url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a server started with `start_in_thread`."""
        loop, thread = self._thread_loop, self._thread
        if loop is None or thread is None:
            raise RuntimeError("stop() is for start_in_thread(); use `await aclose()` in-loop")
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = self._thread_loop = None

    def __enter__(self) -> FakeGeminiServer:
        self.start_in_thread()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------ serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        m = _PATH_RE.match(request.path)
        with self._lock:
            rec = RecordedRequest(
                index=len(self._requests),
                http_method=request.method,
                path=request.path,
                query=dict(request.query),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                api_version=m["ver"] if m else None,
                model=m["model"] if m else None,
                action=m["action"] if m else None,
                vertex=bool(m and m["vertex"]),
            )
            self._requests.append(rec)
            self._lock.notify_all()
        logger.debug("request #%d %s %s", rec.index, request.method, request.path)
        if raw and body is None:
            return _error(400, "INVALID_ARGUMENT", "request body is not JSON")
        if rec.action == "countTokens":
            return self._count_tokens_reply(rec)
        if rec.action not in _GENERATE_ACTIONS or request.method != "POST":
            return _error(
                404,
                "NOT_FOUND",
                f"fake Gemini server: no route for {request.method} {request.path}",
            )
        reply = self._next_reply(rec)
        if reply.status != 200:
            await self._run_controls(reply.steps, rec, request)
            return web.json_response(reply.error_body or {}, status=reply.status)
        if rec.stream:
            return await self._stream(reply, rec, request)
        return await self._single(reply, rec, request)

    def _next_reply(self, rec: RecordedRequest) -> Reply:
        with self._lock:
            entry = self._script.popleft() if self._script else self.default
        if entry is None:
            message = (
                f"FakeGeminiServer: script exhausted at request #{rec.index} (model {rec.model})"
            )
            logger.warning("%s", message)
            return Reply(status=500, error_body=ge.server_error_body(message))
        return entry if isinstance(entry, Reply) else entry(rec)

    def _count_tokens_reply(self, rec: RecordedRequest) -> web.Response:
        with self._lock:
            scripted = self._count_tokens.popleft() if self._count_tokens else None
        total = scripted.total_tokens if scripted else max(1, len(json.dumps(rec.body)) // 4)
        return web.json_response({"totalTokens": total})

    def _frame(self, step: Mapping[str, Any], rec: RecordedRequest) -> dict[str, Any]:
        out = dict(step)
        if "error" not in out:
            out.setdefault("modelVersion", rec.model)
        return out

    async def _stream(
        self, reply: Reply, rec: RecordedRequest, request: web.Request
    ) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for step in reply.steps:
                if isinstance(step, Mapping):
                    if reply.chunk_delay:
                        await asyncio.sleep(reply.chunk_delay)
                    payload = json.dumps(self._frame(step, rec), separators=(",", ":"))
                    await resp.write(b"data: " + payload.encode() + self._sep)
                elif isinstance(step, Garbage):
                    await resp.write(step.data)
                    return await _end(resp)
                elif isinstance(step, Drop):
                    return _drop(resp, request)
                elif not await self._control(step, rec, request):
                    return resp
        except ConnectionError:
            rec.disconnected.set()
            return resp
        return await _end(resp)

    async def _single(
        self, reply: Reply, rec: RecordedRequest, request: web.Request
    ) -> web.StreamResponse:
        chunks: list[Mapping[str, Any]] = []
        for step in reply.steps:
            if isinstance(step, Mapping) and "error" in step:
                return web.json_response(dict(step), status=int(step["error"].get("code", 500)))
            if isinstance(step, Mapping):
                chunks.append(step)
            elif isinstance(step, Garbage):
                return web.Response(body=step.data, content_type="application/json")
            elif isinstance(step, Drop):
                resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
                await resp.prepare(request)
                return _drop(resp, request)
            elif not await self._control(step, rec, request):
                return web.Response(status=499)
        if reply.chunk_delay:
            await asyncio.sleep(reply.chunk_delay * max(1, len(chunks)))
        return web.json_response(self._frame(merge_chunks(chunks), rec))

    async def _run_controls(
        self, steps: Iterable[Step], rec: RecordedRequest, request: web.Request
    ) -> None:
        for step in steps:
            if isinstance(step, (Pause, HangPoint)):
                await self._control(step, rec, request)

    async def _control(
        self, step: Pause | HangPoint, rec: RecordedRequest, request: web.Request
    ) -> bool:
        """Run a pause or hang; False if the client went away meanwhile."""
        if isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
            return True
        with self._lock:
            self._hangs.add(step)
        step.reached.set()
        while not (step.released.is_set() or self._closing.is_set()):
            if request.transport is None or request.transport.is_closing():
                step.client_gone.set()
                rec.disconnected.set()
                return False
            await asyncio.sleep(0.01)
        return True


async def _end(resp: web.StreamResponse) -> web.StreamResponse:
    with contextlib.suppress(ConnectionError):
        await resp.write_eof()
    return resp


def _drop(resp: web.StreamResponse, request: web.Request) -> web.StreamResponse:
    if request.transport is not None:
        request.transport.abort()
    return resp


def _error(code: int, status: str, message: str) -> web.Response:
    return web.json_response(ge.google_error_body(code, status, message), status=code)


# ---------------------------------------------------------------- command line


async def _serve_forever(server: FakeGeminiServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        sys.stdout.write(server.base_url + "\n")
        sys.stdout.flush()
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.gemini_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--script", type=Path, help="JSONL script (Gemini CLI --fake-responses format)"
    )
    parser.add_argument(
        "--default-text", help="answer this text once the script is empty (else a 500)"
    )
    parser.add_argument(
        "--chunk-delay-ms", type=float, default=0.0, help="pause before every chunk"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    entries = load_script(args.script) if args.script else []
    if args.chunk_delay_ms:
        delay = args.chunk_delay_ms / 1000
        entries = [
            e.with_delay(delay) if isinstance(e, Reply) and not e.chunk_delay else e
            for e in entries
        ]
    server = FakeGeminiServer(entries, default=args.default_text, host=args.host, port=args.port)
    asyncio.run(_serve_forever(server))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
