"""Session updates newer than the pinned `acp` schema (1.19), sent only to clients that
opted in (`ClientUpdates`): plan operations (`plan_update`, `plan_removed`) and
subagent sessions (`subagent_update`).

Part of the ACP vocabulary of `updates.py` (which re-exports `ClientUpdates`): small
frozen models of our own for what the pinned package cannot express, the old plain
form kept for every other client.

Plans: the todo list (`write_todos`) is the plan `todos`, as items; plan mode's plan
file is `plan:<file name>`, as Markdown. A todo list cleared to nothing is
`plan_removed`; a plan file replaced by another (a new file name) removes the old one
first. A client without `clientCapabilities.plan` gets the plain `plan` update.

Subagents: for a client with `clientCapabilities.subagents`, a subagent's run is a child
session: a `subagent_update` on the parent announces it (title, task, `running`) before
any of its updates, its messages, tool calls, plans and permission requests carry its
own session id, and a last `subagent_update` says it is `idle` with its stop reason.
Another client sees only the subagent's tool call in the parent, with its progress.

Several clients on one session (`adk-acp serve`): the session's updates are made for a
client that takes them all (`ClientUpdates.every`), each opt-in update carrying the
form a client without that opt-in gets instead (`OptIn.fallback`); `client_form` picks,
per connection, what that client takes (`remote.channel.SessionChannel`). It is what a
translator of that client's own sends (`tests/unit/acp_server/test_client_form.py`),
but for a todo list cleared before any was shown: nothing, not an empty `plan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from acp_server import schema
from runtime.protocol import TODOS_PLAN_ID, PlanEntry, PlanEvent, SubagentEvent


@dataclass(frozen=True)
class ClientUpdates:
    """The optional session updates a client opted in to in `initialize`:
    `clientCapabilities.session.notices`, `.session.compaction`, `.plan` (ACP 1.21);
    `forms`: it answers `elicitation/create` (`clientCapabilities.elicitation`)."""

    notices: bool = False
    compaction: bool = False
    plans: bool = False
    subagents: bool = False
    forms: bool = False

    @classmethod
    def of(cls, capabilities: Mapping[str, Any] | None) -> ClientUpdates:
        caps = capabilities or {}
        session = caps.get("session")
        opted = session if isinstance(session, dict) else {}
        return cls(
            notices=isinstance(opted.get("notices"), dict),
            compaction=isinstance(opted.get("compaction"), dict),
            plans=isinstance(caps.get("plan"), dict),
            subagents=isinstance(caps.get("subagents"), dict),
            forms=bool(caps.get("elicitation")),
        )

    @classmethod
    def every(cls) -> ClientUpdates:
        """Every optional update: a hub session's, whose clients each get their own form."""
        return cls(notices=True, compaction=True, plans=True, subagents=True, forms=True)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, defer_build=True)


class OptIn(_Model):
    """An update only a client that opted in (`opt_in`, a `ClientUpdates` field) takes;
    `fallback`: what another client gets in its place (never sent itself)."""

    opt_in: ClassVar[str]
    fallback: tuple[Any, ...] = Field(default=(), exclude=True, repr=False)


def client_form(params: dict[str, Any], session_id: str, client: ClientUpdates) -> list[Any]:
    """The `session/update` params `client` gets for `params` sent in session
    `session_id` (their update not yet dumped): as they are; an opt-in update it did not
    opt in to as its fallback (maybe nothing); a subagent's child session (another id)
    nothing unless it follows subagents, as when the session is its own."""
    if params.get("sessionId") != session_id and not client.subagents:
        return []
    update = params.get("update")
    if isinstance(update, OptIn) and not getattr(client, update.opt_in):
        return [{**params, "update": plain} for plain in update.fallback]
    return [params]


class PlanItems(_Model):
    type: Literal["items"] = "items"
    plan_id: str = Field(alias="planId")
    entries: list[schema.PlanEntry]


class PlanMarkdown(_Model):
    type: Literal["markdown"] = "markdown"
    plan_id: str = Field(alias="planId")
    content: str


class PlanUpdate(OptIn):
    """`plan_update`: one plan's whole content, by its id (opt-in: `clientCapabilities.plan`)."""

    opt_in = "plans"

    session_update: Literal["plan_update"] = Field(default="plan_update", alias="sessionUpdate")
    plan: PlanItems | PlanMarkdown = Field(discriminator="type")


class PlanRemoved(OptIn):
    """`plan_removed`: the plan with this id is gone (opt-in: `clientCapabilities.plan`)."""

    opt_in = "plans"

    session_update: Literal["plan_removed"] = Field(default="plan_removed", alias="sessionUpdate")
    plan_id: str = Field(alias="planId")


def plain_plan(
    entries: tuple[PlanEntry, ...], plan_id: str | None = None
) -> schema.AgentPlanUpdate:
    """`plan`: the whole plan, for a client without plan operations; a `plan_id` other
    than the todo list's in `_meta.adkAcp.planId`, for ACP v2's plans by id
    (`acp_server.v2`)."""
    return schema.AgentPlanUpdate(
        session_update="plan",
        entries=[
            schema.PlanEntry(content=e.content, priority=e.priority, status=e.status)
            for e in entries
        ],
        field_meta=(
            {"adkAcp": {"planId": plan_id}} if plan_id not in (None, TODOS_PLAN_ID) else None
        ),
    )


def plan_operation(plan_id: str, entries: tuple[PlanEntry, ...], markdown: str | None) -> Any:
    """`plan_update` of one plan: Markdown when it has it, else its items (the plain
    `plan` as its fallback)."""
    plain = plain_plan(entries, plan_id)
    if markdown is not None:
        return PlanUpdate(plan=PlanMarkdown(planId=plan_id, content=markdown), fallback=(plain,))
    return PlanUpdate(plan=PlanItems(planId=plan_id, entries=plain.entries), fallback=(plain,))


class PlanOperations:
    """The plans a session has shown, live and replayed (see the module docstring)."""

    def __init__(self, client: ClientUpdates) -> None:
        self._client = client
        self._shown: set[str] = set()
        self._file: str | None = None

    def updates(self, event: PlanEvent) -> list[Any]:
        return list(self._updates(event.plan_id, event.entries, event.markdown))

    def _updates(
        self, plan_id: str, entries: tuple[PlanEntry, ...], markdown: str | None
    ) -> Iterator[Any]:
        if not self._client.plans:
            yield plain_plan(entries, plan_id)
            return
        if not entries and markdown is None:
            if plan_id in self._shown:
                self._shown.discard(plan_id)
                yield PlanRemoved(planId=plan_id, fallback=(plain_plan((), plan_id),))
            return
        if plan_id != TODOS_PLAN_ID:
            if self._file is not None and self._file != plan_id:
                self._shown.discard(self._file)
                yield PlanRemoved(planId=self._file)
            self._file = plan_id
        self._shown.add(plan_id)
        yield plan_operation(plan_id, entries, markdown)

    def replay(self, metadata: Mapping[str, Any]) -> list[Any]:
        """A record's current plans (`plans` by id, else the last `plan`), as this
        client takes them; they count as shown for the live updates after the load."""
        plans = metadata.get("plans")
        if self._client.plans and isinstance(plans, dict) and plans:
            out: list[OptIn] = []
            for plan_id, plan in plans.items():
                if not isinstance(plan, dict):
                    continue
                entries = tuple(
                    PlanEntry.of(e) for e in plan.get("entries") or () if isinstance(e, dict)
                )
                markdown = plan.get("markdown")
                out += self._updates(
                    str(plan_id), entries, markdown if isinstance(markdown, str) else None
                )
            # a client without plan operations gets what its own load shows: the last `plan`
            plain = tuple(PlanOperations(ClientUpdates()).replay(metadata))
            return [
                u.model_copy(update={"fallback": plain if not i else ()}) for i, u in enumerate(out)
            ]
        plan = metadata.get("plan")
        if isinstance(plan, list) and plan:
            entries = tuple(PlanEntry.of(e) for e in plan if isinstance(e, dict))
            return list(self._updates(TODOS_PLAN_ID, entries, None))
        return []


SubagentStopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "cancelled", "error"]
_STOPS: dict[str, SubagentStopReason] = {
    "completed": "end_turn",
    "aborted": "cancelled",
    "max_turns": "max_turn_requests",
    "max_budget": "max_tokens",
    "failed": "error",
}


class SubagentState(_Model):
    state: Literal["running", "idle"]
    stop_reason: SubagentStopReason | None = Field(default=None, alias="stopReason")


class SubagentUpdate(OptIn):
    """`subagent_update`: a child session of this one, announced or changed (opt-in:
    `clientCapabilities.subagents`; nothing in its place)."""

    opt_in = "subagents"

    session_update: Literal["subagent_update"] = Field(
        default="subagent_update", alias="sessionUpdate"
    )
    session_id: str = Field(alias="sessionId")
    title: str | None = None
    description: str | None = None
    state: SubagentState


def subagent_updates(event: SubagentEvent, client: ClientUpdates) -> list[Any]:
    """A subagent's start or end on its parent, for a client that follows subagents."""
    if not client.subagents:
        return []
    stop = _STOPS.get(event.end_reason, "end_turn") if event.end_reason else None
    return [
        SubagentUpdate(
            sessionId=event.child_id,
            title=event.title,
            description=event.task,
            state=SubagentState(state=event.state, stopReason=stop),
        )
    ]
