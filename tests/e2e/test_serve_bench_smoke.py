"""Smoke test of the `serve` benchmark (`bench/serve_bench.py`): it still runs, with
tiny counts. No timing assertions: only errors, cross-talk and that figures exist."""

from __future__ import annotations

import asyncio
import math

import pytest

from bench import common, serve_bench

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_a_few_concurrent_remote_sessions_give_figures() -> None:
    with common.sandbox() as box:
        figures = asyncio.run(serve_bench.measure(box, sessions=3, prompts=2))
    assert figures.errors == [] and figures.cross_talk == 0
    assert len(figures.latencies_ms) == 6
    assert all(math.isfinite(x) and x > 0 for x in figures.latencies_ms)
    assert figures.rss_idle_mb > 0
    assert "p50" in figures.render() and "p99" in figures.render()
