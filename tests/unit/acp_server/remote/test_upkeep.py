"""`HubUpkeep`: which hub sessions a serving process lets go (idle ones after the
timeout; on a shared store, ones another instance asks for) and what it answers for
the ones it keeps."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

from acp_server.remote.channel import SessionChannel
from acp_server.remote.hub import SessionHub
from acp_server.remote.upkeep import HubUpkeep
from acp_server.transport import JsonRpcConnection


@dataclass
class Handover:
    busy: bool = False


@dataclass
class Protocol:
    active: bool = False


@dataclass
class Agent:
    handover: Handover = field(default_factory=Handover)
    protocol: Protocol = field(default_factory=Protocol)


@dataclass
class Session:
    running: bool = False
    asking: bool = False
    closed: bool = False
    agent: Agent = field(default_factory=Agent)

    async def close(self) -> None:
        self.closed = True


@dataclass
class Store:
    """A store shared with other instances (`LeaseHandoff`)."""

    asked: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    async def wanted(self) -> list[str]:
        return list(self.asked)

    async def refuse(self, session_id: str, why: str, advice: str | None = None) -> None:
        self.refused[session_id] = why


class Hub:
    """The parts of `SessionHub` the upkeep reads."""

    def __init__(self, store: Any) -> None:
        self.sessions: dict[str, Session] = {}
        self.channels: dict[str, SessionChannel] = {}
        self.opening: dict[str, tuple[asyncio.Lock, int]] = {}
        self._store = store
        self.service = self

    def records(self) -> Any:
        return self._store

    def add(self, session_id: str, **state: bool) -> SessionChannel:
        self.sessions[session_id] = Session(running=state.get("running", False))
        self.sessions[session_id].agent.handover.busy = state.get("commanding", False)
        channel = self.channels[session_id] = SessionChannel(session_id, 60)
        if state.get("attached"):
            channel.attach(cast(JsonRpcConnection, object()))
        if state.get("asking"):
            channel._questions.append(cast(Any, object()))
        return channel

    def remove(self, session_id: str) -> Session | None:
        self.channels.pop(session_id, None)
        return self.sessions.pop(session_id, None)


def upkeep(hub: Hub, idle_s: float) -> HubUpkeep:
    return HubUpkeep(cast(SessionHub, hub), idle_s)


async def test_only_sessions_nobody_uses_are_let_go_after_the_idle_timeout() -> None:
    hub = Hub(store=object())  # the files: nothing shared
    kinds = {"quiet": {}, "attached": {"attached": True}, "running": {"running": True}}
    kinds["asking"] = {"asking": True}
    kinds["commanding"] = {"commanding": True}  # a slash command whose client left
    for name, state in kinds.items():
        hub.add(name, **state)
    quiet = hub.sessions["quiet"]
    keeper = upkeep(hub, idle_s=3600)
    await keeper.tick()
    assert set(hub.sessions) == set(kinds)  # not idle long enough
    for channel in hub.channels.values():
        channel.last_activity -= 7200
    await keeper.tick()
    assert set(hub.sessions) == {"attached", "running", "asking", "commanding"} and quiet.closed
    assert keeper.dropped == 1


async def test_a_session_another_instance_asks_for_is_let_go_or_refused_with_why() -> None:
    store = Store(asked=["quiet", "attached", "running", "asking", "commanding", "elsewhere"])
    hub = Hub(store)
    hub.add("quiet")
    hub.add("attached", attached=True)
    hub.add("running", running=True)
    hub.add("asking", asking=True)
    hub.add("commanding", commanding=True)
    await upkeep(hub, idle_s=3600).tick()
    assert "quiet" not in hub.sessions
    assert store.refused == {
        "attached": "1 client(s) attached there",
        "asking": "a permission request waits there for an answer",
        "commanding": "a command runs there",
    }  # a running turn's session is let go when the turn ends: not refused
    hub.sessions["running"].running = False
    await upkeep(hub, idle_s=3600).tick()
    assert "running" not in hub.sessions


async def test_a_session_being_opened_is_not_let_go_meanwhile() -> None:
    hub = Hub(store=object())
    hub.add("s").last_activity -= 7200
    keeper = upkeep(hub, idle_s=1)
    lock = asyncio.Lock()
    hub.opening["s"] = (lock, 1)
    async with lock:  # a client's load holds it, and attaches before letting go
        dropping = asyncio.ensure_future(keeper.tick())
        await asyncio.sleep(0.01)
        hub.channels["s"].attach(cast(JsonRpcConnection, object()))
    await dropping
    assert "s" in hub.sessions
