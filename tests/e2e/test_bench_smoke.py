"""Smoke test of the benchmark code (`bench/run.py`, `bench/client.py`): it still runs.

The cheapest measurements once each, with tiny counts: spawn → initialize of both
agents, and one short `--fake-responses` prompt in a fresh adk-acp process without
waiting for the warm-up; the `user` and `first` groups (issue 23's fresh agents driven
at once) beside a stand-in for Gemini CLI. No timing assertions (the machine is shared
and noisy): only that the figures are positive numbers and the agents exit cleanly.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path

import pytest

from bench import common, contenders
from bench import run as bench
from bench.client import AgentProcess
from bench.importtime import import_children, import_self_times, parse_importtime
from bench.script import STREAM_CHUNKS

# Each runs whole benchmark scenarios (fresh agents, a stand-in peer): minutes on a busy machine.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600), pytest.mark.cold]  # cold figures


def _is_figure(value: object) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


@pytest.fixture(autouse=True)
def smallest_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest scenarios that still run every code path: the background warm-up
    waited for at least 0.5 s (not 3 s: only a benchmark needs it over), 2 warm prompts,
    a 20-prompt "long" session (its figure compares the last 10 with the first 10),
    4-prompt recorded sessions to load, and a 20-message session and 50 sessions (not
    200 and 1 000) for the session figures."""
    from bench import first_bench, sessions_bench, user_bench

    monkeypatch.setattr(common, "SETTLE_MIN_S", 0.5)
    for module in (common, first_bench, user_bench):
        monkeypatch.setattr(module, "WARM_PROMPTS", 2)
    monkeypatch.setattr(user_bench, "LONG_SESSION", 20)
    monkeypatch.setattr(first_bench, "LOADED_PROMPTS", 4)
    monkeypatch.setattr(sessions_bench, "LOAD_MESSAGES", 20)
    monkeypatch.setattr(sessions_bench, "LOAD_TOOL_CALLS", 5)
    monkeypatch.setattr(sessions_bench, "LISTED", 50)


@pytest.fixture
def box():
    with common.sandbox() as sandbox:
        yield sandbox


def test_spawn_to_initialize_gives_a_figure_for_both_agents(box: common.Sandbox) -> None:
    script = box.script("smoke.jsonl", short_turns=1, stream_turns=0)
    metric = bench.measure_spawn(common.adk_spec(box, script), common.echo_spec(box), runs=1)
    assert len(metric.samples) == len(metric.baseline) == 1
    assert _is_figure(metric.median) and _is_figure(metric.ratio)
    assert metric.verdict in {"meets", "misses"}
    assert "spawn → initialize" in bench.render_table([metric])


def test_one_prompt_through_the_bench_client(box: common.Sandbox) -> None:
    script = box.script("smoke.jsonl", short_turns=1, stream_turns=1)
    spec = common.adk_spec(box, script)
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018 - raises on an error response
        session_new, session_id = bench.timed_session_new(agent, spec.cwd)
        turn = agent.prompt(session_id, "hello")
        stream = agent.prompt(session_id, "stream please")
        rss = agent.rss_mb()
        code = agent.close()
    assert code == 0
    assert _is_figure(session_new) and _is_figure(rss)
    assert turn.stop_reason == "end_turn" and turn.chunks >= 1
    assert _is_figure(turn.to_first_chunk) and _is_figure(turn.to_end)
    # Chunks that arrive together may be sent together: 1..200 notifications.
    assert 1 <= stream.chunks <= STREAM_CHUNKS and _is_figure(stream.to_end)


def test_echo_floor_run_covers_every_fake_model_figure(box: common.Sandbox) -> None:
    run = bench.fake_model_run(common.echo_spec(box), warm_prompts=1, streams=1, repeats=1)
    figures = [
        run.session_new,
        run.rss_mb,
        run.cold_first_chunk,
        *run.warm_first_chunk,
        *run.stream_end,
        *run.session_new_repeat,
    ]
    assert all(_is_figure(v) for v in figures)
    assert run.stream_chunks == [STREAM_CHUNKS]


def test_echo_floor_cancel_and_one_shot(box: common.Sandbox) -> None:
    echo = common.echo_spec(box)
    api = bench.api_run(echo, cancels=1)
    assert all(_is_figure(v) for v in (api.session_new, api.warm_first_chunk, *api.cancels))
    shot = common.one_shot(echo)
    assert 0 < shot.initialize <= shot.session_new <= shot.first_chunk <= shot.end


def test_importtime_parsing() -> None:
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |     json.decoder\n"
        "import time:       200 |        300 |   json\n"
        "import time:        50 |        350 | google.adk.runners\n"
    )
    records = parse_importtime(stderr)
    assert [(r.name, r.depth) for r in records] == [
        ("json.decoder", 2),
        ("json", 1),
        ("google.adk.runners", 0),
    ]
    total, children = import_children(records, "google.adk.runners")
    assert total == pytest.approx(350e-6) and [c.name for c in children] == ["json"]
    assert import_self_times(records) == pytest.approx({"json": 300e-6, "google.adk": 50e-6})


def test_client_kill_reaps_the_process() -> None:
    agent = AgentProcess.spawn([sys.executable, "-c", "import time; time.sleep(30)"])
    started = time.perf_counter()
    agent.kill()
    assert agent.proc.returncode is not None and time.perf_counter() - started < 5


def test_tool_round_trips_run_for_both_agents(box: common.Sandbox) -> None:
    from bench.tools_bench import tool_run, tools_script

    script = box.root / "tools.jsonl"
    script.write_text(tools_script(1), encoding="utf-8")
    adk = common.adk_spec(box, script)
    fast = common.AgentSpec(adk.name, adk.argv, adk.env, adk.cwd, settle=False)
    reads, writes, cancels = tool_run(fast, 1)
    floor = tool_run(common.echo_spec(box), 1)
    assert all(_is_figure(v) for v in (*reads, *writes, *cancels, *floor[0], *floor[1], *floor[2]))
    assert (box.workspace / "out" / "bench_0.txt").read_text() == "line 0\n"


def test_session_figures_run(box: common.Sandbox) -> None:
    from bench.sessions_bench import load_and_list_run, per_message_cost, stream_overhead

    news, loaded, listed, floor = load_and_list_run(box, 1)
    with_rec, without = stream_overhead(box, rounds=1, turns=1)
    per_message = per_message_cost(box, 5)
    figures = (*news, *loaded, *listed, *floor, *with_rec, *without, *per_message)
    assert len(figures) == 11 and all(_is_figure(v) for v in figures)


def test_extensibility_figures_run(box: common.Sandbox) -> None:
    from bench.extensibility_bench import hook_pair_cost, session_new_with_servers

    pairs, bare = hook_pair_cost(box, 2)
    with_servers, without = session_new_with_servers(box, 1)
    figures = (*pairs, *bare, *with_servers, *without)
    assert len(figures) == 6 and all(_is_figure(v) for v in figures)


def test_many_sessions_run(box: common.Sandbox) -> None:
    from bench.sessions_bench import many_sessions_run

    run = many_sessions_run(box, sessions=3, prompts=2)
    assert len(run["latencies"]) == 6 and all(_is_figure(v) for v in run["latencies"])
    assert _is_figure(run["total_s"])


def test_turn_cost_figures_run(box: common.Sandbox) -> None:
    from bench.turns_bench import in_process, over_http, windows

    for run in (in_process, over_http):
        times = run(box, 14)
        marks = windows(times, (2, 4))  # the 10 turns from each mark
        assert len(times) == 14 and set(marks) == {2, 4}
        assert all(_is_figure(v) for v in marks.values())


def test_subagent_overhead_runs(box: common.Sandbox) -> None:
    from bench.extensibility_bench import subagent_overhead

    invocations, turns = subagent_overhead(box, 2)
    assert len(invocations) == len(turns) == 2
    assert all(_is_figure(v) for v in (*invocations, *turns))


@pytest.fixture
def stand_in_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`--peer gemini` without the network: the cached "Gemini CLI" is a stand-in script
    that runs adk-acp on the script it is given."""

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    binary = contenders.peer_cache() / "node_modules" / ".bin" / "gemini"
    binary.parent.mkdir(parents=True)
    adk = common.adk_acp_command()[0]
    binary.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = --fake-responses ] && f="$2"; shift; done\n'
        f'exec {adk} --fake-responses "$f"\n',
        encoding="utf-8",
    )
    binary.chmod(0o755)
    assert contenders.install_gemini_cli() == binary  # found in the cache: no npm
    return binary


def _beside_the_peer(metrics: list[common.Metric]) -> None:
    for m in metrics:
        assert m.samples and m.baseline, m.key
        assert all(_is_figure(v) for v in m.samples + m.baseline), m.key
        assert m.baseline_name.startswith("Gemini CLI")


def test_user_group_beside_a_stand_in_peer(box: common.Sandbox, stand_in_peer: Path) -> None:
    from bench import user_bench

    metrics = user_bench.measure_user(box, procs=1, peer="gemini")
    assert [m.key for m in metrics] == [
        "user_spawn_init",
        "user_session_new",
        "user_oneshot",
        "user_first_read",
        "user_first_write",
        "user_warm",
        "user_long",
    ]
    _beside_the_peer(metrics)
    assert "files written: 1/1 (peer 1/1)" in metrics[4].note
    table = bench.render_tables(metrics)
    long_session = f"{user_bench.LONG_SESSION}-prompt session"
    assert "baseline (Gemini CLI" in table and long_session in table


@pytest.mark.timeout(900)  # ten fresh agents and a recorded session each side
def test_first_group_beside_a_stand_in_peer(box: common.Sandbox, stand_in_peer: Path) -> None:
    """Issue 23's rows: fresh processes driven at once, a recorded session loaded at spawn."""
    from bench import first_bench

    metrics, notes = first_bench.measure_first(box, samples=1, peer="gemini")
    by_key = {m.key: m for m in metrics}
    cold = [
        "first_init",
        "first_session_new",
        "first_session_new_request",
        "first_chunk",
        "first_read_spawn",
        "first_read",
        "first_permission_spawn",
        "first_permission",
        "first_load",
        "first_load_chunk",
        "first_warm",
        "first_rss",
    ]
    assert list(by_key) == cold + [f"{key}_warm" for key in cold]  # the warm server's rows
    _beside_the_peer(metrics)
    assert "files written: 1/1" in by_key["first_permission_warm"].note
    # the spawn and its warm child, and the child's watchdog once it has started
    assert re.search(r"\b[23] process\(es\)", by_key["first_rss_warm"].note)
    assert "the warm server itself" in notes[0]
    assert len(by_key["first_init"].samples) == 4  # A, R, W and L each start fresh
    assert by_key["first_chunk"].ratio_target and by_key["first_chunk"].target == 0.3
    assert by_key["first_load"].target == pytest.approx(0.300)
    assert "files written: 1/1 (peer 1/1)" in by_key["first_permission"].note
    replayed = re.search(r"messages replayed: (\d+)", by_key["first_load"].note)
    assert replayed and int(replayed.group(1)) >= 2 * first_bench.LOADED_PROMPTS
    assert len(notes) == 2 and "google" in notes[1]
    assert "spawn → 1st chunk, prompt sent at once" in bench.render_tables(metrics)
    side = bench.render_side_by_side(metrics, (1.5, 2.5)).splitlines()
    assert side[0] == "cold and warm-served side by side (load 1.50 → 2.50)"
    header = [cell.strip() for cell in side[1].split(" | ")]
    assert header[1].startswith("Gemini CLI") and header[2:] == ["cold", "warm-served"]
    assert len(side) == 3 + len(cold)  # title, header, rule, one row per figure


def test_first_spawn_group_beside_no_warm(box: common.Sandbox) -> None:
    """Issue 32.4's rows: the first spawn with the warm server on (it starts the server,
    stopped after) beside a `--no-warm` spawn; no server is left."""
    from acp_server.warm import place
    from bench import first_bench

    metrics, notes = first_bench.measure_first_spawn(box, samples=1)
    keys = ["first_spawn_chunk", "first_spawn_chunk_paired", "first_spawn_answered"]
    assert [m.key for m in metrics] == [*keys, "first_spawn_next"]
    assert all(m.baseline_name == "--no-warm" for m in metrics)
    assert all(_is_figure(v) for m in metrics for v in (*m.samples, *m.baseline))
    assert "started the warm server in 1/1 samples" in metrics[0].note
    paired = metrics[1]
    assert (paired.unit, paired.target, paired.baseline) == ("x", 1.05, [])
    assert "before serving cold" in notes[0]
    assert place.servers(str(box.root / "r0" / "adk-acp")) == {}
    assert "baseline (--no-warm)" in bench.render_tables(metrics)


def test_first_group_reports_a_peer_whose_load_fails() -> None:
    from bench.first_bench import FirstRun, _load_note

    ours = FirstRun(replayed=40)
    theirs = FirstRun(load_error="No previous sessions found for this project.")
    note = _load_note([ours], [theirs])
    late = _load_note([ours], [FirstRun(replayed=40, replayed_after=40)])
    assert "answers session/load before its replay (1/1)" in late
    assert "messages replayed: 40 (peer 0)" in note
    assert "fails across processes (1/1): No previous sessions found" in note


def test_import_table_and_process_tree_memory() -> None:
    from bench.first_bench import import_table, tree_rss_mb

    records = parse_importtime(
        "import time:       100 |        100 |   json.decoder\n"
        "import time:       200 |        300 | json\n"
    )
    table = import_table(1.5, records, top=1)
    assert "spawn → first chunk 1500 ms" in table and "2 modules" in table
    assert table.splitlines()[-1] == "| `json` | 0 ms | 0.2 ms |"
    with AgentProcess.spawn([sys.executable, "-c", "import time; time.sleep(30)"]) as child:
        rss, processes = tree_rss_mb(os.getpid())
        assert processes >= 2 and _is_figure(rss)  # this process and the child at least
        assert tree_rss_mb(child.pid)[1] == 1
