"""Shared set-up for the tool end-to-end tests (`test_tools_*.py`, issue #3).

Each test starts the real `adk-acp` process (`python -m acp_server.cli`) with an
isolated HOME (`tmp_path/home`) and workspace (`tmp_path/ws`), an environment
cleared of the developer's Gemini/Vertex settings, and the fake Gemini server
(in the test's loop) as its model, so the requests the model received can be
checked. `CAPS` parametrizes a test over a client that advertises `fs` and
`terminal` and one that advertises neither.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runtime.tools.io.process_group import live_group_members
from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, AcpTestClient, JsonObject
from tests.fakes.gemini_server import FakeGeminiServer, RecordedRequest

AGENT = AGENT_COMMAND
MakeAgent = Callable[..., Awaitable[AcpTestClient]]


EDITOR: JsonObject = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
BARE: JsonObject = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}

# Parametrize over the two kinds of client: `@pytest.mark.parametrize("caps", CAPS)`.
CAPS = [pytest.param(EDITOR, id="editor-fs-terminal"), pytest.param(BARE, id="no-fs-no-terminal")]

OPTIONS: list[tuple[str, str, str]] = [
    ("proceed_once", "Allow", "allow_once"),
    ("proceed_always", "Allow for this session", "allow_always"),
    ("proceed_always_and_save", "Always allow — saved", "allow_always"),
    ("cancel", "Reject", "reject_once"),
    ("reject_always", "Reject always", "reject_always"),
]


def uses_editor(caps: JsonObject) -> bool:
    return bool((caps.get("fs") or {}).get("readTextFile"))


@dataclass
class Agent:
    """A started agent with one session."""

    client: AcpTestClient
    session_id: str
    new_session: JsonObject
    workspace: Path
    home: Path
    fake: FakeGeminiServer

    def updates(self, kind: str | None = None) -> list[JsonObject]:
        return self.client.updates(self.session_id, kind)

    def tool_updates(self, call_id: str | None = None) -> list[JsonObject]:
        """`tool_call` and `tool_call_update` updates (of one call), in order."""
        return [
            u
            for u in self.updates()
            if u["sessionUpdate"] in ("tool_call", "tool_call_update")
            and (call_id is None or u["toolCallId"] == call_id)
        ]

    def tool_calls(self) -> list[JsonObject]:
        """The `tool_call` (start) updates, in order."""
        return self.updates("tool_call")

    def final(self, call_id: str) -> JsonObject:
        """The last update of a call (its completed or failed `tool_call_update`)."""
        return self.tool_updates(call_id)[-1]

    def text(self) -> str:
        return self.client.text_of(self.session_id)

    async def prompt(self, text: str, timeout: float | None = None) -> JsonObject:
        """One turn; `timeout` is the client's `default_timeout` (30 s) unless given."""
        return await self.client.prompt(self.session_id, text, timeout=timeout)


async def start_agent(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake: FakeGeminiServer,
    caps: JsonObject,
    *,
    args: Sequence[str] = (),
    files: dict[str, str] | None = None,
    env_extra: dict[str, str] | None = None,
    **client_options: Any,
) -> Agent:
    """Start the agent on `tmp_path/ws` (files written first; `env_extra` added to its
    environment), initialize with `caps`, open one session."""
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    workspace = workspace.resolve()
    for name, content in (files or {}).items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    env: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GEMINI_API_KEY": "x",
        "GOOGLE_GEMINI_BASE_URL": fake.base_url,
        **(env_extra or {}),
    }
    client = await make_agent([*AGENT, *args], env, cwd=workspace, **client_options)
    await client.initialize(caps)
    new = await client.new_session(workspace)
    return Agent(client, new["sessionId"], new, workspace, home, fake)


def function_responses(request: RecordedRequest) -> list[JsonObject]:
    """The `functionResponse` parts of the last user content of a model request."""
    for content in reversed(request.contents):
        if content.get("role", "user") == "user":
            return [
                p["functionResponse"] for p in content.get("parts", []) if "functionResponse" in p
            ]
    return []


def response_text(response: JsonObject) -> str:
    """What the model got from a tool: the `output` or the `error` text."""
    body = response.get("response") or {}
    return str(body.get("output", body.get("error", "")))


def diff_of(update: JsonObject) -> JsonObject:
    """The one diff content item of a tool call (update) or permission toolCall."""
    diffs = [c for c in update.get("content") or [] if c.get("type") == "diff"]
    assert len(diffs) == 1, update
    return diffs[0]


def stop_order(client: AcpTestClient) -> list[str]:
    """In wire order: the client's answers to `terminal/kill` and `terminal/release`, and
    the agent's `cancelled` answers to prompts."""
    asked = {
        m["id"]: m["method"].removeprefix("terminal/")
        for who, m in client.transcript
        if who == "agent" and m.get("method") in ("terminal/kill", "terminal/release")
    }
    order: list[str] = []
    for who, m in client.transcript:
        if who == "client" and "method" not in m and m.get("id") in asked and "result" in m:
            order.append(asked[m["id"]])
        elif who == "agent" and (m.get("result") or {}).get("stopReason") == "cancelled":
            order.append("cancelled")
    return order


async def wait_group_gone(pgid: int, timeout: float = 10.0) -> None:
    """Wait until no live process is left in the group `pgid`.

    A killed process leaves the group only once the kernel has torn it down and its
    parent has reaped it; on a busy machine that takes a moment after the kill."""
    await wait_until(lambda: not live_group_members(pgid), timeout, f"process group {pgid} ends")


async def wait_until(check: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Poll `check` until it holds (the agent works asynchronously to the client)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        await asyncio.sleep(0.02)
