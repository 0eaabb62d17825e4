"""`adk-acp --demo` end to end (issue #19, point 8): the README's first command.

The real process, with no key and no network (a `sitecustomize` in the test makes
every internet socket connection fail and notes it): its output shows the read, the
diff, the approval (answered automatically without a terminal, asked on one) and
the edit, and it exits 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.headless_harness import run_cli, run_in_pty
from tests.e2e.spine import dirs

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

NO_NETWORK = """
import os, socket

_connect = socket.socket.connect
_log = os.environ["DEMO_NETWORK_LOG"]


def _guarded(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        with open(_log, "a") as log:
            log.write(f"{address}\\n")
        raise OSError("the demo must not use the network")
    return _connect(self, address)


def _lookup(host, *args, **kwargs):
    with open(_log, "a") as log:
        log.write(f"lookup {host}\\n")
    raise OSError("the demo must not use the network")


socket.socket.connect = _guarded
socket.socket.connect_ex = lambda self, address: _guarded(self, address) or 0
socket.getaddrinfo = _lookup
"""


def test_demo_without_a_terminal_shows_read_diff_approval_and_edit(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    log = tmp_path / "network.log"
    done = run_cli(
        d, ["--demo"], api_key=None, env={"PYTHONPATH": str(guard), "DEMO_NETWORK_LOG": str(log)}
    )
    assert done.code == 0, done.stderr
    out = done.stderr
    assert "✓ Read hello.py" in out  # the read
    assert '-    return "Hello, world!"\n+    return f"Hello, {name}!"' in out  # the diff
    assert "? Edit hello.py" in out and "answered automatically" in out  # the approval
    assert "✓ Edit hello.py" in out  # the edit
    assert out.index("✓ Read") < out.index("? Edit") < out.index("answered") < out.index("✓ Edit")
    assert 'return f"Hello, {name}!"' in out.split("hello.py now reads:")[1]
    assert done.stdout.endswith('so hello.py prints "Hello, Ada!".\n')
    assert not log.exists(), log.read_text()
    assert "Traceback" not in out
    assert not list(d.home.iterdir()), "the demo wrote into the user's HOME"


def test_demo_on_a_terminal_asks_before_editing(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    done = run_in_pty(d, ["--demo"], [("Answer: ", "y\n")], api_key=None)
    assert done.code == 0, done.stdout
    assert "answered automatically" not in done.stdout
    assert '+    return f"Hello, {name}!"' in done.stdout
    assert "✓ Edit hello.py" in done.stdout
    assert "Hello, Ada!" in done.stdout


def test_demo_on_a_terminal_no_leaves_the_file(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    done = run_in_pty(d, ["--demo"], [("Answer: ", "n\n")], api_key=None)
    assert done.code == 0, done.stdout
    assert "✗ Edit hello.py" in done.stdout
    assert "the edit was not made" in done.stdout
    assert 'return "Hello, world!"' in done.stdout.split("hello.py now reads:")[1]
