"""Per-turn engine cost as the conversation grows (the performance issue's flat-cost
figure): one session, N short turns, the median engine time of the turns around 10,
100 and 500, in process with a scripted model (so the time is the engine's own), and
over HTTP against the local fake Gemini API (the genai client's request building
included). The target: the last window ≤ 1.05 × the first (flat); where it is not met,
ARCHITECTURE.md says what grows and what would move it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
import uuid
from typing import Any

from bench.run import Metric, Sandbox

WINDOW = 10
MARKS = (10, 100, 500)


def _line(i: int) -> str:
    parts = [{"text": f"answer number {i}, a few words long"}]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return json.dumps(
        {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}
    )


async def _turns(box: Sandbox, n: int, generator: Any) -> list[float]:
    from runtime.config import AgentFlags, resolve_config
    from runtime.host import HeadlessHost
    from runtime.protocol import MessageSend, TextPart
    from runtime.session import SessionSpec, create_session

    logging.getLogger("google_adk").setLevel(logging.ERROR)
    config = resolve_config(box.workspace, AgentFlags(), env={}, home=box.home)
    session = await create_session(
        SessionSpec(
            config=config,
            auth=None,
            host=HeadlessHost(),
            session_id=uuid.uuid4().hex,
            generator=generator,
        )
    )
    times = []
    try:
        for i in range(n):
            t = time.perf_counter()
            await session.send(MessageSend(content=(TextPart(text=f"prompt {i}: do it"),)))
            await session.protocol.wait()
            times.append(time.perf_counter() - t)
    finally:
        await session.close()
        await generator.aclose()
    return times


def in_process(box: Sandbox, n: int) -> list[float]:
    from runtime.models.fake_generator import FakeContentGenerator

    script = box.root / f"turns-{n}.jsonl"
    script.write_text("\n".join(_line(i) for i in range(n + 1)) + "\n", encoding="utf-8")
    return asyncio.run(_turns(box, n, FakeContentGenerator(script)))


def over_http(box: Sandbox, n: int) -> list[float]:
    from runtime.config import AuthConfig
    from runtime.models.genai_generator import GenaiContentGenerator
    from tests.fakes.gemini_server import FakeGeminiServer

    with FakeGeminiServer(default="an answer, a few words long") as server:
        auth = AuthConfig(kind="api_key", api_key="bench", base_url=server.base_url)
        return asyncio.run(_turns(box, n, GenaiContentGenerator(auth)))


def windows(times: list[float], marks: tuple[int, ...] = MARKS) -> dict[int, float]:
    return {
        mark: statistics.median(times[max(0, mark - WINDOW) : mark])
        for mark in marks
        if mark <= len(times)
    }


def measure_turns(box: Sandbox, turns: int = max(MARKS)) -> list[Metric]:
    out = []
    for label, run in (("in process", in_process), ("over HTTP", over_http)):
        times = run(box, turns)
        marks = windows(times)
        out.append(
            Metric(
                f"turn_cost_{label.replace(' ', '_')}",
                f"engine time per turn at {max(marks)} turns vs {min(marks)} ({label})",
                "ms",
                times[max(marks) - WINDOW : max(marks)],
                times[min(marks) - WINDOW : min(marks)],
                target=1.05,
                ratio_target=True,
                note=", ".join(f"{k} turns: {v * 1000:.1f} ms" for k, v in marks.items()),
            )
        )
    return out
