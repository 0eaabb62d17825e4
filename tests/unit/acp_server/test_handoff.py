"""StdioHandoff (acp_server/handoff.py) on fakes: each session another process asks for
is handed over when idle, kept with the reason and the place when a turn or a slash
command runs or a permission question waits (also when the turn or command started
between the look and the let-go); a store nobody else shares stops the watch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_server.handoff import ADVICE, Busy, StdioHandoff, busy


@dataclass
class FakeHandover:
    turn_started: bool = False
    """A turn started between the check and the let-go: `let_go` declines."""
    command_started: bool = False
    """A command started between the check and the let-go: `let_go` declines, busy."""
    busy: bool = False
    """A slash command runs (`Handover.busy` with no turn)."""
    let_go_calls: int = 0

    async def let_go(self) -> bool:
        self.let_go_calls += 1
        self.busy = self.busy or self.command_started
        return not (self.turn_started or self.busy)


@dataclass
class FakeProtocol:
    active: bool = False


@dataclass
class FakeAgent:
    handover: FakeHandover = field(default_factory=FakeHandover)
    protocol: FakeProtocol = field(default_factory=FakeProtocol)


@dataclass
class FakeSession:
    running: bool = False
    asking: bool = False
    agent: FakeAgent = field(default_factory=FakeAgent)


@dataclass
class SharedStore:
    asked: list[str]
    refused: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    async def wanted(self) -> list[str]:
        return list(self.asked)

    async def refuse(self, session_id: str, why: str, advice: str | None = None) -> None:
        self.refused[session_id] = (why, advice)


class FileStore:
    """A store of one process (no `wanted`/`refuse`)."""


@dataclass
class FakeService:
    store: Any

    def records(self) -> Any:
        return self.store


@dataclass
class FakeState:
    service: FakeService
    sessions: dict[str, Any] = field(default_factory=dict)


def _handoff(state: FakeState) -> StdioHandoff:
    return StdioHandoff(state)  # type: ignore[arg-type]


async def test_idle_sessions_are_handed_over_and_busy_ones_refused_with_why_and_where() -> None:
    store = SharedStore(["idle", "turn", "asking", "raced", "command", "late", "not-here"])
    sessions = {
        "idle": FakeSession(),
        "turn": FakeSession(running=True),
        "asking": FakeSession(running=True, asking=True),
        "raced": FakeSession(agent=FakeAgent(FakeHandover(turn_started=True))),
        "command": FakeSession(agent=FakeAgent(FakeHandover(busy=True))),
        "late": FakeSession(agent=FakeAgent(FakeHandover(command_started=True))),
        "other": FakeSession(),
    }
    state = FakeState(FakeService(store), dict(sessions))
    assert await _handoff(state).tick() is True
    assert sessions["idle"].agent.handover.let_go_calls == 1
    assert sessions["other"].agent.handover.let_go_calls == 0  # nobody asked for it
    assert sessions["turn"].agent.handover.let_go_calls == 0
    assert sessions["command"].agent.handover.let_go_calls == 0
    where = "in an editor (adk-acp over stdio)"
    assert store.refused == {
        "turn": (f"a turn runs there, {where}", ADVICE),
        "asking": (f"a permission request waits there for an answer, {where}", ADVICE),
        "raced": (f"a turn runs there, {where}", ADVICE),
        "command": (f"a command runs there, {where}", ADVICE),
        "late": (f"a command runs there, {where}", ADVICE),
    }


async def test_no_sessions_asks_nothing_and_a_store_of_one_process_stops_the_watch() -> None:
    class Unresolved:
        def records(self) -> Any:
            raise AssertionError("the store is not resolved before a session opens")

    assert await _handoff(FakeState(Unresolved())).tick() is True  # type: ignore[arg-type]
    state = FakeState(FakeService(FileStore()), {"s": FakeSession()})
    assert await _handoff(state).tick() is False


def test_a_session_with_no_turn_is_not_busy_and_each_reason_is_typed() -> None:
    session: Any = FakeSession()
    assert busy(session) is None
    assert busy(None) is Busy.OPENING
    assert busy(FakeSession(running=True)) is Busy.TURN  # type: ignore[arg-type]
    assert busy(FakeSession(running=True, asking=True)) is Busy.ASKING  # type: ignore[arg-type]
    assert Busy.CLIENTS.told(clients=2) == "2 client(s) attached there"
    assert Busy.TURN.told("here") == "a turn runs there, here"
