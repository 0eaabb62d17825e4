"""The e2e tier runs its agents warm, per test process (`tests/e2e/warm_tier.py`);
a test or module marked `cold` keeps them cold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import warm_tier

_BEFORE = pytest.StashKey[dict[str, str | None]]()
_CPU = pytest.StashKey[float]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", warm_tier.COLD_MARK_HELP)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures (module-scoped agents too): warm or cold agents."""
    cold = item.get_closest_marker(warm_tier.COLD_MARK) is not None
    item.stash[_BEFORE] = warm_tier.apply(warm_tier.environment(cold))


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield
    before = item.stash.get(_BEFORE, None)
    if before is not None:
        warm_tier.apply(before)


def pytest_sessionfinish(session: pytest.Session) -> None:
    used = warm_tier.stop()
    if used is not None:
        session.config.stash[_CPU] = used


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The warm server's CPU (not counted in this process' own: its agents are not our
    children); only in a run without xdist workers."""
    if _CPU in config.stash:
        terminalreporter.write_line(f"warm server: {config.stash[_CPU]:.2f} s of CPU")
