"""bubblewrap for the sandbox tests (issue 35): installed with apt-get when missing
(`debian_packages.ensure_package`: root only, as in CI), then checked to run here."""

from __future__ import annotations

import shutil
import subprocess

from tests.debian_packages import ensure_package


def ensure_bwrap() -> str:
    """The path of a working `bwrap`; fails the test saying what is missing."""
    program = ensure_package("bubblewrap", lambda: shutil.which("bwrap"), "bubblewrap (bwrap)")
    version = subprocess.run([program, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("bubblewrap "), version.stdout
    return program
