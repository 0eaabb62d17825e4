"""One installer at a time per cache folder, across test processes.

The suite runs on several pytest-xdist workers; two of them may reach the same
first-use install (the Node clients, the extension's modules, code-server) at once.
`install_lock(root)` holds an exclusive `flock` on a file beside `root` for the
whole check-then-install, so the second worker waits and then finds it installed.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def install_lock(root: Path) -> Iterator[None]:
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
