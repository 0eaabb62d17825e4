"""Shared set-up for the spine end-to-end tests (`test_spine_*.py`, issue #2).

Every test starts the real `adk-acp` process (`python -m acp_server.cli`) with an
isolated HOME and workspace under `tmp_path`, an environment cleared of the
user's Gemini/Vertex settings, and (usually) the fake Gemini server as its model.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, AcpTestClient
from tests.fakes.gemini_server import FakeGeminiServer

AGENT = AGENT_COMMAND
MakeAgent = Callable[..., Awaitable[AcpTestClient]]


@dataclass
class Dirs:
    """The isolated HOME and workspace of one test."""

    home: Path
    workspace: Path


def dirs(tmp_path: Path) -> Dirs:
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    return Dirs(home=home, workspace=workspace.resolve())


def agent_env(
    d: Dirs,
    fake: FakeGeminiServer | None = None,
    *,
    api_key: str | None = "x",
    **extra: str | None,
) -> dict[str, str | None]:
    """The agent's environment: HOME isolated, credentials only as given.

    With `fake`, the genai client talks to the fake server with `api_key`
    (None: no key in the environment). `extra` overlays (None removes a key).
    """
    env: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    env["HOME"] = str(d.home)
    env["XDG_CONFIG_HOME"] = str(d.home / ".config")
    if fake is not None:
        env["GOOGLE_GEMINI_BASE_URL"] = fake.base_url
        env["GEMINI_API_KEY"] = api_key
    env.update(extra)
    return env


async def start_agent(
    make_agent: MakeAgent,
    d: Dirs,
    fake: FakeGeminiServer | None = None,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str | None] | None = None,
    api_key: str | None = "x",
    caps: Mapping[str, Any] | None = None,
    initialize: bool = True,
    **options: Any,
) -> AcpTestClient:
    """Start the real agent (initialized unless told otherwise)."""
    full_env = agent_env(d, fake, api_key=api_key)
    full_env.update(env or {})
    client = await make_agent([*AGENT, *args], full_env, cwd=str(d.workspace), **options)
    if initialize:
        await client.initialize(caps)
    return client


async def start_session(
    make_agent: MakeAgent,
    d: Dirs,
    fake: FakeGeminiServer | None = None,
    **kwargs: Any,
) -> tuple[AcpTestClient, str]:
    """Start the agent and open one session in the workspace."""
    client = await start_agent(make_agent, d, fake, **kwargs)
    session = await client.new_session(d.workspace)
    return client, session["sessionId"]


def children_of(pid: int) -> list[int]:
    """Every live descendant of `pid`, from /proc (no psutil)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == current]
        found += kids
        frontier += kids
    return found


def request_texts(fake: FakeGeminiServer) -> list[str]:
    """All text parts of every generate request the fake server got, one string each."""
    out = []
    for request in fake.generate_requests:
        out.append(
            "\n".join(
                part.get("text", "")
                for content in request.contents
                for part in content.get("parts", [])
            )
        )
    return out


def assert_chunks_follow(got: Sequence[str], scripted: Sequence[str]) -> None:
    """`got` is `scripted` in order, nothing lost or added; chunks that arrived
    together may have been joined (the engine coalesces bursts), never split."""
    assert "".join(got) == "".join(scripted), (got, scripted)
    boundaries: set[int] = set()
    offset = 0
    for text in scripted:
        offset += len(text)
        boundaries.add(offset)
    offset = 0
    for text in got:
        offset += len(text)
        assert offset in boundaries, f"chunk {text!r} splits a scripted chunk: {got} vs {scripted}"
