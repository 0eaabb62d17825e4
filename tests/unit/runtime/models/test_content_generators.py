"""ContentGenerators: genai against the fake Gemini server, the fake script, recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.genai import errors, types

from runtime.config import AuthConfig
from runtime.models.fake_generator import FakeContentGenerator, FakeResponsesExhausted
from runtime.models.genai_generator import GenaiContentGenerator
from runtime.models.recording_generator import RecordingContentGenerator
from tests.fakes.gemini_server import FakeGeminiServer, per_day_quota_429, text_response

USER = [types.Content(role="user", parts=[types.Part(text="hi")])]


async def _collect(gen, model: str = "gemini-2.5-pro") -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    async for chunk in gen.generate_content_stream(model=model, contents=USER):
        out.append(chunk.text or "")
    return out


async def test_genai_generator_streams_from_the_fake_server(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.add(text_response(["Hel", "lo"]))
    gen = GenaiContentGenerator(
        AuthConfig(kind="api_key", api_key="test-key", base_url=fake_gemini.base_url)
    )
    try:
        assert await _collect(gen, "gemini-2.5-flash") == ["Hel", "lo"]
    finally:
        await gen.aclose()
    (request,) = fake_gemini.requests
    assert request.model == "gemini-2.5-flash" and request.stream
    assert request.last_user_text == "hi"


async def test_genai_generator_raises_google_errors(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.add(per_day_quota_429("gemini-2.5-pro"))
    gen = GenaiContentGenerator(
        AuthConfig(kind="api_key", api_key="k", base_url=fake_gemini.base_url)
    )
    try:
        with pytest.raises(errors.ClientError) as info:
            await _collect(gen)
    finally:
        await gen.aclose()
    assert info.value.code == 429


def _script_line(*texts: str) -> dict[str, object]:
    return {
        "method": "generateContentStream",
        "response": [
            {"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}}]} for t in texts
        ],
    }


async def test_fake_generator_replays_lines_in_order(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(
        json.dumps(_script_line("a", "b"))
        + "\n\n"
        + json.dumps({"method": "generateContent", "response": _script_line("c")["response"][0]})  # type: ignore[index]
        + "\n"
    )
    gen = FakeContentGenerator(script)
    assert await _collect(gen) == ["a", "b"]
    response = await gen.generate_content(model="m", contents=USER)
    assert response.text == "c"
    with pytest.raises(FakeResponsesExhausted):
        await _collect(gen)
    assert [m for m, _ in gen.requests] == ["gemini-2.5-pro", "m", "gemini-2.5-pro"]


async def test_fake_generator_scripted_error() -> None:
    gen = FakeContentGenerator(
        [{"error": {"code": 503, "status": "UNAVAILABLE", "message": "busy"}}]
    )
    with pytest.raises(errors.ServerError) as info:
        await _collect(gen)
    assert info.value.code == 503


async def test_recording_round_trips_through_the_fake_format(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    inner = FakeContentGenerator([_script_line("x", "y")])
    assert await _collect(RecordingContentGenerator(inner, record)) == ["x", "y"]
    replay = FakeContentGenerator(record)
    assert await _collect(replay) == ["x", "y"]
    assert json.loads(record.read_text().splitlines()[0])["method"] == "generateContentStream"
