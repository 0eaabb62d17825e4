"""The contenders of the editor's-eye groups (`user`, `first`): adk-acp and, with
`--peer gemini`, Gemini CLI, each started on a `--fake-responses` script in a HOME and
workspace of its own, and a report row of ours beside the peer's.

Gemini CLI (`@google/gemini-cli`, pinned below) is installed from npm into a cache
directory on first use and runs through `--acp --fake-responses` in a hermetic HOME
(API-key auth selected, the workspace trusted, telemetry and update checks off).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.client import AgentProcess
from bench.common import AgentSpec, Metric, Sandbox, adk_acp_command
from bench.script import call, line

GEMINI_CLI = "@google/gemini-cli"
GEMINI_CLI_VERSION = "0.61.0"
EDITED_FILE = "notes.txt"  # in each contender's workspace; the `W` script rewrites it


def write_script(tag: str) -> str:
    """`W`: a write_file turn replacing an existing file with new content, then text."""
    content = f"notes of run {tag}\nsecond line\n"
    write = call("write_file", {"file_path": EDITED_FILE, "content": content})
    return line(write) + line({"text": "Written."}) + line({"text": "Spare."}) * 4


@dataclass
class Contender:
    """How to start one agent on a given script, in its own HOME and workspace."""

    name: str
    argv: tuple[str, ...]  # without the script flag
    script_flag: str
    env: Mapping[str, str]
    home: Path
    workspace: Path
    settle: bool = True

    def spec(self, script: Path) -> AgentSpec:
        return AgentSpec(
            name=self.name,
            argv=(*self.argv, self.script_flag, str(script)),
            env=self.env,
            cwd=str(self.workspace),
            settle=self.settle,
        )

    def spawn(self, script: Path) -> AgentProcess:
        return AgentProcess.spawn(self.spec(script).argv, env=self.env, cwd=self.workspace, fs=True)


def _workspace(root: Path) -> Path:
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("# bench workspace\n\nA line to read.\n", encoding="utf-8")
    (ws / EDITED_FILE).write_text("old notes\n", encoding="utf-8")
    return ws


def adk_contender(box: Sandbox, room: str = "user") -> Contender:
    root = box.root / f"{room}-adk"
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return Contender(
        name="adk-acp",
        argv=tuple(adk_acp_command()),
        script_flag="--fake-responses",
        env=box.env(HOME=str(home)),
        home=home,
        workspace=_workspace(root),
    )


def adk_warm_contender(box: Sandbox, room: str = "first") -> Contender:
    """adk-acp served by the warm per-user server (`acp_server/warm/`): each spawn is a
    fresh client process handed to a child of the server, whose folder is in the sandbox
    (`warm_server` starts and stops it)."""
    cold = adk_contender(box, room=f"{room}-warm")
    runtime = box.root / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {k: v for k, v in cold.env.items() if k != "ADK_ACP_NO_WARM"}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    return dataclasses.replace(cold, name="adk-acp (warm server)", env=env)


def adk_first_spawn_contender(box: Sandbox, runtime: Path, room: str = "spawn") -> Contender:
    """adk-acp with the warm server on, in runtime folder `runtime` where none runs yet:
    its spawn is a first spawn (served cold; it starts the server, which the caller
    stops: `stop_servers`)."""
    cold = adk_contender(box, room=room)
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {k: v for k, v in cold.env.items() if k != "ADK_ACP_NO_WARM"}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    return dataclasses.replace(cold, name="adk-acp (first spawn, warm on)", env=env)


def stop_servers(who: Contender, appear_s: float = 30.0) -> bool:
    """Wait (up to `appear_s`) for the server `who`'s spawn started, then stop it and wait
    until it is gone; whether one had started."""
    from acp_server.warm import place

    folder = place.folder(who.env)
    deadline = time.monotonic() + appear_s
    while not (found := place.servers(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in found.values():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while place.servers(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(found)


@contextmanager
def warm_server(who: Contender, ready_s: float = 300.0) -> Iterator[int]:
    """The warm server of `who`'s environment, started in the foreground (its pid), until
    ready; stopped at the end."""
    from acp_server.warm import client, place

    folder = place.folder(who.env)
    key = place.install_key()
    with open(Path(folder, f"{key}.log"), "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-P", "-m", "acp_server.warm.server", folder],
            env=client.server_env(who.env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + ready_s
            while not place.ready(folder, key):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"no warm server: see {log.name}")
                time.sleep(0.05)
            yield server.pid
        finally:
            server.terminate()
            server.wait(timeout=30)
            place.stop_server(folder, key)  # one a spawn started (sources changed mid-run)


def peer_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "adk-acp-bench" / f"gemini-cli-{GEMINI_CLI_VERSION}"


def install_gemini_cli(cache: Path | None = None) -> Path:
    """The `gemini` executable, installed from npm into the cache on first use."""
    cache = cache or peer_cache()
    binary = cache / "node_modules" / ".bin" / "gemini"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("--peer gemini needs npm (Node.js 20 or newer) on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(f"installing {GEMINI_CLI}@{GEMINI_CLI_VERSION} into {cache} …\n")
    subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(cache),
            f"{GEMINI_CLI}@{GEMINI_CLI_VERSION}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if not binary.exists():
        raise SystemExit(f"npm did not install {binary}")
    return binary


def gemini_contender(box: Sandbox, binary: Path, room: str = "user") -> Contender:
    root = box.root / f"{room}-gemini"
    home = root / "home"
    settings = home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    workspace = _workspace(root)
    (settings / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "ide": {"enabled": False},
            }
        ),
        encoding="utf-8",
    )
    (settings / "trustedFolders.json").write_text(
        json.dumps({str(workspace): "TRUST_FOLDER"}), encoding="utf-8"
    )
    return Contender(
        name=f"Gemini CLI {GEMINI_CLI_VERSION}",
        # Pinned like ours: no routing classifier call in either agent.
        argv=(str(binary), "--acp", "-m", "gemini-2.5-flash"),
        script_flag="--fake-responses",
        env=box.env(HOME=str(home), GEMINI_API_KEY="bench-fake-key"),
        home=home,
        workspace=workspace,
    )


# ---------------------------------------------------------------- a row beside the peer


def _flat(runs: Sequence[object], attr: str) -> list[float]:
    out: list[float] = []
    for r in runs:
        value = getattr(r, attr)
        out += value if isinstance(value, list) else [value]
    return out


def peer_metric(
    mine: Sequence[object],
    peers: Sequence[object],
    base: str,
    key: str,
    label: str,
    attr: str,
    *,
    unit: str = "ms",
    target: float | None = None,
    ratio_target: bool = False,
    note: str = "",
) -> Metric:
    """One row: attribute `attr` of our runs beside the peer's (named `base`)."""
    return Metric(
        key,
        label,
        unit,
        _flat(mine, attr),
        _flat(peers, attr),
        target=target,
        ratio_target=ratio_target,
        note=note,
        baseline_name=base,
    )
