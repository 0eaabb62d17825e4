"""Smoke test of the `serve` benchmark (`bench/serve_bench.py`): it still runs, with
tiny counts, on one instance and on two sharing PostgreSQL. No timing assertions: only
errors, cross-talk and that figures exist."""

from __future__ import annotations

import asyncio
import math

import pytest

from bench import common, serve_bench

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300), pytest.mark.cold]  # cold figures


def test_a_few_concurrent_remote_sessions_give_figures() -> None:
    with common.sandbox() as box:
        figures = asyncio.run(serve_bench.measure(box, sessions=3, prompts=2))
    assert figures.errors == [] and figures.cross_talk == 0
    assert len(figures.latencies_ms) == 6
    assert all(math.isfinite(x) and x > 0 for x in figures.latencies_ms)
    assert figures.rss_idle_mb > 0
    assert "p50" in figures.render() and "p99" in figures.render()


def test_a_few_sessions_over_two_instances_sharing_postgresql(pg_url: str) -> None:
    with common.sandbox() as box:
        figures = asyncio.run(serve_bench.measure(box, sessions=4, prompts=2, store_url=pg_url))
    assert figures.errors == [] and figures.cross_talk == 0  # each answer is its own prompt's
    assert len(figures.latencies_ms) == 8 and figures.instances == 2
    assert figures.rss_connected_mb > 0
    assert "instances: 2" in figures.render() and "p99" in figures.render()
