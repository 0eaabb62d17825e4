"""The first three seconds (issue 23): a fresh agent driven at once, as an editor does.

The `user` group lets each fresh process go idle (≥ 3 s) before its first prompt, so
the background warm-up is over by then. Here nothing waits: `initialize`, then at once
`session/new` (or `session/load`) as soon as its answer is read, then at once the
prompt as soon as the session id is known. Per sample, four fresh processes of each
agent, on the same Gemini CLI JSONL scripts (`--fake-responses`) and the same
editor-like client (`fs` offered, permissions allowed) as the `user` group:

- `A`: a text prompt sent at once: spawn → `initialize` answered, → `session/new`
  answered, → the prompt's first chunk; RSS of the process tree once the prompt is
  answered; then (left idle until the warm-up is over) warm prompts → first chunk;
- `R`: a prompt whose model turn calls `read_file`, sent at once: spawn → response and
  prompt → response;
- `W`: a prompt whose model turn writes an existing file through the editor, sent at
  once: spawn → `session/request_permission` asked and prompt → asked;
- `L`: `session/load` of a 20-prompt session recorded beforehand (by another process
  of the same agent), sent right after `initialize`: spawn → its response (the replay
  is done before it), then a prompt at once: spawn → its first chunk. An agent whose
  load fails across processes gets "-" and its error in the notes.

With `--peer gemini` each figure has Gemini CLI's from the same run as its baseline.
`import_profile` runs the `A` start under `-X importtime` and lists the imports done by
the time the first prompt is answered.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from bench.client import AgentProcess, Message, Received
from bench.common import WARM_PAUSE_S, WARM_PROMPTS, Metric, Sandbox, sandbox, settle
from bench.contenders import (
    EDITED_FILE,
    Contender,
    adk_contender,
    adk_first_spawn_contender,
    adk_warm_contender,
    gemini_contender,
    install_gemini_cli,
    peer_metric,
    stop_servers,
    warm_server,
    write_script,
)
from bench.importtime import ImportRecord, parse_importtime
from bench.script import call, line

LOADED_PROMPTS = 20
PROMPT_TIMEOUT_S = 120.0
IMPORTS_SHOWN = 15


def _text_script(replies: int) -> str:
    return line({"text": "Hello there."}) * replies


def _read_script() -> str:
    return line(call("read_file", {"file_path": "README.md"})) + _text_script(4)


@dataclass
class FirstRun:
    """One sample of one agent (seconds from spawn unless named otherwise; MB)."""

    initialize: list[float] = field(default_factory=list)  # every process of the sample
    session_new: float = 0.0
    session_new_request: float = 0.0  # request → answer
    first_chunk: float = 0.0
    rss_mb: float = 0.0
    processes: int = 0  # in the agent's process tree when RSS was read
    warm_first_chunk: list[float] = field(default_factory=list)
    read_end: float = 0.0
    read_turn: float = 0.0  # prompt → response
    permission: float = 0.0
    permission_turn: float = 0.0  # prompt → permission asked
    wrote: bool = False
    load: list[float] = field(default_factory=list)  # empty when the load failed
    load_chunk: list[float] = field(default_factory=list)
    replayed: int = 0  # messages replayed by the load
    replayed_after: int = 0  # of them, how many came after the load's response
    load_error: str = ""


def _spawn(who: Contender, root: Path, name: str, script: str) -> AgentProcess:
    path = root / name
    path.write_text(script, encoding="utf-8")
    return who.spawn(path)


def _initialize(agent: AgentProcess, run: FirstRun) -> Received:
    init = agent.initialize(timeout=PROMPT_TIMEOUT_S)
    init.result  # noqa: B018 - raises on an error response
    run.initialize.append(init.t - agent.spawned_at)
    return init


def _at_once(agent: AgentProcess, run: FirstRun, cwd: Path) -> tuple[str, Received]:
    """`initialize`, then `session/new` the moment its answer is read."""
    _initialize(agent, run)
    created = agent.new_session(cwd, timeout=PROMPT_TIMEOUT_S)
    return str(created.result["sessionId"]), created


def _ended(agent: AgentProcess, session: str, text: str) -> float:
    """Send a prompt and read it to its end; the time of its first chunk."""
    turn = agent.prompt(session, text, timeout=PROMPT_TIMEOUT_S)
    if turn.stop_reason != "end_turn" or turn.first_chunk is None:
        raise RuntimeError(f"{text!r} ended with {turn.response} after {turn.chunks} chunks")
    return turn.first_chunk


def record_sessions(who: Contender, root: Path, count: int) -> list[str]:
    """`count` sessions of `LOADED_PROMPTS` prompts each, recorded by one process."""
    with _spawn(who, root, "record.jsonl", _text_script(count * LOADED_PROMPTS + 4)) as agent:
        agent.initialize(timeout=PROMPT_TIMEOUT_S).result  # noqa: B018
        ids = []
        for _ in range(count):
            session = str(
                agent.new_session(who.workspace, timeout=PROMPT_TIMEOUT_S).result["sessionId"]
            )
            for i in range(LOADED_PROMPTS):
                _ended(agent, session, f"prompt {i} of a thread to reopen")
            ids.append(session)
        agent.close()
    return ids


def _text_at_once(who: Contender, root: Path, run: FirstRun) -> None:
    with _spawn(who, root, "a.jsonl", _text_script(WARM_PROMPTS + 4)) as agent:
        session, created = _at_once(agent, run, who.workspace)
        run.session_new = created.t - agent.spawned_at
        run.session_new_request = run.session_new - run.initialize[-1]  # sent once read
        run.first_chunk = _ended(agent, session, "hello") - agent.spawned_at
        run.rss_mb, run.processes = tree_rss_mb(agent.pid)
        child = warm_child(agent)
        if child is not None:  # the agent proper: the warm server's child, not the spawn's
            rss, count = tree_rss_mb(child)
            run.rss_mb, run.processes = run.rss_mb + rss, run.processes + count
        settle(agent, who.spec(root / "a.jsonl"))
        for _ in range(WARM_PROMPTS):
            agent.drain(WARM_PAUSE_S)
            run.warm_first_chunk.append(agent.prompt(session, "hello again").to_first_chunk)
        agent.close()


def _read_at_once(who: Contender, root: Path, run: FirstRun) -> None:
    with _spawn(who, root, "r.jsonl", _read_script()) as agent:
        session, _ = _at_once(agent, run, who.workspace)
        turn = agent.prompt(session, "read the README", timeout=PROMPT_TIMEOUT_S)
        if turn.stop_reason != "end_turn":
            raise RuntimeError(f"read: ended with {turn.response}")
        run.read_turn = turn.to_end
        run.read_end = turn.to_end + turn.sent - agent.spawned_at
        agent.close()


def _write_at_once(who: Contender, root: Path, run: FirstRun, tag: str) -> None:
    with _spawn(who, root, "w.jsonl", write_script(tag)) as agent:
        session, _ = _at_once(agent, run, who.workspace)
        turn = agent.start_prompt(session, "update the notes")
        asked = agent.wait_for(
            lambda m: m.get("method") == "session/request_permission",
            since=turn.mark,
            timeout=PROMPT_TIMEOUT_S,
        )
        run.permission = asked.t - agent.spawned_at
        run.permission_turn = asked.t - turn.sent
        agent.finish_turn(turn, timeout=PROMPT_TIMEOUT_S)
        agent.close()
    run.wrote = f"run {tag}" in (who.workspace / EDITED_FILE).read_text(encoding="utf-8")


def _replay_done(agent: AgentProcess, since: int) -> Received:
    """The replayed answer to the recorded session's last prompt (Gemini CLI replays
    after answering `session/load`, adk-acp before)."""
    last = f"prompt {LOADED_PROMPTS - 1} of a thread to reopen"
    seen = False

    def last_answer(msg: Message) -> bool:
        nonlocal seen
        if msg.get("method") != "session/update":
            return False
        update = (msg.get("params") or {}).get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "user_message_chunk" and last in str((update.get("content") or {}).get("text")):
            seen = True
        return seen and kind == "agent_message_chunk"

    return agent.wait_for(last_answer, since=since, timeout=PROMPT_TIMEOUT_S)


REPLAYED_KINDS = {"user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"}


def _replayed(items: Sequence[Received]) -> int:
    """How many of `items` are replayed messages (not state updates such as commands)."""
    return sum(
        1
        for item in items
        if item.msg.get("method") == "session/update"
        and ((item.msg.get("params") or {}).get("update") or {}).get("sessionUpdate")
        in REPLAYED_KINDS
    )


def _load_at_once(who: Contender, root: Path, run: FirstRun, session: str) -> None:
    with _spawn(who, root, "l.jsonl", _text_script(4)) as agent:
        init = _initialize(agent, run)
        offered = (init.result.get("agentCapabilities") or {}).get("loadSession")
        mark = len(agent.received)
        params: Message = {"sessionId": session, "cwd": str(who.workspace), "mcpServers": []}
        loaded = agent.call("session/load", params, timeout=PROMPT_TIMEOUT_S)
        if "error" in loaded.msg:
            run.load_error = f"{loaded.msg['error']} (loadSession offered: {offered})"
        else:
            done = _replay_done(agent, mark)
            answered = next(k for k, item in enumerate(agent.received) if item is loaded)
            run.replayed = _replayed(agent.received[mark:])
            run.replayed_after = _replayed(agent.received[answered:])
            run.load.append(max(loaded.t, done.t) - agent.spawned_at)
            run.load_chunk.append(_ended(agent, session, "and now?") - agent.spawned_at)
        agent.close()


def run_once(who: Contender, root: Path, tag: str, recorded: str) -> FirstRun:
    run = FirstRun()
    scripts = root / f"first-scripts-{who.home.parent.name}-{tag}"
    scripts.mkdir(parents=True, exist_ok=True)
    _text_at_once(who, scripts, run)
    _read_at_once(who, scripts, run)
    _write_at_once(who, scripts, run, tag)
    _load_at_once(who, scripts, run, recorded)
    return run


WARM_CHILD = re.compile(r"warm: served by child (\d+)")


def warm_child(agent: AgentProcess) -> int | None:
    """The pid of the warm server's child serving this spawn (None: served cold)."""
    found = WARM_CHILD.search(agent.stderr_text(limit=None))
    return int(found.group(1)) if found else None


def tree_rss_mb(pid: int) -> tuple[float, int]:
    """VmRSS summed over `pid` and its descendants (MB), and how many processes that is.

    An agent may re-launch itself in a child (Node's heap flags): its memory is the tree's.
    """
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree = {pid}
    grew = True
    while grew:
        found = {p for p, parent in parents.items() if parent in tree} - tree
        grew = bool(found)
        tree |= found
    total = 0
    for member in tree:
        try:
            with open(f"/proc/{member}/status", encoding="ascii") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total / 1024, len(tree)


# ---------------------------------------------------------------- the first spawn (issue 32.4)


@dataclass
class FirstSpawn:
    """A fresh process driven at once, as in `A` (seconds)."""

    first_chunk: float = 0.0  # spawn → the first prompt's first chunk
    answered: float = 0.0  # spawn → the first prompt answered
    next_chunk: float = 0.0  # a second prompt sent at once: prompt → first chunk
    started_server: bool = False


def _first_spawn(who: Contender, root: Path, tag: str) -> FirstSpawn:
    run = FirstSpawn()
    with _spawn(who, root, f"s-{tag}.jsonl", _text_script(6)) as agent:
        session, _ = _at_once(agent, FirstRun(), who.workspace)
        turn = agent.prompt(session, "hello", timeout=PROMPT_TIMEOUT_S)
        if turn.stop_reason != "end_turn" or turn.first_chunk is None:
            raise RuntimeError(f"first spawn: ended with {turn.response}")
        run.first_chunk = turn.first_chunk - agent.spawned_at
        run.answered = turn.sent + turn.to_end - agent.spawned_at
        run.next_chunk = agent.prompt(session, "again", timeout=PROMPT_TIMEOUT_S).to_first_chunk
        agent.close()
    return run


def measure_first_spawn(box: Sandbox, samples: int) -> tuple[list[Metric], list[str]]:
    """The first spawn with the warm server on (none runs yet: it is served cold and starts
    the server) beside a `--no-warm` spawn (`ADK_ACP_NO_WARM=1`), interleaved: spawn →
    first chunk and → answer of a prompt sent at once, then a second prompt at once (the
    server starts once the spawn is idle: after these). Each sample's server is stopped
    before the next spawn."""
    cold = adk_contender(box, room="spawn-cold")
    scripts = box.root / "spawn-scripts"
    scripts.mkdir(exist_ok=True)
    cold_runs: list[FirstSpawn] = []
    warm_runs: list[FirstSpawn] = []
    for i in range(samples):  # interleaved, each first in turn
        first = adk_first_spawn_contender(box, box.root / f"r{i}", room="spawn-warm")
        for side in ("cold", "warm") if i % 2 == 0 else ("warm", "cold"):
            if side == "cold":
                cold_runs.append(_first_spawn(cold, scripts, f"c{i}"))
                continue
            run = _first_spawn(first, scripts, f"w{i}")
            run.started_server = stop_servers(first)
            warm_runs.append(run)
    base = "--no-warm"
    started = sum(r.started_server for r in warm_runs)
    paired = [w.first_chunk / c.first_chunk for w, c in zip(warm_runs, cold_runs, strict=True)]
    rows = [
        peer_metric(
            warm_runs,
            cold_runs,
            base,
            "first_spawn_chunk",
            "first spawn, warm on: spawn → 1st chunk, prompt at once",
            "first_chunk",
            target=1.05,
            ratio_target=True,
            note=f"it started the warm server in {started}/{len(warm_runs)} samples",
        ),
        Metric(
            "first_spawn_chunk_paired",
            "first spawn, warm on ÷ its --no-warm pair: spawn → 1st chunk",
            "x",
            paired,
            target=1.05,
            note="each sample's own ratio (both spawns of a pair see the same load)",
            baseline_name=base,
        ),
        peer_metric(
            warm_runs,
            cold_runs,
            base,
            "first_spawn_answered",
            "first spawn, warm on: spawn → prompt answered",
            "answered",
            target=1.05,
            ratio_target=True,
        ),
        peer_metric(
            warm_runs,
            cold_runs,
            base,
            "first_spawn_next",
            "first spawn, warm on: 2nd prompt at once → 1st chunk",
            "next_chunk",
        ),
    ]
    looked = _serve_warm_cost(adk_first_spawn_contender(box, box.root / "r-look"), samples)
    notes = [
        f"what a warm-on spawn does more than a --no-warm one before serving cold (no server: "
        f"the folder, the installation key, a connect): {looked * 1000:.1f} ms "
        f"(median of {samples} fresh processes)"
    ]
    return rows, notes


_LOOK = """
import sys, time
started = time.perf_counter()
from acp_server.warm import client
served = client.serve_warm([])
sys.stdout.write(f"{time.perf_counter() - started} {served}")
"""


def _serve_warm_cost(who: Contender, samples: int) -> float:
    """Median seconds `serve_warm` takes in a fresh process when no server runs."""
    import subprocess

    costs = []
    for _ in range(samples):
        out = subprocess.run(
            [sys.executable, "-c", _LOOK],
            env=who.env,
            cwd=who.workspace,
            capture_output=True,
            text=True,
            timeout=PROMPT_TIMEOUT_S,
            check=True,
        ).stdout.split()
        if out[1:] != ["None"]:
            raise RuntimeError(f"serve_warm did not serve cold: {out}")
        costs.append(float(out[0]))
    return statistics.median(costs)


# ---------------------------------------------------------------- where the time goes


def import_profile(who: Contender, root: Path) -> tuple[float, list[ImportRecord]]:
    """Spawn → first chunk of an `A` start under `-X importtime`, and the imports finished
    by the time that prompt is answered (both threads: the loader and the warm-up)."""
    script = root / "importtime.jsonl"
    script.write_text(_text_script(4), encoding="utf-8")
    env = {**who.env, "PYTHONPROFILEIMPORTTIME": "1"}
    with AgentProcess.spawn(who.spec(script).argv, env=env, cwd=who.workspace, fs=True) as agent:
        session, _ = _at_once(agent, FirstRun(), who.workspace)
        chunk = _ended(agent, session, "hello") - agent.spawned_at
        stderr = agent.stderr_text(limit=None)
        agent.close()
    return chunk, parse_importtime(stderr)


def import_table(chunk: float, records: Sequence[ImportRecord], top: int = IMPORTS_SHOWN) -> str:
    """A Markdown table of the `top` imports by cumulative time."""
    total = sum(r.self_s for r in records)
    rows = sorted(records, key=lambda r: -r.cumulative_s)[:top]
    lines = [
        f"spawn → first chunk {chunk * 1000:.0f} ms under -X importtime; {len(records)} "
        f"modules imported by the response, {total * 1000:.0f} ms of import work in all",
        "",
        "| module | cumulative | self |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{r.name}` | {r.cumulative_s * 1000:.0f} ms | {r.self_s * 1000:.1f} ms |" for r in rows
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- the figures


def measure_first(
    box: Sandbox, samples: int, peer: str | None = None, profile: bool = True, warm: bool = True
) -> tuple[list[Metric], list[str]]:
    """The issue-23 rows, and notes (load errors, replay sizes, the import profile).

    `warm`: the same scenarios again, each spawn served by the warm per-user server
    (started before the samples and left running through them; every spawn is fresh)."""
    ours = adk_contender(box, room="first")
    theirs = gemini_contender(box, install_gemini_cli(), room="first") if peer == "gemini" else None
    served = adk_warm_contender(box, room="first") if warm else None
    notes: list[str] = []
    with warm_server(served) if served is not None else nullcontext(0) as server:
        contenders = [c for c in (ours, served, theirs) if c is not None]
        recorded = {
            c.name: record_sessions(c, box.root / c.home.parent.name, samples) for c in contenders
        }
        mine: list[FirstRun] = []
        warmed: list[FirstRun] = []
        peers: list[FirstRun] = []
        for i in range(samples):  # interleaved, so all see the same machine
            mine.append(run_once(ours, box.root, f"a{i}", recorded[ours.name][i]))
            if served is not None:
                warmed.append(run_once(served, box.root, f"w{i}", recorded[served.name][i]))
            if theirs is not None:
                peers.append(run_once(theirs, box.root, f"g{i}", recorded[theirs.name][i]))
        if server:
            rss, _ = tree_rss_mb(server)
            notes.append(f"the warm server itself (the zygote, no child): {rss:.0f} MB RSS")
    failed = [r.load_error for r in mine + warmed if r.load_error]
    if failed:
        raise RuntimeError(f"adk-acp could not load a recorded session: {failed[0]}")

    base = theirs.name if theirs is not None else ""
    rows = first_rows(mine, peers, base)
    if warmed:
        rows += first_rows(warmed, peers, base, warm=True)
    if profile:
        chunk, records = import_profile(ours, box.root / ours.home.parent.name)
        top = sorted(records, key=lambda r: -r.cumulative_s)[:IMPORTS_SHOWN]
        notes.append(
            f"imports by the first answer of an at-once start (first chunk at {chunk:.2f} s "
            "under -X importtime; cumulative, two threads): "
            + ", ".join(f"{r.name} {r.cumulative_s * 1000:.0f} ms" for r in top)
        )
    return rows, notes


def first_rows(
    mine: list[FirstRun], peers: list[FirstRun], base: str, *, warm: bool = False
) -> list[Metric]:
    """The rows of one agent's runs; `warm`: served by the warm server (keys `…_warm`)."""

    def metric(
        key: str,
        label: str,
        attr: str,
        *,
        target: float | None = None,
        of_peer: bool = False,  # the target is a ratio to the peer's median
        unit: str = "ms",
        note: str = "",
    ) -> Metric:
        if of_peer and not peers:
            target = None  # no peer in this run: nothing to compare with
        return peer_metric(
            mine,
            peers,
            base,
            f"{key}_warm" if warm else key,
            f"warm server: {label}" if warm else label,
            attr,
            unit=unit,
            target=target,
            ratio_target=of_peer,
            note=note,
        )

    rows = [
        metric("first_init", "spawn → initialize answered", "initialize", note="all four starts"),
        metric(
            "first_session_new",
            "spawn → session/new answered (at once)",
            "session_new",
            target=0.100,
        ),
        metric(
            "first_session_new_request",
            "session/new request → answer (at once)",
            "session_new_request",
            target=0.020 if warm else None,
        ),
        metric(
            "first_chunk",
            "spawn → 1st chunk, prompt sent at once",
            "first_chunk",
            target=0.3,
            of_peer=True,
        ),
        metric("first_read_spawn", "spawn → read_file prompt answered (at once)", "read_end"),
        metric(
            "first_read",
            "read_file prompt at once: prompt → response",
            "read_turn",
            target=0.5,
            of_peer=True,
        ),
        metric("first_permission_spawn", "spawn → permission asked, write at once", "permission"),
        metric(
            "first_permission",
            "write at once: prompt → permission asked",
            "permission_turn",
            note=f"files written: {sum(r.wrote for r in mine)}/{len(mine)}"
            + (f" (peer {sum(r.wrote for r in peers)}/{len(peers)})" if peers else ""),
        ),
        metric(
            "first_load",
            f"spawn → session/load answered, {LOADED_PROMPTS}-prompt replay done",
            "load",
            target=0.150 if warm else 0.300,
            note=_load_note(mine, peers),
        ),
        metric(
            "first_load_chunk",
            "spawn → 1st chunk of the next prompt after load",
            "load_chunk",
            target=0.450,
        ),
        metric(
            "first_warm",
            "warm prompt → 1st chunk (after the A start)",
            "warm_first_chunk",
            target=0.003,
        ),
        metric(
            "first_rss",
            "RSS once the first prompt is answered",
            "rss_mb",
            unit="MB",
            target=130.0,
            note=(
                "the spawn, its child of the warm server (which shares the server's pages) "
                "and the child's watchdog: "
                if warm
                else "the agent's process tree: "
            )
            + f"{statistics.median(r.processes for r in mine):.0f} process(es)"
            + (f", peer {statistics.median(r.processes for r in peers):.0f}" if peers else ""),
        ),
    ]
    return rows


def _load_note(mine: list[FirstRun], peers: list[FirstRun]) -> str:
    replayed = statistics.median(r.replayed for r in mine)
    note = f"messages replayed: {replayed:.0f}"
    if peers:
        note += f" (peer {statistics.median(r.replayed for r in peers):.0f})"
    late = [r for r in peers if r.replayed_after]
    if late:
        note += (
            f"; the peer answers session/load before its replay ({len(late)}/{len(peers)}): "
            "its figure is when the replay's last message arrives"
        )
    errors = [r.load_error for r in peers if r.load_error]
    if errors:
        note += f"; peer's load fails across processes ({len(errors)}/{len(peers)}): {errors[0]}"
    return note


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m bench.first_bench --imports`: the import profile as a Markdown table."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--imports", action="store_true", help="print the import profile")
    parser.add_argument("--top", type=int, default=IMPORTS_SHOWN)
    args = parser.parse_args(argv)
    if not args.imports:
        parser.error("nothing to do (the figures: bench/run.py --only first)")
    with sandbox() as box:
        who = adk_contender(box, room="first")
        chunk, records = import_profile(who, box.root)
    sys.stdout.write(import_table(chunk, records, args.top) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
