"""The fake Gemini server, checked with the real google-genai client.

genai 2.x uses aiohttp for its async client when aiohttp is installed (it is) and
httpx for the sync client; both paths are exercised here, with the server in the
test's loop and in a background thread.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import errors, types

from tests.fakes import gemini_errors as ge
from tests.fakes.gemini_server import (
    CountTokensReply,
    FakeGeminiServer,
    HangPoint,
    RecordedRequest,
    Reply,
    capacity_429,
    error_response,
    function_call_response,
    function_calls_response,
    grounded_response,
    load_script,
    merge_chunks,
    not_found_404,
    overloaded_503,
    parts_response,
    per_day_quota_429,
    per_minute_quota_429,
    server_error_500,
    text_part,
    text_response,
    thought_part,
    usage,
)

REPO = Path(__file__).resolve().parents[3]
MODEL = "gemini-2.5-pro"


@pytest.fixture
async def server() -> AsyncIterator[FakeGeminiServer]:
    async with FakeGeminiServer() as s:
        yield s


@pytest.fixture
async def client(server: FakeGeminiServer) -> AsyncIterator[genai.Client]:
    c = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=server.base_url))
    yield c
    await c.aio.aclose()
    c.close()


async def stream_all(
    client: genai.Client, model: str = MODEL, contents: Any = "hi", **kw: Any
) -> list[types.GenerateContentResponse]:
    stream = await client.aio.models.generate_content_stream(model=model, contents=contents, **kw)
    return [c async for c in stream]


# ---------------------------------------------------------------- success paths


async def test_stream_text_chunks_usage_and_recording(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(text_response(["Hel", "lo"], usage=usage(prompt=7, output=2, cached=3)))
    chunks = await stream_all(client, contents="say hello")
    assert [c.text for c in chunks] == ["Hel", "lo"]
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None
    assert (last.usage_metadata.prompt_token_count, last.usage_metadata.candidates_token_count) == (
        7,
        2,
    )
    assert last.usage_metadata.cached_content_token_count == 3
    assert last.model_version == MODEL

    (req,) = server.requests
    assert (req.model, req.action, req.stream, req.api_version) == (
        MODEL,
        "streamGenerateContent",
        True,
        "v1beta",
    )
    assert req.query.get("alt") == "sse"
    assert req.headers["x-goog-api-key"] == "test-key"
    assert req.last_user_text == "say hello"
    assert server.remaining == 0


async def test_generate_content_merges_a_streamed_reply(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(text_response(["Hel", "lo"], thoughts=["hmm", " ok"], usage=usage(1, 2, thoughts=3)))
    resp = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert resp.text == "Hello"
    assert resp.candidates and resp.candidates[0].content and resp.candidates[0].content.parts
    parts = resp.candidates[0].content.parts
    assert [(p.text, bool(p.thought)) for p in parts] == [("hmm ok", True), ("Hello", False)]
    assert resp.usage_metadata and resp.usage_metadata.thoughts_token_count == 3
    assert server.requests[0].model == "gemini-2.5-flash" and not server.requests[0].stream


async def test_grounded_answer_to_a_google_search_request(
    server: FakeGeminiServer, client: genai.Client, tmp_path: Path
) -> None:
    text = "Zürich is in Switzerland."  # "ü" is two bytes: offsets are UTF-8 bytes
    sources = [("Wikipedia", "https://en.wikipedia.org/wiki/Z%C3%BCrich")]
    server.add(grounded_response(text, sources, [(0, 26, [0])], queries=["zurich"]))
    line = {
        "method": "generateContent",
        "response": merge_chunks(grounded_response(text, sources).chunks),
    }
    script = tmp_path / "grounded.jsonl"
    script.write_text(json.dumps(line) + "\n", encoding="utf-8")
    server.add(*load_script(script))  # a --fake-responses line carries it just the same
    config = types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])

    resp = await client.aio.models.generate_content(model=MODEL, contents="zurich", config=config)
    from_script = await client.aio.models.generate_content(model=MODEL, contents="zurich")

    assert resp.text == text
    assert resp.candidates and resp.candidates[0].grounding_metadata
    meta = resp.candidates[0].grounding_metadata
    assert meta.web_search_queries == ["zurich"]
    assert [(c.web.title, c.web.uri) for c in meta.grounding_chunks or [] if c.web] == sources
    [support] = meta.grounding_supports or []
    assert support.segment and support.segment.start_index is None  # 0 is left out
    assert (support.segment.end_index, support.segment.text) == (26, text)
    assert support.grounding_chunk_indices == [0]
    assert from_script.candidates and from_script.candidates[0].grounding_metadata
    assert server.requests[0].uses_google_search and not server.requests[1].uses_google_search
    assert server.requests[0].body["tools"] == [{"googleSearch": {}}]


async def test_function_calls_and_request_body(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(
        function_call_response("read_file", {"path": "a.py"}, id="call-1", text="Reading."),
        function_calls_response([("ls", {"dir": "."}), ("glob", {"pattern": "*.py"})]),
    )
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name="read_file", description="read a file")
        ]
    )
    config = types.GenerateContentConfig(system_instruction="be terse", tools=[tool])
    chunks = await stream_all(client, contents="read a.py", config=config)
    calls = [fc for c in chunks for fc in (c.function_calls or [])]
    assert [(fc.name, fc.args, fc.id) for fc in calls] == [
        ("read_file", {"path": "a.py"}, "call-1")
    ]

    resp = await client.aio.models.generate_content(model=MODEL, contents="more")
    assert [(fc.name, fc.args) for fc in resp.function_calls or []] == [
        ("ls", {"dir": "."}),
        ("glob", {"pattern": "*.py"}),
    ]
    first = server.requests[0]
    assert first.system_instruction_text == "be terse"
    assert first.function_declaration_names == ["read_file"]
    assert first.body["contents"] == [{"role": "user", "parts": [{"text": "read a.py"}]}]


async def test_reply_factory_sees_the_request(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.default = lambda req: text_response(f"echo: {req.last_user_text} via {req.model}")
    resp = await client.aio.models.generate_content(model="m1", contents="ping")
    assert resp.text == "echo: ping via m1"
    resp = await client.aio.models.generate_content(model="m2", contents="pong")
    assert resp.text == "echo: pong via m2"
    assert server.models_called == ["m1", "m2"]


async def test_count_tokens_scripted_then_estimated(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(CountTokensReply(42))
    assert (await client.aio.models.count_tokens(model=MODEL, contents="hello")).total_tokens == 42
    assert (
        (await client.aio.models.count_tokens(model=MODEL, contents="hello")).total_tokens or 0
    ) > 0
    assert server.generate_requests == []


# ---------------------------------------------------------------- errors


ERROR_CASES = [
    pytest.param(
        per_day_quota_429(MODEL), errors.ClientError, 429, "RESOURCE_EXHAUSTED", id="per-day"
    ),
    pytest.param(
        per_minute_quota_429(MODEL, "12s"),
        errors.ClientError,
        429,
        "RESOURCE_EXHAUSTED",
        id="per-minute",
    ),
    pytest.param(capacity_429(MODEL), errors.ClientError, 429, "RESOURCE_EXHAUSTED", id="capacity"),
    pytest.param(not_found_404(MODEL), errors.ClientError, 404, "NOT_FOUND", id="not-found"),
    pytest.param(server_error_500("boom"), errors.ServerError, 500, "INTERNAL", id="500"),
    pytest.param(overloaded_503(), errors.ServerError, 503, "UNAVAILABLE", id="503"),
]


@pytest.mark.parametrize(("reply", "exc_type", "code", "status"), ERROR_CASES)
@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_error_replies_become_genai_errors(
    server: FakeGeminiServer,
    client: genai.Client,
    reply: Reply,
    exc_type: type[errors.APIError],
    code: int,
    status: str,
    stream: bool,
) -> None:
    server.add(reply)
    with pytest.raises(exc_type) as info:
        if stream:
            await stream_all(client)
        else:
            await client.aio.models.generate_content(model=MODEL, contents="x")
    err = info.value
    assert (err.code, err.status) == (code, status)
    assert err.details == reply.error_body  # genai keeps the whole body, as for real errors
    assert err.message == (reply.error_body or {})["error"]["message"]


async def test_error_details_have_google_shapes(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(per_day_quota_429(MODEL), per_minute_quota_429(MODEL, "12s"), capacity_429(MODEL))
    found: list[list[dict[str, Any]]] = []
    for _ in range(3):
        with pytest.raises(errors.ClientError) as info:
            await client.aio.models.generate_content(model=MODEL, contents="x")
        found.append(info.value.details["error"]["details"])
    per_day, per_minute, capacity = found
    quota = next(d for d in per_day if d["@type"].endswith("google.rpc.QuotaFailure"))
    violation = quota["violations"][0]
    assert "PerDay" in violation["quotaId"]
    assert violation["quotaDimensions"]["model"] == MODEL and violation["quotaMetric"]
    assert violation["quotaValue"] == "250"
    assert any("PerMinute" in d.get("violations", [{}])[0].get("quotaId", "") for d in per_minute)
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"} in per_minute
    info_detail = next(d for d in capacity if d["@type"].endswith("google.rpc.ErrorInfo"))
    assert info_detail["reason"] == "MODEL_CAPACITY_EXHAUSTED"


async def test_custom_error_response(server: FakeGeminiServer, client: genai.Client) -> None:
    details = [ge.retry_info(400.0), ge.error_info("RATE_LIMIT_EXCEEDED", metadata={"k": "v"})]
    server.add(error_response(429, message="slow down", details=details))
    with pytest.raises(errors.ClientError) as info:
        await client.aio.models.generate_content(model=MODEL, contents="x")
    assert info.value.status == "RESOURCE_EXHAUSTED"  # filled in from the HTTP code
    assert info.value.details["error"]["details"][0]["retryDelay"] == "400s"


async def test_empty_script_defaults(server: FakeGeminiServer, client: genai.Client) -> None:
    with pytest.raises(errors.ServerError) as info:
        await client.aio.models.generate_content(model=MODEL, contents="x")
    assert info.value.code == 500 and "script exhausted" in (info.value.message or "")
    server.default = "fallback text"
    server.default = text_response("fallback text")
    assert (
        await client.aio.models.generate_content(model=MODEL, contents="x")
    ).text == "fallback text"
    assert (
        await client.aio.models.generate_content(model=MODEL, contents="x")
    ).text == "fallback text"


async def test_default_text_in_constructor() -> None:
    async with FakeGeminiServer(default="always") as s:
        c = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=s.base_url))
        try:
            assert [ch.text for ch in await stream_all(c)] == ["always"]
        finally:
            await c.aio.aclose()


# ---------------------------------------------------------------- broken streams


async def test_dropped_stream_raises_on_iteration(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(text_response(["one", "two", "three"]).drop_after(1))
    seen: list[str | None] = []
    with pytest.raises(aiohttp.ClientPayloadError):
        async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            seen.append(c.text)
    assert seen == ["one"]


async def test_garbage_frame_raises_on_iteration(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    server.add(text_response(["one", "two"]).garbage_after(1))
    seen: list[str | None] = []
    with pytest.raises(errors.UnknownApiResponseError):
        async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            seen.append(c.text)
    assert seen == ["one"]


async def test_error_frame_mid_stream(server: FakeGeminiServer, client: genai.Client) -> None:
    body = ge.per_minute_quota_body(MODEL)
    server.add(
        text_response(["one", "two"]).error_after(1, body), text_response("x").error_after(0, body)
    )
    seen: list[str | None] = []
    with pytest.raises(errors.ClientError) as info:
        async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            seen.append(c.text)
    assert seen == ["one"] and info.value.code == 429 and info.value.details == body
    with pytest.raises(errors.ClientError):
        await client.aio.models.generate_content(model=MODEL, contents="x")


async def test_hang_point_waits_until_released(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    hang = HangPoint()
    server.add(text_response(["before", "after"]).hang_after(1, hang).with_delay(0.01))
    seen: list[str | None] = []

    async def consume() -> None:
        async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            seen.append(c.text)

    task = asyncio.create_task(consume())
    await hang.wait_reached_async()
    for _ in range(500):
        if seen:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert seen == ["before"] and not task.done()
    hang.release()
    await asyncio.wait_for(task, 5)
    assert seen == ["before", "after"]


async def test_client_going_away_during_a_hang_is_recorded(
    server: FakeGeminiServer, client: genai.Client
) -> None:
    hang = HangPoint()
    server.add(text_response(["before", "never"]).hang_after(1, hang))
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.aio.aclose()  # closes the connection the cancelled stream held
    for _ in range(300):
        if hang.client_gone.is_set():
            break
        await asyncio.sleep(0.01)
    assert hang.client_gone.is_set()
    assert server.requests[0].disconnected.is_set()


# ---------------------------------------------------------------- run modes and routing


def test_thread_mode_with_sync_client_and_blocking_waits() -> None:
    script = [text_response("sync"), text_response(["a", "b"])]
    with FakeGeminiServer(script) as s:
        c = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=s.base_url))
        try:
            assert c.models.generate_content(model=MODEL, contents="x").text == "sync"
            assert [
                ch.text for ch in c.models.generate_content_stream(model="m2", contents="y")
            ] == ["a", "b"]
        finally:
            c.close()
        requests = s.wait_for_requests(2, timeout=1)
        assert [r.model for r in requests] == [MODEL, "m2"]
        with pytest.raises(TimeoutError):
            s.wait_for_requests(3, timeout=0.05)


async def test_thread_mode_serves_a_client_in_another_loop() -> None:
    s = FakeGeminiServer([text_response(["x", "y"])])
    base_url = s.start_in_thread()
    try:
        c = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=base_url))
        try:
            assert [ch.text for ch in await stream_all(c)] == ["x", "y"]
        finally:
            await c.aio.aclose()
        assert len(await s.wait_for_requests_async(1)) == 1
    finally:
        s.stop()
    with pytest.raises(RuntimeError):
        s.stop()


async def test_env_var_routes_the_client(
    server: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    server.add(text_response("via env"))
    c = genai.Client(api_key="k")
    try:
        assert (await c.aio.models.generate_content(model=MODEL, contents="x")).text == "via env"
    finally:
        await c.aio.aclose()
    assert server.requests[0].model == MODEL


async def test_vertex_paths(server: FakeGeminiServer) -> None:
    server.add(text_response("express"), text_response("project"))
    c = genai.Client(
        vertexai=True, api_key="k", http_options=types.HttpOptions(base_url=server.base_url)
    )
    try:
        assert (await c.aio.models.generate_content(model=MODEL, contents="x")).text == "express"
    finally:
        await c.aio.aclose()
    prefix = "/v1beta1/projects/p/locations/us-central1/publishers/google"
    path = f"{prefix}/models/{MODEL}:streamGenerateContent"
    async with aiohttp.ClientSession() as session:
        async with session.post(server.base_url + path + "?alt=sse", json={"contents": []}) as resp:
            body = await resp.text()
        async with session.post(server.base_url + "/v1beta/nothing/here", json={}) as missing:
            assert missing.status == 404
            assert (await missing.json())["error"]["status"] == "NOT_FOUND"
    assert body.startswith("data: ") and '"project"' in body
    express, project, _ = server.requests
    assert (express.vertex, express.api_version, express.model) == (True, "v1beta1", MODEL)
    assert (project.vertex, project.model, project.stream) == (True, MODEL, True)


def test_merge_chunks_keeps_non_text_parts_apart() -> None:
    reply = parts_response(
        [
            [thought_part("a")],
            [thought_part("b")],
            [text_part("x")],
            [{"functionCall": {"name": "f", "args": {}}}],
            [text_part("y")],
        ],
        usage=usage(1, 1),
    )
    merged = merge_chunks(reply.chunks)
    parts = merged["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "ab", "thought": True},
        {"text": "x"},
        {"functionCall": {"name": "f", "args": {}}},
        {"text": "y"},
    ]
    assert merged["candidates"][0]["finishReason"] == "STOP"
    assert merged["usageMetadata"]["totalTokenCount"] == 2


# ---------------------------------------------------------------- JSONL scripts and the CLI


def write_script(path: Path) -> Path:
    lines = [
        {
            "method": "generateContentStream",
            "response": [
                {"candidates": [{"content": {"role": "model", "parts": [{"text": "from "}]}}]},
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": "file"}]},
                            "finishReason": "STOP",
                        }
                    ]
                },
            ],
        },
        {"method": "countTokens", "response": {"totalTokens": 9}},
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "message": "quota",
                "details": [ge.quota_failure("GenerateRequestsPerDayPerProjectPerModel")],
            }
        },
        {
            "method": "generateContent",
            "response": {
                "candidates": [{"content": {"role": "model", "parts": [{"text": "single"}]}}]
            },
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    return path


def test_load_script(tmp_path: Path) -> None:
    entries = load_script(write_script(tmp_path / "s.jsonl"))
    assert [type(e).__name__ for e in entries] == ["Reply", "CountTokensReply", "Reply", "Reply"]
    first, _, error, _ = entries
    assert isinstance(first, Reply) and len(first.chunks) == 2
    assert isinstance(error, Reply) and error.status == 429
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"method": "embedContent", "response": {}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_script(bad)


@pytest.fixture
def cli_server(tmp_path: Path) -> Iterator[str]:
    script = write_script(tmp_path / "s.jsonl")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.gemini_server", "--port", "0", "--script", str(script)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        yield base_url
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err


def test_cli_serves_a_jsonl_script(cli_server: str) -> None:
    c = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=cli_server))
    try:
        assert [ch.text for ch in c.models.generate_content_stream(model=MODEL, contents="x")] == [
            "from ",
            "file",
        ]
        assert c.models.count_tokens(model=MODEL, contents="x").total_tokens == 9
        with pytest.raises(errors.ClientError) as info:
            c.models.generate_content(model=MODEL, contents="x")
        assert info.value.code == 429
        assert c.models.generate_content(model=MODEL, contents="x").text == "single"
        with pytest.raises(errors.ServerError, match="script exhausted"):
            c.models.generate_content(model=MODEL, contents="x")
    finally:
        c.close()


def test_recorded_request_helpers() -> None:
    rec = RecordedRequest(
        index=0,
        http_method="POST",
        path="/",
        query={},
        headers={},
        api_version=None,
        model=None,
        action=None,
        vertex=False,
        body={
            "contents": [
                {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
                {"role": "model", "parts": [{"text": "c"}]},
            ]
        },
    )
    assert rec.last_user_text == "ab" and rec.system_instruction_text == "" and not rec.stream
