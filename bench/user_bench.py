"""The editor's-eye figures of the performance issue, optionally beside Gemini CLI.

Driven as Zed or `acpx exec` drive an agent: fresh processes, no pause between
`initialize`, `session/new` and (for the one-shot) the first prompt; a client that
offers `fs` (reads and writes go through it) and allows what it is asked. Both agents
answer from the same Gemini CLI JSONL script (`--fake-responses`), so only their own
work is timed. Per run, three fresh processes of each agent:

- `R`: `initialize`, at once `session/new`; then the user "types" (the agent is left
  until idle, ≥ 3 s) and sends the first prompt, whose model turn calls `read_file`
  (prompt → response); then warm prompts 200 ms apart (prompt → first chunk); then a
  100-prompt session (median of the last 10 prompt → response ÷ the first 10);
- `W`: the same start, and a first prompt whose model turn writes an existing file
  (the permission asked and allowed, the file read and written through the client);
- one-shot: `initialize` and `session/new` written at spawn, the prompt as soon as the
  session id is known (spawn → first chunk), as in `bench/run.py --only oneshot`.

`--peer gemini` runs the same beside Gemini CLI (`bench/contenders.py`: installed from
npm on first use, driven through `--acp --fake-responses` in a hermetic HOME); each
figure then has Gemini CLI's from the same run as its baseline.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.client import AgentProcess, Turn
from bench.common import WARM_PAUSE_S, WARM_PROMPTS, Metric, Sandbox, one_shot, settle
from bench.contenders import (
    EDITED_FILE,
    Contender,
    adk_contender,
    gemini_contender,
    install_gemini_cli,
    peer_metric,
    write_script,
)
from bench.script import call, line

LONG_SESSION = 100


def read_script() -> str:
    """`R`: a read_file turn, warm prompts, the long session, a few spare lines."""
    done = line({"text": "Done."})
    hello = line({"text": "Hello there."})
    lines = [line(call("read_file", {"file_path": "README.md"})), done]
    lines += [hello] * (WARM_PROMPTS + LONG_SESSION + 4)
    return "".join(lines)


def oneshot_script() -> str:
    return line({"text": "Hello there."}) * 4


# ---------------------------------------------------------------- one run


@dataclass
class UserRun:
    """One agent's figures from one run (seconds; `long_ratio` unitless)."""

    spawn_to_initialize: list[float] = field(default_factory=list)
    session_new_cold: list[float] = field(default_factory=list)
    first_read: float = 0.0
    first_write: float = 0.0
    warm_first_chunk: list[float] = field(default_factory=list)
    long_ratio: float = 0.0
    long_first: float = 0.0
    long_last: float = 0.0
    oneshot_first_chunk: float = 0.0
    wrote: bool = False


def _start(agent: AgentProcess, run: UserRun, cwd: Path) -> str:
    init = agent.initialize(timeout=60)
    init.result  # noqa: B018 - raises on an error response
    t = time.perf_counter()
    created = agent.new_session(cwd, timeout=60)
    run.spawn_to_initialize.append(init.t - agent.spawned_at)
    run.session_new_cold.append(created.t - t)
    return str(created.result["sessionId"])


def _checked(turn: Turn, what: str) -> Turn:
    if turn.stop_reason != "end_turn":
        raise RuntimeError(f"{what}: stopped with {turn.stop_reason!r}")
    return turn


def run_once(who: Contender, root: Path, tag: str) -> UserRun:
    run = UserRun()
    scripts = root / f"scripts-{who.home.parent.name}-{tag}"
    scripts.mkdir(parents=True, exist_ok=True)

    script = scripts / "read.jsonl"
    script.write_text(read_script(), encoding="utf-8")
    with who.spawn(script) as agent:
        session = _start(agent, run, who.workspace)
        settle(agent, who.spec(script))
        run.first_read = _checked(agent.prompt(session, "read the README"), "read").to_end
        for _ in range(WARM_PROMPTS):
            agent.drain(WARM_PAUSE_S)
            run.warm_first_chunk.append(agent.prompt(session, "hello again").to_first_chunk)
        times = [
            _checked(agent.prompt(session, f"prompt {i}"), "long session").to_end
            for i in range(LONG_SESSION)
        ]
        run.long_first = statistics.median(times[:10])
        run.long_last = statistics.median(times[-10:])
        run.long_ratio = run.long_last / run.long_first
        agent.close()

    script = scripts / "write.jsonl"
    script.write_text(write_script(tag), encoding="utf-8")
    with who.spawn(script) as agent:
        session = _start(agent, run, who.workspace)
        settle(agent, who.spec(script))
        run.first_write = _checked(agent.prompt(session, "update the notes"), "write").to_end
        agent.close()
    run.wrote = f"run {tag}" in (who.workspace / EDITED_FILE).read_text(encoding="utf-8")

    script = scripts / "oneshot.jsonl"
    script.write_text(oneshot_script(), encoding="utf-8")
    run.oneshot_first_chunk = one_shot(who.spec(script)).first_chunk
    return run


# ---------------------------------------------------------------- the figures


def measure_user(box: Sandbox, procs: int, peer: str | None = None) -> list[Metric]:
    ours = adk_contender(box)
    theirs = gemini_contender(box, install_gemini_cli()) if peer == "gemini" else None
    mine: list[UserRun] = []
    peers: list[UserRun] = []
    for i in range(procs):  # interleaved, so both see the same machine
        mine.append(run_once(ours, box.root, f"a{i}"))
        if theirs is not None:
            peers.append(run_once(theirs, box.root, f"g{i}"))

    base = theirs.name if theirs is not None else ""

    metric = functools.partial(peer_metric, mine, peers, base)
    written = sum(r.wrote for r in mine)
    peer_written = sum(r.wrote for r in peers)
    long_first = statistics.median(r.long_first for r in mine) * 1000
    long_last = statistics.median(r.long_last for r in mine) * 1000
    rows = [
        metric(
            "user_spawn_init",
            "spawn → initialize response",
            "spawn_to_initialize",
            note="R and W processes; beside the echo floor see `--only spawn`",
        ),
        metric(
            "user_session_new",
            "session/new right after initialize",
            "session_new_cold",
            target=0.100,
        ),
        metric(
            "user_oneshot",
            "one-shot: spawn → 1st chunk",
            "oneshot_first_chunk",
            target=0.8 if peers else None,
            ratio_target=True,
            note="initialize and session/new at spawn, the prompt when the id is known",
        ),
        metric(
            "user_first_read",
            "first prompt with read_file → response",
            "first_read",
            target=0.040,
            note="fresh process, left idle ≥ 3 s after session/new; "
            "the file read through the client (fs)",
        ),
        metric(
            "user_first_write",
            "first prompt with a write (fs) → response",
            "first_write",
            target=0.060,
            note=f"permission asked and allowed, file read and written "
            f"through the client; files written: {written}/{len(mine)}"
            + (f" (peer {peer_written}/{len(peers)})" if peers else ""),
        ),
        metric(
            "user_warm",
            "warm prompt → 1st chunk",
            "warm_first_chunk",
            target=0.003,
            note=f"{WARM_PROMPTS} prompts {WARM_PAUSE_S * 1000:.0f} ms apart after the read",
        ),
        metric(
            "user_long",
            f"{LONG_SESSION}-prompt session: last 10 ÷ first 10",
            "long_ratio",
            unit="x",
            target=1.05,
            note=f"medians of prompt → response; first 10 {long_first:.1f} ms, "
            f"last 10 {long_last:.1f} ms",
        ),
    ]
    return rows
