"""The scripted model keeps a bounded window of what it was asked (issue #8):
500 calls with a growing history must not keep 500 histories."""

from __future__ import annotations

from google.genai import types

from runtime.models.fake_generator import FakeContentGenerator


async def test_the_fake_keeps_only_the_last_requests() -> None:
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}
    fake = FakeContentGenerator([{"method": "generateContent", "response": reply}] * 500)
    history: list[types.Content] = []
    for index in range(500):
        history.append(types.Content(role="user", parts=[types.Part(text=f"prompt {index}")]))
        await fake.generate_content(
            model="m", contents=history, config=types.GenerateContentConfig()
        )
    assert len(fake.requests) == 16
    model, last = fake.requests[-1]
    assert model == "m" and len(last) == 500
