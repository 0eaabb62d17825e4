"""A subagent's run relayed on its parent's event stream (design Phase B, subagents):
what an editor that follows subagent sessions shows under the parent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from runtime.protocol import (
    AgentEndReason,
    AgentEvent,
    MessageEvent,
    PlanEvent,
    SubagentEvent,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
)

if TYPE_CHECKING:
    from runtime.agents.definitions import AgentDefinition


class RelayTarget(Protocol):
    """The parent session: emits an event built from `(id, stream_id)` on its stream."""

    def relay(self, make: Callable[[str, str], AgentEvent]) -> None: ...


_RELAYED = (MessageEvent, ToolRequestEvent, ToolUpdateEvent, ToolResponseEvent, PlanEvent)


@dataclass
class Relay:
    """The subagent's run on its parent's stream: a `SubagentEvent` when it starts and
    ends, and its messages, tool calls and plans in between (`thread_id` = its id)."""

    parent: RelayTarget
    child_id: str
    definition: AgentDefinition
    task: str

    def state(
        self, state: Literal["running", "idle"], reason: AgentEndReason | None = None
    ) -> None:
        definition = self.definition
        self.parent.relay(
            lambda i, s: SubagentEvent(
                id=i,
                stream_id=s,
                child_id=self.child_id,
                name=definition.name,
                title=definition.title,
                task=self.task,
                state=state,
                end_reason=reason,
            )
        )

    def event(self, event: AgentEvent) -> None:
        if not isinstance(event, _RELAYED) or (
            isinstance(event, MessageEvent) and event.role != "agent"
        ):
            return
        self.parent.relay(
            lambda i, s: event.model_copy(
                update={"id": i, "stream_id": s, "thread_id": self.child_id}
            )
        )
