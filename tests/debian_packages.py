"""Debian packages the tests install on first use (PostgreSQL's server in
`tests/pg_cluster.py`, nginx in `tests/e2e/test_deploy_proxy.py`).

CI is a clean machine that runs the tests as root with no stdin: a missing package is
installed there with apt-get, under one file lock for every package (dpkg takes one
installer at a time, and parallel workers install once). Without root the test fails
with what to install.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.cache_lock import install_lock

APT_LOCK = Path(tempfile.gettempdir()) / "adk-acp-tests" / "apt-get"

Found = TypeVar("Found")


class PackageUnavailable(RuntimeError):
    """The package is missing and cannot be installed here."""


def ensure_package(package: str, find: Callable[[], Found | None], needs: str) -> Found:
    """`find()`'s answer, after `apt-get install package` if it found nothing (root
    only). `needs` names what the tests need from it, for the error message."""
    with install_lock(APT_LOCK):
        found = find()
        if found is not None:
            return found
        if os.geteuid() != 0:
            raise PackageUnavailable(
                f"the tests need {needs}: run `sudo apt-get install {package}`, or run the "
                "tests as root to have it installed"
            )
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        steps = (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
        )
        for step in steps:
            done = subprocess.run(
                step, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise PackageUnavailable(
                    f"installing {package} failed ({' '.join(step)}, exit {done.returncode}):\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
        found = find()
        if found is None:
            raise PackageUnavailable(f"apt-get installed {package} but {needs} was not found")
        return found
