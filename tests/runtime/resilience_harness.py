"""Shared set-up for the in-process model-resilience tests (`test_resilience_*.py`, issue #4).

A real session (`runtime.session.create_session`: ADK Runner, GcliAgentModel,
request processors, plugins, scheduler) whose genai client talks to the fake
Gemini server, with a `ScriptedHost` standing in for the editor: it answers
fallback questions from a list of intents and records them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runtime.adk.resilience import DELAY_SCALE_ENV
from runtime.config import AuthConfig, Limits, RuntimeConfig
from runtime.host import FallbackChoice, FallbackIntent, HeadlessHost
from runtime.models.genai_generator import GenaiContentGenerator
from runtime.protocol import (
    AgentEndEvent,
    AgentEvent,
    ErrorEvent,
    MessageEvent,
    MessageSend,
    NoticeEvent,
    SessionUpdateEvent,
    TextPart,
)
from runtime.session import AgentSession, SessionSpec, create_session
from tests.fakes.gemini_server import FakeGeminiServer, RecordedRequest

PRO = "gemini-2.5-pro"
FLASH = "gemini-2.5-flash"
FLASH_LITE = "gemini-2.5-flash-lite"


class ScriptedHost(HeadlessHost):
    """No editor: files on the local disk; fallback questions answered from `intents`.

    An intent may be an exception, which `choose_fallback` raises. When the list
    runs out the answer is "stop".
    """

    def __init__(self, intents: Iterable[FallbackIntent | BaseException] = ()) -> None:
        self.intents = list(intents)
        self.choices: list[FallbackChoice] = []

    async def choose_fallback(self, choice: FallbackChoice) -> FallbackIntent:
        self.choices.append(choice)
        intent = self.intents.pop(0) if self.intents else "stop"
        if isinstance(intent, BaseException):
            raise intent
        return intent


@dataclass
class Harness:
    session: AgentSession
    host: ScriptedHost
    server: FakeGeminiServer
    workspace: Path
    home: Path
    events: list[AgentEvent] = field(default_factory=list)

    async def prompt(self, text: str) -> list[AgentEvent]:
        """Send one prompt and wait for its `agent_end`; returns that stream's events."""
        start = len(self.events)
        await self.session.protocol.send(MessageSend(content=(TextPart(text=text),)))
        await self.session.protocol.wait()
        return self.events[start:]

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.generate_requests


def end_of(events: list[AgentEvent]) -> AgentEndEvent:
    ends = [e for e in events if isinstance(e, AgentEndEvent)]
    assert len(ends) == 1, f"expected one agent_end, got {ends}"
    return ends[0]


def agent_text(events: list[AgentEvent]) -> str:
    return "".join(
        p.text
        for e in events
        if isinstance(e, MessageEvent) and e.role == "agent"
        for p in e.content
        if isinstance(p, TextPart)
    )


def notices(events: list[AgentEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, NoticeEvent)]


def errors(events: list[AgentEvent]) -> list[ErrorEvent]:
    return [e for e in events if isinstance(e, ErrorEvent)]


def announced_models(events: list[AgentEvent]) -> list[str]:
    return [e.model for e in events if isinstance(e, SessionUpdateEvent) and e.model]


def config_changes(events: list[AgentEvent]) -> list[dict[str, Any]]:
    return [e.config for e in events if isinstance(e, SessionUpdateEvent) and e.config]


@asynccontextmanager
async def harness(
    tmp_path: Path,
    server: FakeGeminiServer,
    *,
    model: str = PRO,
    intents: Iterable[FallbackIntent | BaseException] = (),
    limits: Limits | None = None,
    settings: dict[str, Any] | None = None,
) -> AsyncIterator[Harness]:
    """A session on the fake server; closed (and its genai client with it) on exit."""
    workspace = tmp_path / "ws"
    home = tmp_path / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    config = RuntimeConfig(
        workspace=workspace.resolve(),
        model=model,
        settings=settings or {},
        limits=limits or Limits(),
        home=home,
    )
    host = ScriptedHost(intents)
    generator = GenaiContentGenerator(
        AuthConfig(kind="api_key", api_key="k", base_url=server.base_url)
    )
    # retry pauses (5-30 s for real) take milliseconds; read when the session is built
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DELAY_SCALE_ENV, "0.001")
        session = await create_session(
            SessionSpec(config=config, auth=None, host=host, generator=generator)
        )
    h = Harness(session, host, server, workspace.resolve(), home)
    session.protocol.subscribe(h.events.append)
    try:
        yield h
    finally:
        await session.close()
        await generator.aclose()
