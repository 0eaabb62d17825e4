"""The order the test files run in: the longest first.

With `-n auto --dist loadfile` each file runs whole on one worker, and the workers take
files in the collection's order (`tests/conftest.py` turns off pytest-xdist's own
reordering, which sorts by the number of tests). A long file taken last would run alone
at the end; taken first, the short ones fill in beside it. The figures are each file's
seconds, roughly (`pytest --durations=0`, summed per file, scaled to a quiet 2-core
machine); a file not listed counts as short and keeps its place. They only order the
files: a wrong figure costs time, never a result.
"""

from __future__ import annotations

import pytest

SECONDS = {
    "tests/vscode/test_extension_browser.py": 225,
    "tests/e2e/test_bench_smoke.py": 150,
    "tests/e2e/test_sessions.py": 110,
    "tests/e2e/test_real_clients_node.py": 90,
    "tests/e2e/test_real_clients_python.py": 90,
    "tests/e2e/test_hostile_tools.py": 70,
    "tests/e2e/test_deploy_proxy.py": 70,
    "tests/e2e/test_serve_pair.py": 70,
    "tests/e2e/test_acp_v2.py": 60,
    "tests/e2e/test_warm_server.py": 60,
    "tests/vscode/test_extension_unit.py": 60,
    "tests/e2e/test_serve_bench_smoke.py": 50,
    "tests/e2e/test_tools_files.py": 50,
    "tests/e2e/test_sessions_postgres.py": 50,
    "tests/fuzz/test_fuzz_transport.py": 40,
}


def longest_files_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: files by `SECONDS`, descending; tests in a file and
    files not listed keep their order (the sort is stable)."""
    items.sort(key=lambda item: -SECONDS.get(item.nodeid.split("::", 1)[0], 0))
