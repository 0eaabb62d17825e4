"""The order the test files run in: the longest first.

With `-n auto --dist loadfile` each file runs whole on one worker, and the workers take
files in the collection's order (`tests/conftest.py` turns off pytest-xdist's own
reordering, which sorts by the number of tests). A long file taken last would run alone
at the end; taken first, the short ones fill in beside it. The figures are each file's
seconds in one run of the whole suite (`--junitxml`, summed per file; 2 cores at load ~6,
so about twice a quiet machine's); a file not listed counts as short and keeps its
place. They only order the files: a wrong figure costs time, never a result.
"""

from __future__ import annotations

import pytest

SECONDS = {
    "tests/e2e/test_bench_smoke.py": 331,
    "tests/vscode/test_extension_browser.py": 288,
    "tests/e2e/test_sessions.py": 161,
    "tests/vscode/test_edit_review_browser.py": 150,
    "tests/e2e/test_tools_files.py": 124,
    "tests/e2e/test_warm_fidelity.py": 150,
    "tests/e2e/test_hostile_tools.py": 82,
    "tests/e2e/test_hooks_contract.py": 75,
    "tests/e2e/test_sessions_postgres.py": 73,
    "tests/e2e/test_install.py": 63,
    "tests/vscode/test_extension_unit.py": 57,
    "tests/e2e/test_mcp_settings.py": 57,
    "tests/e2e/test_model_answers.py": 54,
    "tests/e2e/test_other_providers.py": 55,
    "tests/e2e/test_reopen_cold.py": 54,
    "tests/e2e/test_hooks_events.py": 51,
    "tests/e2e/test_serve_pair.py": 51,
    "tests/e2e/test_session_commands.py": 50,
    "tests/e2e/test_spine_protocol.py": 46,
    "tests/e2e/test_serve_sessions.py": 43,
    "tests/e2e/test_sandbox.py": 60,
    "tests/e2e/test_nothing_silent.py": 38,
    "tests/e2e/test_acp_v2.py": 38,
    "tests/e2e/test_serve_bench_smoke.py": 37,
    "tests/e2e/test_real_clients_node.py": 36,
    "tests/e2e/test_warm_server.py": 35,
    "tests/e2e/test_headless.py": 35,
    "tests/e2e/test_hooks.py": 31,
    "tests/e2e/test_resilience_fallback.py": 31,
}


def longest_files_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: files by `SECONDS`, descending; tests in a file and
    files not listed keep their order (the sort is stable)."""
    items.sort(key=lambda item: -SECONDS.get(item.nodeid.split("::", 1)[0], 0))
