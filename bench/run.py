"""Latency and memory benchmarks of `adk-acp`, each beside the echo floor measured in the same run.

    .venv/bin/python bench/run.py [--runs N] [--json OUT] [--only GROUP,...]

The floor is `bench/echo_agent.py`: a plain-Python NDJSON agent started with the
same interpreter, so its figures are the cost of a Python process and the protocol
alone. Every figure is a median of repeated runs; the machine is shared and noisy,
so read ratios and medians, never single numbers. Groups (`--only`):

- `spawn`   — spawn → `initialize` response, both agents interleaved, `--runs` each;
- `api`     — fresh processes (`--runs // 2`, at least 2) in API-key mode against the
  fake Gemini server (`tests/fakes/gemini_server.py`), as a user runs it: after the
  background warm-up has finished (≥ 3 s and until the process is idle) the first
  `session/new`, RSS, two short prompts, then prompts cancelled with
  `session/cancel` while the reply streams (50 ms per chunk) → `cancelled`;
- `fake`    — as many processes with `--fake-responses`: the first prompt (cold),
  prompts 200 ms apart (warm), 200-chunk streams, more `session/new`s;
- `tools`   — tool round trips (`bench/tools_bench.py`);
- `sessions` — `session/load` of a long recorded session, recording's cost on a
  stream and per message, `session/list` over 1 000 sessions (`bench/sessions_bench.py`);
- `many`    — 20 sessions × 10 prompts in one process: total, p50/p99, RSS per extra
  idle session and growth over the run (`bench/sessions_bench.py`);
- `turns`   — the engine's time per turn at 10, 100 and 500 turns of one session, in
  process and over HTTP (`bench/turns_bench.py`);
- `extensibility` — a BeforeTool + AfterTool hook pair's cost, `session/new` with three
  stdio MCP servers in settings (`bench/extensibility_bench.py`);
- `cold`    — `session/new` sent right after `initialize` (info);
- `sandbox` — a short command through `CommandRunner` in the workspace-write sandbox
  beside the same command without it, and the cost per command (`bench/sandbox_bench.py`);
- `oneshot` — an `acpx exec`-like client: `initialize` and `session/new` written
  together at spawn, the prompt as soon as the session id is known (info), plus an
  import-time profile of such a start explaining what dominates;
- `user`    — the editor's-eye figures (`bench/user_bench.py`): spawn → `initialize`,
  `session/new` right after it, the one-shot, the first prompt of a fresh process with
  a `read_file` call and with a write through the client, warm prompt → first chunk,
  a 100-prompt session's last 10 ÷ first 10. With `--peer gemini` each is measured
  beside Gemini CLI (installed from npm into a cache directory on first use) in the
  same run, and the table's baseline is Gemini CLI instead of the echo floor;
- `first`   — the first three seconds (`bench/first_bench.py`, issue 23): fresh
  processes driven with no pause at all (the `user` group lets each go idle first):
  spawn → first chunk of a prompt sent at once, a `read_file` prompt and a write's
  permission sent at once, `session/load` of a 20-prompt session right after
  `initialize` and the next prompt's first chunk, warm prompt → first chunk, RSS once
  the first prompt is answered; `--runs` samples of each (Gemini CLI beside with
  `--peer gemini`), plus an import-time profile of such a start;
- `firstspawn` — the first spawn with the warm server on (issue 32.4): none runs yet,
  so the spawn serves cold and starts the server; its spawn → first chunk and → answer
  of a prompt sent at once, and a second prompt's first chunk, beside a `--no-warm`
  spawn of the same run (the baseline), interleaved; each sample's server stopped.

The `adk-acp` runs are hermetic: a temporary HOME and workspace, no credentials
except the fake server's, `--fake-responses` scripts written here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:  # run as a script (`bench/run.py`): make `bench` importable
    sys.path.insert(0, _REPO)

from bench.client import AgentProcess, Turn  # noqa: E402
from bench.common import (  # noqa: E402
    ROOT,
    SETTLE_MIN_S,
    WARM_PAUSE_S,
    AgentSpec,
    Metric,
    OneShot,
    Sandbox,
    adk_spec,
    clean_env,
    echo_spec,
    one_shot,
    sandbox,
    session_id,
    settle,
)
from bench.importtime import import_children, import_self_times, parse_importtime  # noqa: E402
from bench.script import STREAM_CHUNKS  # noqa: E402

GROUPS = (
    "spawn",
    "api",
    "fake",
    "tools",
    "sessions",
    "many",
    "turns",
    "extensibility",
    "cold",
    "oneshot",
    "user",
    "first",
    "sandbox",
    "firstspawn",
)


# ---------------------------------------------------------------- 1. spawn → initialize


def spawn_to_initialize(spec: AgentSpec) -> float:
    """Seconds from spawning the agent to reading its `initialize` response."""
    agent = spec.spawn()
    try:
        received = agent.initialize()
        received.result  # noqa: B018 - raises on an error response
        return received.t - agent.spawned_at
    finally:
        agent.kill()


def measure_spawn(adk: AgentSpec, echo: AgentSpec, runs: int) -> Metric:
    """Metric 1, interleaved: adk-acp and the floor alternate who goes first."""
    ours: list[float] = []
    floor: list[float] = []
    for i in range(runs):
        pair = [(adk, ours), (echo, floor)]
        for spec, out in pair if i % 2 == 0 else reversed(pair):
            out.append(spawn_to_initialize(spec))
    return Metric(
        "spawn_initialize",
        "spawn → initialize response",
        "ms",
        ours,
        floor,
        target=1.5,
        ratio_target=True,
    )


def timed_session_new(agent: AgentProcess, cwd: str) -> tuple[float, str]:
    """Seconds for one `session/new`, and the new session's id."""
    t = time.perf_counter()
    created = agent.new_session(cwd)
    return created.t - t, session_id(created)


# ---------------------------------------------------------------- 2, 6, 7: API-key mode


@dataclass
class ApiRun:
    """One fresh process in API-key mode against the fake Gemini server (seconds, MB)."""

    settled_s: float
    session_new: float
    rss_mb: float
    session_new_second: float
    cold_first_chunk: float
    warm_first_chunk: float
    cancels: list[float]


def api_run(
    spec: AgentSpec,
    cancels: int,
    server: Any = None,
    after_chunks: int = 2,
    queue: Callable[[], None] | None = None,
) -> ApiRun:
    """Settle, `session/new`, RSS, a 2nd `session/new`, two short prompts (in the first
    session), then `cancels` cancelled prompts.

    With `server` (a FakeGeminiServer whose default reply streams slowly) two short
    replies are queued for the two prompts. A cancel goes out a varying 0–40 ms after
    the turn's `after_chunks`-th chunk (mid-stream, between chunks); for an agent that
    does not stream (the echo floor's `/wait`), 50–90 ms after the prompt.
    """
    if queue is not None:
        queue()
    elif server is not None:
        from tests.fakes.gemini_server import text_response

        server.add(text_response(["Hello", " there."]), text_response(["Hello", " again."]))
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018 - raises on an error response
        settled = settle(agent, spec)
        session_new, session_id = timed_session_new(agent, spec.cwd)
        rss = agent.rss_mb()
        second, _ = timed_session_new(agent, spec.cwd)
        cold = agent.prompt(session_id, "hello")
        agent.drain(WARM_PAUSE_S)
        warm = agent.prompt(session_id, "hello again")
        latencies: list[float] = []
        for i in range(cancels):
            agent.drain(WARM_PAUSE_S)
            turn = agent.start_prompt(session_id, spec.cancel_text)
            offset = (i % 5) * 0.010
            if spec.settle:
                agent.wait_chunks(turn, after_chunks)
                agent.drain(offset)
            else:
                agent.drain(0.05 + offset)
            sent = agent.notify("session/cancel", {"sessionId": session_id})
            agent.finish_turn(turn)
            if turn.stop_reason != "cancelled":
                raise RuntimeError(f"{spec.name}: cancel answered {turn.response}")
            assert turn.end is not None
            latencies.append(turn.end - sent)
        agent.close()
    return ApiRun(
        settled, session_new, rss, second, cold.to_first_chunk, warm.to_first_chunk, latencies
    )


def measure_api(box: Sandbox, echo: AgentSpec, procs: int, cancels: int) -> list[Metric]:
    """Metrics 2 (session/new), 7 (RSS) and 6 (cancel) as a user with an API key sees them.

    The agent talks to the fake Gemini server (`GEMINI_API_KEY=x`,
    `GOOGLE_GEMINI_BASE_URL`), whose default reply is 400 chunks 50 ms apart.
    """
    from tests.fakes.gemini_server import FakeGeminiServer, text_response

    slow = text_response([f"word{i} " for i in range(400)]).with_delay(0.05)
    server = FakeGeminiServer(default=slow)
    base_url = server.start_in_thread()
    ours: list[ApiRun] = []
    floor: list[ApiRun] = []
    per_proc = max(1, -(-cancels // procs))
    try:
        adk = adk_spec(box, env=box.env(GEMINI_API_KEY="x", GOOGLE_GEMINI_BASE_URL=base_url))
        for _ in range(procs):
            ours.append(api_run(adk, per_proc, server))
            floor.append(api_run(echo, per_proc))
    finally:
        server.stop()
    settled = statistics.median(r.settled_s for r in ours)
    return _gemini_api_metrics(ours, floor, settled) + _openai_api_metrics(
        box, procs, per_proc, floor
    )


def _openai_api_metrics(
    box: Sandbox, procs: int, per_proc: int, floor: list[ApiRun]
) -> list[Metric]:
    """The same rows against the fake OpenAI-compatible server (issue 34.7):
    `--model openai/fake-model`, `OPENAI_BASE_URL`, no Google key, the same slow default
    reply (400 chunks 50 ms apart) and the same floor."""
    from dataclasses import replace as replaced

    from tests.fakes.openai_server import FakeOpenAIServer, Reply, text_reply

    slow = Reply(text=[f"word{i} " for i in range(400)], chunk_delay=0.05)
    server = FakeOpenAIServer(default=slow)
    server.start_in_thread()

    def queue() -> None:
        server.add(text_reply(["Hello", " there."]), text_reply(["Hello", " again."]))

    ours: list[ApiRun] = []
    try:
        env = box.env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="x")
        spec = adk_spec(box, env=env)
        spec = replaced(spec, argv=(*spec.argv, "--model", "openai/fake-model"))
        for _ in range(procs):
            ours.append(api_run(spec, per_proc, queue=queue))
    finally:
        server.stop()
    note = "--model openai/fake-model against tests/fakes/openai_server.py (SSE, /v1)"
    return _turn_metrics(
        ours,
        floor,
        "_openai",
        ", OpenAI-compatible",
        new_note=note,
        cold_note="the first call also builds the openai client",
    )


def _turn_metrics(
    ours: list[ApiRun],
    floor: list[ApiRun],
    key: str,
    label: str,
    *,
    new_note: str = "",
    cold_note: str = "",
    cancel_note: str = "",
) -> list[Metric]:
    """The rows every provider's `api` run prints: session/new warmed up, the first chunk
    cold and warm, a cancel (`key`, `label`: the provider's suffixes)."""
    return [
        Metric(
            f"session_new_warm{key}",
            f"session/new, warmed up{label}",
            "ms",
            [r.session_new for r in ours],
            [r.session_new for r in floor],
            target=0.020,
            note=new_note,
        ),
        Metric(
            f"first_chunk_cold_http{key}",
            f"prompt → 1st chunk, cold, {label.removeprefix(', ') or 'HTTP'}",
            "ms",
            [r.cold_first_chunk for r in ours],
            [r.cold_first_chunk for r in floor],
            note=cold_note,
        ),
        Metric(
            f"first_chunk_warm_http{key}",
            f"prompt → 1st chunk, warm, {label.removeprefix(', ') or 'HTTP'}",
            "ms",
            [r.warm_first_chunk for r in ours],
            [r.warm_first_chunk for r in floor],
        ),
        Metric(
            f"cancel{key}",
            f"session/cancel → cancelled{label}",
            "ms",
            [v for r in ours for v in r.cancels],
            [v for r in floor for v in r.cancels],
            target=0.050,
            note=cancel_note,
        ),
    ]


def _gemini_api_metrics(ours: list[ApiRun], floor: list[ApiRun], settled: float) -> list[Metric]:
    new, cold, warm, cancel = _turn_metrics(
        ours,
        floor,
        "",
        "",
        new_note="API-key mode; after the warm-up settled (median "
        f"{settled:.1f} s after initialize)",
        cold_note="API-key mode: includes the HTTP round trip to the local fake server",
        cancel_note="sent 0–40 ms after the 2nd chunk of a reply streaming 50 ms per chunk",
    )
    return [
        new,
        Metric(
            "rss_after_session_new",
            "RSS after session/new",
            "MB",
            [r.rss_mb for r in ours],
            [r.rss_mb for r in floor],
            target=130.0,
            note="API-key mode, VmRSS after the first session/new of a warmed-up process",
        ),
        Metric(
            "session_new_second",
            "session/new, 2nd in process",
            "ms",
            [r.session_new_second for r in ours],
            [r.session_new_second for r in floor],
            note="API-key mode",
        ),
        cold,
        warm,
        cancel,
        Metric(
            "warmup_settled",
            "initialize → warm-up done",
            "ms",
            [r.settled_s for r in ours],
            note=f"waited ≥ {SETTLE_MIN_S:g} s, then until the agent used < 20 ms CPU "
            "in 250 ms (also in the --fake-responses runs)",
        ),
    ]


# ---------------------------------------------------------------- 3, 4: --fake-responses


@dataclass
class FakeModelRun:
    """One fresh, warmed-up process answering from a `--fake-responses` script (seconds)."""

    session_new: float
    rss_mb: float
    cold_first_chunk: float
    warm_first_chunk: list[float]
    stream_end: list[float]
    stream_chunks: list[int]
    session_new_repeat: list[float]


def fake_model_run(
    spec: AgentSpec, warm_prompts: int = 3, streams: int = 3, repeats: int = 3
) -> FakeModelRun:
    """Settle, `session/new`, a cold prompt, warm prompts, 200-chunk streams, more sessions."""
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018
        settle(agent, spec)
        session_new, session_id = timed_session_new(agent, spec.cwd)
        rss = agent.rss_mb()
        cold = agent.prompt(session_id, "hello")
        warm: list[Turn] = []
        for _ in range(warm_prompts):
            agent.drain(WARM_PAUSE_S)
            warm.append(agent.prompt(session_id, "hello again"))
        stream: list[Turn] = []
        for _ in range(streams):
            agent.drain(WARM_PAUSE_S)
            stream.append(agent.prompt(session_id, "stream please", spec.stream_meta))
        repeat = [timed_session_new(agent, spec.cwd)[0] for _ in range(repeats)]
        agent.close()
    return FakeModelRun(
        session_new=session_new,
        rss_mb=rss,
        cold_first_chunk=cold.to_first_chunk,
        warm_first_chunk=[turn.to_first_chunk for turn in warm],
        stream_end=[turn.to_end for turn in stream],
        stream_chunks=[turn.chunks for turn in stream],
        session_new_repeat=repeat,
    )


def measure_fake_model(
    adk: AgentSpec, echo: AgentSpec, procs: int, script: Path, **counts: int
) -> list[Metric]:
    """Metrics 3 (first chunk, cold and warm) and 4 (200-chunk stream), plus session/new info.

    `script` is the `--fake-responses` file `adk` was given (its size goes into a note).
    """
    ours: list[FakeModelRun] = []
    floor: list[FakeModelRun] = []
    for _ in range(procs):
        ours.append(fake_model_run(adk, **counts))
        floor.append(fake_model_run(echo, **counts))
    chunks = sorted({c for r in ours for c in r.stream_chunks})
    return [
        Metric(
            "first_chunk_cold",
            "prompt → 1st chunk, cold",
            "ms",
            [r.cold_first_chunk for r in ours],
            [r.cold_first_chunk for r in floor],
            note="--fake-responses; first prompt of a fresh, warmed-up process",
        ),
        Metric(
            "first_chunk_warm",
            "prompt → 1st chunk, warm",
            "ms",
            [v for r in ours for v in r.warm_first_chunk],
            [v for r in floor for v in r.warm_first_chunk],
            target=0.005,
            note=f"--fake-responses; later prompts of that session, "
            f"{WARM_PAUSE_S * 1000:.0f} ms apart",
        ),
        Metric(
            "stream_200",
            f"{STREAM_CHUNKS}-chunk stream → response",
            "ms",
            [v for r in ours for v in r.stream_end],
            [v for r in floor for v in r.stream_end],
            target=0.060,
            note=f"--fake-responses, warm session; chunks received per turn: {chunks}",
        ),
        Metric(
            "session_new_fake",
            "session/new, --fake-responses",
            "ms",
            [r.session_new for r in ours],
            [r.session_new for r in floor],
            note="first in a warmed-up process; every session reads and parses the "
            f"script ({script.stat().st_size // 1024} KB here), which API-key "
            "sessions do not",
        ),
        Metric(
            "session_new_repeat",
            "session/new, 2nd+, --fake",
            "ms",
            [v for r in ours for v in r.session_new_repeat],
            [v for r in floor for v in r.session_new_repeat],
        ),
        Metric(
            "rss_fake",
            "RSS after session/new, --fake",
            "MB",
            [r.rss_mb for r in ours],
            [r.rss_mb for r in floor],
        ),
    ]


# ---------------------------------------------------------------- session/new right after init


def cold_session_new(spec: AgentSpec) -> float:
    """Seconds from sending `session/new` right after the `initialize` response to its answer."""
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018
        t = time.perf_counter()
        created = agent.new_session(spec.cwd)
        session_id(created)
        agent.close()
    return created.t - t


def measure_cold_session_new(adk: AgentSpec, echo: AgentSpec, procs: int) -> Metric:
    ours, floor = [], []
    for _ in range(procs):
        ours.append(cold_session_new(adk))
        floor.append(cold_session_new(echo))
    return Metric(
        "session_new_cold",
        "session/new, right after init",
        "ms",
        ours,
        floor,
        target=0.100,
        note="answered by the early path (acp_server/early.py) while the loader thread "
        "imports pygls and ADK; the engine is built before the next line",
    )


# ---------------------------------------------------------------- 5. one-shot client


def initialize_path_note() -> str:
    """What `adk-acp` imports before it can answer `initialize` (from `-X importtime`)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import acp_server.cli"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=clean_env(),
    )
    records = parse_importtime(proc.stderr)
    total, children = import_children(records, "acp_server.cli")
    top = sorted(children, key=lambda r: -r.cumulative_s)[:5]
    startup = sum(r.cumulative_s for r in records if r.depth == 0 and r.name != "acp_server.cli")
    return (
        f"before answering initialize adk-acp imports acp_server.cli: {total * 1000:.0f} ms ("
        + ", ".join(f"{r.name} {r.cumulative_s * 1000:.0f}" for r in top)
        + f"), on top of the interpreter's own start-up imports ({startup * 1000:.0f} ms, "
        "site and encodings, which the floor pays too)"
    )


def import_probe(module_code: str) -> tuple[float, int, float]:
    """Wall seconds, new modules and VmRSS (MB) after `module_code` in a fresh interpreter."""
    code = (
        "import sys, time; n = len(sys.modules); t = time.perf_counter(); "
        f"{module_code}; d = time.perf_counter() - t; m = len(sys.modules) - n; "
        "rss = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS:')][0]; "
        "print(d, m, rss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=clean_env(),
    ).stdout.split()
    return float(out[0]), int(out[1]), int(out[2]) / 1024


IMPORT_PROBES = {
    "nothing": "pass",
    "acp_server.stdio (initialize path)": "import acp_server.stdio",
    "acp_server.schema (our ACP models)": "import acp_server.schema",
    "acp_server.server (pygls, lsprotocol, handlers)": "import acp_server.server",
    "google.genai": "import google.genai",
    "google.adk.runners": "from google.adk.runners import Runner",
    "runtime.adk.agent_protocol (engine with ADK)": "import runtime.adk.agent_protocol",
    "all of them": "import acp_server.server, runtime.adk.agent_protocol, google.genai",
}


def measure_one_shot(
    adk: AgentSpec, echo: AgentSpec, procs: int, profile: bool = True
) -> tuple[list[Metric], list[str]]:
    """Metric 5 and a note on what dominates (timeline, import profile, import probes)."""
    ours: list[OneShot] = []
    floor: list[OneShot] = []
    for _ in range(procs):
        ours.append(one_shot(adk))
        floor.append(one_shot(echo))

    def med(runs: list[OneShot], attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in runs)

    metrics = [
        Metric(
            "oneshot_first_chunk",
            "one-shot: spawn → 1st chunk",
            "ms",
            [r.first_chunk for r in ours],
            [r.first_chunk for r in floor],
        ),
        Metric(
            "oneshot_end",
            "one-shot: spawn → prompt response",
            "ms",
            [r.end for r in ours],
            [r.end for r in floor],
        ),
    ]
    waiting = med(ours, "session_new") / med(ours, "first_chunk")
    notes = [
        "one-shot timeline (medians from spawn): initialize {:.0f} ms, session/new {:.0f} ms, "
        "first chunk {:.0f} ms, response {:.0f} ms".format(
            *(med(ours, a) * 1000 for a in ("initialize", "session_new", "first_chunk", "end"))
        )
        + f"; waiting for session/new is {waiting:.0%} of spawn → first chunk"
    ]
    if profile:
        env = {**adk.env, "PYTHONPROFILEIMPORTTIME": "1"}
        traced = one_shot(adk, env=env)
        groups = import_self_times(parse_importtime(traced.stderr))
        total = sum(groups.values())
        top = sorted(groups.items(), key=lambda kv: -kv[1])[:6]
        notes.append(
            f"imports during one -X importtime one-shot (first chunk at "
            f"{traced.first_chunk:.2f} s; two threads import at once): "
            f"{total:.2f} s in all; " + ", ".join(f"{k} {v:.2f} s" for k, v in top)
        )
        probes = []
        for label, code in IMPORT_PROBES.items():
            seconds, modules, rss = import_probe(code)
            probes.append(f"{label} {seconds:.2f} s, {modules} modules, RSS {rss:.0f} MB")
        notes.append("fresh-interpreter imports (time, modules, RSS after): " + "; ".join(probes))
    return metrics, notes


# ---------------------------------------------------------------- report


def _fmt(metric: Metric, value: float | None) -> str:
    if value is None:
        return "-"
    v = metric.scaled(value)
    unit = metric.unit
    if unit == "x":
        return f"{v:.2f}×"
    return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"


def _target_cell(metric: Metric) -> str:
    ratio = f"{metric.ratio:.2f}×" if metric.ratio is not None else "-"
    if metric.target is None:
        return ratio
    if metric.ratio_target:
        return f"{ratio} / ≤ {metric.target:g}×"
    target = metric.scaled(metric.target)
    return f"{ratio} / ≤ {target:g} {metric.unit}"


def render_tables(metrics: Sequence[Metric]) -> str:
    """One table per kind of baseline (the echo floor, a peer agent), in order of appearance."""
    names = list(dict.fromkeys(m.baseline_name for m in metrics))
    return "\n\n".join(
        render_table([m for m in metrics if m.baseline_name == name], name) for name in names
    )


def render_table(metrics: Sequence[Metric], baseline_name: str = "echo") -> str:
    """The report table: metric | median | baseline | ratio/target | verdict | n."""
    base = f"baseline ({baseline_name})" if baseline_name else "baseline"
    header = ("metric", "median", base, "ratio / target", "verdict", "n")
    rows = [
        (
            m.label,
            _fmt(m, m.median),
            _fmt(m, m.baseline_median),
            _target_cell(m),
            m.verdict,
            str(len(m.samples)),
        )
        for m in metrics
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def render_side_by_side(metrics: Sequence[Metric], load: tuple[float, float]) -> str:
    """The figures measured both cold and served by the warm server (keys `k` and
    `k_warm`) in one table, beside the peer's when the run has one (each of ours with its
    ratio to it), under the machine's load (1-minute average, start → end); "" when the
    run has no such pair."""
    by_key = {m.key: m for m in metrics}
    pairs = [(m, by_key[f"{m.key}_warm"]) for m in metrics if f"{m.key}_warm" in by_key]
    if not pairs:
        return ""
    peer = next((m.baseline_name for m, _ in pairs if m.baseline), "")

    def ours(m: Metric) -> str:
        return _fmt(m, m.median) + (f" ({m.ratio:.2f}×)" if m.ratio is not None else "")

    header = ("figure", *([peer] if peer else []), "cold", "warm-served")
    rows = [
        (cold.label, *([_fmt(cold, cold.baseline_median)] if peer else []), ours(cold), ours(warm))
        for cold, warm in pairs
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    title = f"cold and warm-served side by side (load {load[0]:.2f} → {load[1]:.2f})"
    return "\n".join([title, line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def run(
    runs: int, groups: Sequence[str], peer: str | None = None
) -> tuple[list[Metric], list[str]]:
    """Run the selected groups; returns the metrics and the notes."""
    procs = max(2, runs // 2)
    metrics: list[Metric] = []
    notes: list[str] = []
    with sandbox() as box:
        echo = echo_spec(box)
        plain = adk_spec(box, box.script("oneshot.jsonl", short_turns=1, stream_turns=0))
        if "spawn" in groups:
            metrics.append(measure_spawn(plain, echo, runs))
            notes.append(initialize_path_note())
        if "api" in groups:
            metrics += measure_api(box, echo, procs, cancels=runs)
        if "fake" in groups:
            counts = {"warm_prompts": 3, "streams": 3, "repeats": 3}
            script = box.script("fake.jsonl", 1 + counts["warm_prompts"], counts["streams"])
            metrics += measure_fake_model(adk_spec(box, script), echo, procs, script, **counts)
        if "tools" in groups:
            from bench.tools_bench import measure_tools

            metrics += measure_tools(box, procs)
        if "sessions" in groups:
            from bench.sessions_bench import measure_sessions

            metrics += measure_sessions(box, procs)
        if "many" in groups:
            from bench.sessions_bench import measure_many

            metrics += measure_many(box)
        if "turns" in groups:
            from bench.turns_bench import measure_turns

            metrics += measure_turns(box)
        if "extensibility" in groups:
            from bench.extensibility_bench import measure_extensibility

            metrics += measure_extensibility(box, procs)
        if "cold" in groups:
            metrics.append(measure_cold_session_new(plain, echo, procs))
        if "oneshot" in groups:
            found, found_notes = measure_one_shot(plain, echo, procs)
            metrics += found
            notes += found_notes
        if "user" in groups:
            from bench.user_bench import measure_user

            metrics += measure_user(box, procs, peer)
        if "first" in groups:
            from bench.first_bench import measure_first

            found, found_notes = measure_first(box, max(2, runs), peer)
            metrics += found
            notes += found_notes
        if "sandbox" in groups:
            from bench.sandbox_bench import measure_sandbox

            metrics += measure_sandbox(runs)
        if "firstspawn" in groups:
            from bench.first_bench import measure_first_spawn

            found, found_notes = measure_first_spawn(box, max(2, runs))
            metrics += found
            notes += found_notes
    return metrics, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=10,
        help="spawn runs per agent and cancelled prompts (default 10); fresh "
        "processes per agent for the other groups: max(2, runs // 2)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures here")
    parser.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"comma-separated groups to run (default all: {','.join(GROUPS)})",
    )
    parser.add_argument(
        "--peer",
        choices=("gemini",),
        help="also run the `user` and `first` groups' scenarios through Gemini CLI (installed from "
        "npm into ~/.cache/adk-acp-bench on first use), each figure beside its own",
    )
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown groups: {', '.join(sorted(unknown))}")

    env_before = environment()
    started = time.perf_counter()
    metrics, notes = run(args.runs, groups, args.peer)
    elapsed = time.perf_counter() - started
    env_before["loadavg_after"] = os.getloadavg()

    out = sys.stdout
    out.write(
        f"adk-acp benchmarks — medians; baseline = bench/echo_agent.py (or the peer a "
        f"table names), same run "
        f"(python {env_before['python']}, {env_before['cpus']} cpus, "
        f"load {env_before['loadavg'][0]:.2f} → {env_before['loadavg_after'][0]:.2f}, "
        f"{elapsed:.0f} s)\n\n"
    )
    out.write(render_tables(metrics) + "\n\n")
    load = (env_before["loadavg"][0], env_before["loadavg_after"][0])
    if side := render_side_by_side(metrics, load):
        out.write(side + "\n\n")
    for m in metrics:
        if m.note:
            out.write(f"- {m.label}: {m.note}\n")
    for note in notes:
        out.write(f"- {note}\n")
    misses = [m.label for m in metrics if m.verdict == "misses"]
    out.write(f"\nmisses target: {', '.join(misses) if misses else 'none'}\n")
    if args.json:
        report = {
            "environment": env_before,
            "elapsed_s": elapsed,
            "runs": args.runs,
            "metrics": [m.as_json() for m in metrics],
            "notes": notes,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
