"""Session figures (the sessions issue): load, recording cost, listing.

- `session/load` of a recorded 200-message session with 50 tool calls (diffs
  included), request → response with the whole replay before it; baseline: a
  `session/new` in the same warm process. Target ≤ 150 ms.
- Recording's cost on a 200-chunk stream: the same engine turn with and without a
  ChatRecordingService, interleaved in one process (in-process fake model), ratio
  target ≤ 1.05; and the recorder's cost per message (a model answer with two tool
  calls, recorded then updated with its results), target ≤ 1 ms.
- `session/list` over 1 000 recorded sessions, request → response; baseline: the
  same request for a workspace with no sessions. Target ≤ 100 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench.client import AgentProcess
from bench.common import Metric, Sandbox, adk_spec, settle
from bench.script import STREAM_CHUNKS

LOAD_MESSAGES = 200
LOAD_TOOL_CALLS = 50
LISTED = 1000


def _sessions_root(box: Sandbox) -> Path:
    return box.home / ".local" / "state" / "adk-acp" / "sessions"


def _model_message(i: int, calls: int, workspace: Path) -> dict[str, Any]:
    tool_calls = []
    parts: list[dict[str, Any]] = [{"text": f"Step {i}: looking at the code. " * 4}]
    for k in range(calls):
        call_id = f"adk-{i}-{k}"
        path = str(workspace / f"src/module_{i}_{k}.py")
        parts.append(
            {"functionCall": {"id": call_id, "name": "replace", "args": {"file_path": path}}}
        )
        tool_calls.append(
            {
                "id": call_id,
                "name": "replace",
                "args": {"file_path": path, "old_string": "x = 1", "new_string": "x = 2"},
                "status": "success",
                "displayName": f"Edit module_{i}_{k}.py",
                "kind": "edit",
                "locations": [{"path": path}],
                "display": [
                    {
                        "type": "diff",
                        "path": path,
                        "before_text": "x = 1\n" * 20,
                        "after_text": "x = 2\n" * 20,
                    }
                ],
                "result": [
                    {
                        "functionResponse": {
                            "id": call_id,
                            "name": "replace",
                            "response": {"output": f"Edited {path}"},
                        }
                    }
                ],
            }
        )
    return {
        "id": uuid.uuid4().hex,
        "type": "gemini",
        "content": parts[0]["text"],
        "parts": parts,
        "toolCalls": tool_calls,
        "model": "gemini-2.5-pro",
        "tokens": {"input": 1000 + i, "output": 50},
    }


def write_long_session(box: Sandbox, session_id: str) -> None:
    """200 messages (100 prompts, 100 answers), 50 of the answers with a tool call."""
    from runtime.services.recording import SessionStore

    recording = SessionStore(_sessions_root(box)).create(session_id, box.workspace)
    for i in range(LOAD_MESSAGES // 2):
        text = f"Please change module {i} so that x becomes 2, and explain why."
        recording.record_message(
            {"type": "user", "content": [{"text": text}], "displayContent": text}
        )
        recording.record_message(_model_message(i, 1 if i < LOAD_TOOL_CALLS else 0, box.workspace))
    recording.set_metadata(title="A long session", mode="default")
    recording.close()


def write_many_sessions(box: Sandbox, n: int) -> None:
    from runtime.services.recording import SessionStore

    store = SessionStore(_sessions_root(box))
    for i in range(n):
        recording = store.create(uuid.uuid4().hex, box.workspace)
        recording.record_message({"type": "user", "content": [{"text": f"prompt {i}"}]})
        recording.set_metadata(title=f"session {i}")
        recording.close()


def _timed(agent: AgentProcess, method: str, params: dict[str, Any]) -> float:
    t = time.perf_counter()
    received = agent.call(method, params)
    received.result  # noqa: B018 - raises on an error response
    return received.t - t


def load_and_list_run(
    box: Sandbox, loads: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """One warm process: `loads` loads of fresh copies of the long session (and as many
    `session/new`), then `session/list` over 1 000 sessions and over none."""
    ids = [uuid.uuid4().hex for _ in range(loads)]
    for session_id in ids:
        write_long_session(box, session_id)
    empty = box.root / "no-sessions-here"
    empty.mkdir(exist_ok=True)
    spec = adk_spec(box, box.script("sessions.jsonl", short_turns=2, stream_turns=0))
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018
        settle(agent, spec)
        news, loaded, listed, floor = [], [], [], []
        for session_id in ids:
            news.append(_timed(agent, "session/new", {"cwd": spec.cwd, "mcpServers": []}))
            loaded.append(
                _timed(
                    agent,
                    "session/load",
                    {"sessionId": session_id, "cwd": spec.cwd, "mcpServers": []},
                )
            )
        write_many_sessions(box, LISTED - 2 * loads)
        for _ in range(loads):
            listed.append(_timed(agent, "session/list", {"cwd": spec.cwd}))
            floor.append(_timed(agent, "session/list", {"cwd": str(empty)}))
        agent.close()
    return news, loaded, listed, floor


# ---------------------------------------------------------------- in process


def _stream_line() -> str:
    import json

    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": f"w{i} "}]}, "index": 0}]}
        for i in range(STREAM_CHUNKS - 1)
    ]
    chunks.append(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "end."}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ]
        }
    )
    return json.dumps({"method": "generateContentStream", "response": chunks}) + "\n"


async def _stream_turns(box: Sandbox, recorded: bool, turns: int) -> list[float]:
    from runtime.config import AgentFlags, resolve_config
    from runtime.host import HeadlessHost
    from runtime.models.fake_generator import FakeContentGenerator
    from runtime.protocol import MessageSend, TextPart
    from runtime.services.recording import SessionStore
    from runtime.session import SessionSpec, create_session

    script = box.root / f"stream-{recorded}.jsonl"
    script.write_text(_stream_line() * (turns + 1), encoding="utf-8")
    config = resolve_config(box.workspace, AgentFlags(), env={}, home=box.home)
    session_id = uuid.uuid4().hex
    recording = (
        SessionStore(box.root / "inproc").create(session_id, box.workspace) if recorded else None
    )
    session = await create_session(
        SessionSpec(
            config=config,
            auth=None,
            host=HeadlessHost(),
            session_id=session_id,
            generator=FakeContentGenerator(script),
            recording=recording,
        )
    )
    out = []
    try:
        for i in range(turns + 1):
            t = time.perf_counter()
            await session.send(MessageSend(content=(TextPart(text=f"stream {i}"),)))
            await session.protocol.wait()
            if i:  # the first turn warms ADK up
                out.append(time.perf_counter() - t)
    finally:
        await session.close()
    return out


def stream_overhead(box: Sandbox, rounds: int, turns: int) -> tuple[list[float], list[float]]:
    import logging

    logging.getLogger("google_adk").setLevel(logging.ERROR)  # no usage in the scripted lines
    with_rec: list[float] = []
    without: list[float] = []
    for _ in range(rounds):  # interleaved, so drift hits both
        without += asyncio.run(_stream_turns(box, False, turns))
        with_rec += asyncio.run(_stream_turns(box, True, turns))
    return with_rec, without


def per_message_cost(box: Sandbox, n: int = 300) -> list[float]:
    """Seconds to record a model answer with two tool calls and then its results."""
    from runtime.services.recording import SessionStore

    recording = SessionStore(box.root / "permsg").create(uuid.uuid4().hex, box.workspace)
    out = []
    for i in range(n):
        message = _model_message(i, 2, box.workspace)
        results = [call.pop("result") for call in message["toolCalls"]]
        t = time.perf_counter()
        recording.record_message(message)
        for call, result in zip(message["toolCalls"], results, strict=True):
            call["result"] = result
        recording.record_message(message)
        out.append((time.perf_counter() - t) / 2)
    recording.close()
    return out


def measure_sessions(box: Sandbox, procs: int) -> list[Metric]:
    loads = 5
    news: list[float] = []
    loaded: list[float] = []
    listed: list[float] = []
    floor: list[float] = []
    for _ in range(procs):
        n, lo, li, fl = load_and_list_run(box, loads)
        news += n
        loaded += lo
        listed += li
        floor += fl
    with_rec, without = stream_overhead(box, rounds=max(2, procs), turns=3)
    per_message = per_message_cost(box)
    return [
        Metric(
            "session_load",
            f"session/load, {LOAD_MESSAGES} messages / {LOAD_TOOL_CALLS} tool calls",
            "ms",
            loaded,
            news,
            target=0.150,
            note="request → response, all replayed before it; baseline: session/new, same process",
        ),
        Metric(
            "recording_stream",
            f"{STREAM_CHUNKS}-chunk turn, recorded vs not (engine, in process)",
            "ms",
            with_rec,
            without,
            target=1.05,
            ratio_target=True,
            note="baseline: the same turn with no ChatRecordingService",
        ),
        Metric(
            "recording_message",
            "recording one model answer with 2 tool calls",
            "ms",
            per_message,
            target=0.001,
            note=f"{statistics.median(per_message) * 1e6:.0f} µs, median of {len(per_message)}; "
            "each answer written twice (then with its results)",
        ),
        Metric(
            "session_list",
            f"session/list over {LISTED} recorded sessions",
            "ms",
            listed,
            floor,
            target=0.100,
            note="baseline: session/list of a workspace with none; newest first, first page",
        ),
    ]


def summary(metrics: list[Metric]) -> str:
    return ", ".join(f"{m.key}={statistics.median(m.samples) * 1000:.2f}ms" for m in metrics)


# ---------------------------------------------------------------- many sessions


MANY_SESSIONS = 20
MANY_PROMPTS = 10


def many_sessions_run(
    box: Sandbox, sessions: int = MANY_SESSIONS, prompts: int = MANY_PROMPTS
) -> dict[str, Any]:
    """20 sessions in one warm process, 10 prompts each, all sessions' prompts in
    flight together: total time, prompt latencies, RSS per extra idle session, growth."""
    spec = adk_spec(
        box,
        box.script("many.jsonl", short_turns=sessions * prompts + 2, stream_turns=0),
    )
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018
        settle(agent, spec)
        ids = [str(agent.new_session(spec.cwd).result["sessionId"])]
        agent.drain(0.5)
        first = agent.rss_mb()
        ids += [str(agent.new_session(spec.cwd).result["sessionId"]) for _ in range(sessions - 1)]
        agent.drain(0.5)
        idle = agent.rss_mb()
        latencies: list[float] = []
        started = time.perf_counter()
        for round_ in range(prompts):
            turns = [agent.start_prompt(sid, f"prompt {round_}") for sid in ids]
            for turn in turns:
                agent.finish_turn(turn, timeout=120)
                latencies.append(turn.to_end)
        total = time.perf_counter() - started
        agent.drain(0.5)
        end = agent.rss_mb()
        agent.close()
    return {
        "per_session_mb": (idle - first) / max(1, sessions - 1),
        "growth_mb": end - idle,
        "total_s": total,
        "latencies": latencies,
    }


def measure_many(box: Sandbox) -> list[Metric]:
    run = many_sessions_run(box)
    latencies = sorted(run["latencies"])
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return [
        Metric(
            "many_total",
            f"{MANY_SESSIONS} sessions × {MANY_PROMPTS} prompts, one process, total",
            "ms",
            [run["total_s"]],
            note=f"prompt latency p50 {statistics.median(latencies) * 1000:.1f} ms, "
            f"p99 {p99 * 1000:.1f} ms (all sessions' prompts in flight together)",
        ),
        Metric(
            "many_per_session",
            "RSS per extra idle session",
            "MB",
            [run["per_session_mb"]],
            target=3.0,
        ),
        Metric(
            "many_growth",
            f"RSS growth over the {MANY_SESSIONS * MANY_PROMPTS} prompts",
            "MB",
            [max(run["growth_mb"], 0.0)],
            note=f"measured {run['growth_mb']:+.1f} MB",
        ),
    ]
