"""Per-turn engine cost as the conversation grows (the performance issue's flat-cost
figure): one session, N short turns, the median engine CPU time (of the event loop's
thread) of the turns around 10, 100 and 500, in process with a scripted model, and
over HTTP against the local fake Gemini API, whose server runs on a thread of its own
and is not counted (the genai client's request building and sending are). The
target: the last window ≤ 1.05 × the first (flat); where it is not met,
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

from bench.common import ROOT, Metric, Sandbox

WINDOW = 10
ANSWER = "an answer, a few words long"
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
            # CPU time of this thread, which runs the event loop and so the whole
            # engine; the fake HTTP server answers from a thread of its own.
            t = time.thread_time()
            await session.send(MessageSend(content=(TextPart(text=f"prompt {i}: do it"),)))
            await session.protocol.wait()
            times.append(time.thread_time() - t)
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
    """Against the fake Gemini API in a process of its own (sharing neither the GIL nor
    the caches with the agent, as a real endpoint would not)."""
    import subprocess
    import sys

    from runtime.config import AuthConfig
    from runtime.models.genai_generator import GenaiContentGenerator

    with subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.gemini_server", "--default-text", ANSWER],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(ROOT),
    ) as server:
        try:
            assert server.stdout is not None
            base_url = server.stdout.readline().strip()
            if not base_url:
                raise RuntimeError("the fake Gemini server did not start")
            auth = AuthConfig(kind="api_key", api_key="bench", base_url=base_url)
            return asyncio.run(_turns(box, n, GenaiContentGenerator(auth)))
        finally:
            server.terminate()


def windows(times: list[float], marks: tuple[int, ...] = MARKS) -> dict[int, float]:
    """The median of the `WINDOW` turns starting at each mark (the history then holds
    `mark` turns; the very first turns, which pay one-time costs, are not a window)."""
    return {
        mark: statistics.median(times[mark : mark + WINDOW])
        for mark in marks
        if mark + WINDOW <= len(times)
    }


def measure_turns(box: Sandbox, turns: int = max(MARKS) + WINDOW) -> list[Metric]:
    out = []
    for label, run in (("in process", in_process), ("over HTTP", over_http)):
        times = run(box, turns)
        marks = windows(times)
        out.append(
            Metric(
                f"turn_cost_{label.replace(' ', '_')}",
                f"engine CPU per turn at {max(marks)} turns vs {min(marks)} ({label})",
                "ms",
                times[max(marks) : max(marks) + WINDOW],
                times[min(marks) : min(marks) + WINDOW],
                target=1.05,
                ratio_target=True,
                note=", ".join(f"{k} turns: {v * 1000:.1f} ms" for k, v in marks.items()),
            )
        )
    return out
