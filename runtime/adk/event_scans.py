"""ADK's whole-session scans, kept incrementally (performance: a flat per-turn cost).

On every step of a turn, google-adk 2.13 walks the whole session's events several
times: `_apply_rewinds` (which events survive a rewind; ~7 calls per short turn,
some inside the two below), `runners._find_active_task_scope` (a paused task agent
awaiting the user), `_llm_agent_wrapper._find_unresolved_task_delegations` (a task
delegation without its answer) and `InvocationContext._get_events` (the events of this
invocation and branch). Each is linear in the history, so together they made a long
session's turns slower (measured at 300 turns: the largest part of what grew per
prompt).

Session event lists only grow at the end between rebuilds (GcliSessionService
appends; a rebuild refills the list with new events and calls `forget_events`, as
does closing the session), so each scan keeps its state per list and reads only the
events added since its last call. What it keeps is checked
against the list (the same list object, no shorter, the same event at the old end)
and dropped otherwise. A list holding any rewind event goes to ADK's own functions
every time, as does anything not a plain list. `tests/runtime/test_event_scans.py`
checks each against ADK's original on generated histories.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from google.adk.events.event import Event
from google.genai import types

# Lists remembered per scan: sessions in use, plus the short-lived lists ADK builds.
_KEEP_LISTS = 64

_installed = False


def _rewinds(event: Event) -> bool:
    return bool(event.actions and event.actions.rewind_before_invocation_id)


class _Progress:
    """How far one scan has read one event list, and what it found there."""

    __slots__ = ("events", "count", "last", "state")

    def __init__(self, events: list[Event], state: Any) -> None:
        self.events = events
        self.count = 0
        self.last: Event | None = None
        self.state = state


class _PerList:
    """An LRU of `_Progress` by list identity."""

    def __init__(self, fresh: Callable[[], Any]) -> None:
        self._fresh = fresh
        self._lists: OrderedDict[tuple[int, Any], _Progress] = OrderedDict()

    def progress(self, events: list[Event], key: Any = None) -> _Progress:
        """The progress on `events` (its unread events start at `.count`)."""
        slot = (id(events), key)
        found = self._lists.get(slot)
        if (
            found is None
            or found.events is not events
            or found.count > len(events)
            or (found.count and events[found.count - 1] is not found.last)
        ):
            found = _Progress(events, self._fresh())
            self._lists[slot] = found
            if len(self._lists) > _KEEP_LISTS:
                self._lists.popitem(last=False)
        else:
            self._lists.move_to_end(slot)
        return found

    def unread(self, events: Any, key: Any = None) -> tuple[_Progress, list[Event]] | None:
        """The progress on `events` and the events added since; None when the scan must
        go to ADK (not a plain list, or a rewind among them)."""
        if type(events) is not list:
            return None
        progress = self.progress(events, key)
        new = events[progress.count :]
        if any(_rewinds(e) for e in new):
            self.forget(events, key)
            return None
        return progress, new

    def done(self, progress: _Progress) -> None:
        events = progress.events
        progress.count = len(events)
        progress.last = events[-1] if events else None

    def forget(self, events: list[Event], key: Any = None) -> None:
        self._lists.pop((id(events), key), None)

    def forget_list(self, events: list[Event]) -> None:
        for slot in [s for s, p in self._lists.items() if p.events is events]:
            del self._lists[slot]


# ---------------------------------------------------------------- _apply_rewinds

_live = _PerList(list)


def apply_rewinds(
    original: Callable[[list[Event]], list[Event]], events: list[Event]
) -> list[Event]:
    found = _live.unread(events)
    if found is None:
        return original(events)
    progress, new = found
    progress.state += new
    _live.done(progress)
    return list(progress.state)  # callers own what they get


# ---------------------------------------------------------------- _find_active_task_scope


class _Scopes:
    __slots__ = ("finished", "aborted", "scoped")

    def __init__(self) -> None:
        self.finished: set[str] = set()
        self.aborted: set[str] = set()
        self.scoped: list[tuple[str, str]] = []  # (scope, invocation), compactions left out


def find_active_task_scope(
    original: Callable[[Any], tuple[str, str] | None], session: Any
) -> tuple[str, str] | None:
    from google.adk.agents.llm.task._finish_task_tool import (
        FINISH_TASK_ERROR_RESULT,
        FINISH_TASK_SUCCESS_RESULT,
        FINISH_TASK_TOOL_NAME,
    )
    from google.adk.events._abort_events import _is_abort_event

    found = _scopes.unread(session.events)
    if found is None:
        return original(session)
    progress, new = found
    state: _Scopes = progress.state
    for event in new:
        if _is_abort_event(event):
            state.aborted.add(event.invocation_id)
        scope = event.isolation_scope
        if not scope:
            continue
        for part in (event.content.parts or []) if event.content else []:
            response = part.function_response
            if response and response.name == FINISH_TASK_TOOL_NAME:
                if (response.response or {}).get("result") in (
                    FINISH_TASK_SUCCESS_RESULT,
                    FINISH_TASK_ERROR_RESULT,
                ):
                    state.finished.add(scope)
                break
        if not (event.actions and event.actions.compaction):
            state.scoped.append((scope, event.invocation_id))
    _scopes.done(progress)
    for scope, invocation in reversed(state.scoped):
        if scope not in state.finished and invocation not in state.aborted:
            return scope, invocation
    return None


_scopes = _PerList(_Scopes)


# ---------------------------------------------------------------- _find_unresolved_task_delegations


class _Delegations:
    __slots__ = ("pending", "answered", "seen")

    def __init__(self) -> None:
        # Calls not answered (yet), by id: every call made with that id, in order,
        # with its place among all calls (which are delegations depends on the tools
        # of the moment, so that is decided when asked).
        self.pending: dict[str, list[tuple[int, types.FunctionCall]]] = {}
        self.answered: set[str] = set()
        self.seen = 0


def find_unresolved_task_delegations(
    original: Callable[..., list[types.FunctionCall]],
    session: Any,
    owner: str,
    tools_dict: Mapping[str, Any],
    isolation_scope: str | None = None,
) -> list[types.FunctionCall]:
    from google.adk.tools.agent_tool import _TaskAgentTool

    unread = _delegations.unread(session.events, (owner, isolation_scope))
    if unread is None:
        return original(session, owner, tools_dict, isolation_scope)
    progress, new = unread
    state: _Delegations = progress.state
    for event in new:
        if event.author != owner and event.author != "user":
            continue
        if not event.content or not event.content.parts:
            continue
        in_scope = isolation_scope is None or event.isolation_scope == isolation_scope
        for part in event.content.parts:
            call = part.function_call
            if in_scope and call and call.id and call.name is not None:
                state.seen += 1
                if call.id not in state.answered:
                    state.pending.setdefault(call.id, []).append((state.seen, call))
            response = part.function_response
            if response and response.id:
                state.answered.add(response.id)
                state.pending.pop(response.id, None)
    _delegations.done(progress)
    found: list[tuple[int, types.FunctionCall]] = []
    for calls in state.pending.values():
        delegations = [
            (place, call)
            for place, call in calls
            if isinstance(tools_dict.get(call.name or ""), _TaskAgentTool)
        ]
        if delegations:  # placed where its first delegation was, the latest one kept
            found.append((delegations[0][0], delegations[-1][1]))
    return [call for _, call in sorted(found, key=lambda item: item[0])]


_delegations = _PerList(_Delegations)


# ---------------------------------------------------------------- InvocationContext._get_events

_filtered = _PerList(list)
_first_of_invocation = _PerList(dict)  # invocation id → index of its first event


def _invocation_start(events: list[Event], invocation: str) -> int:
    progress = _first_of_invocation.progress(events)
    firsts: dict[str, int] = progress.state
    for index in range(progress.count, len(events)):
        firsts.setdefault(events[index].invocation_id, index)
    _first_of_invocation.done(progress)
    return firsts.get(invocation, len(events))


def get_events(
    original: Callable[..., list[Event]],
    context: Any,
    current_invocation: bool,
    current_branch: bool,
) -> list[Event]:
    """The filtered views of `_get_events`, for the root agent's case: no branch and no
    single-turn node path, where ADK's branch rule keeps user events and unbranched
    ones (anything else goes to ADK)."""
    from google.adk.utils._agent_mode import AgentMode

    events = context.session.events
    if (
        not (current_invocation or current_branch)
        or type(events) is not list
        or (
            current_branch
            and (
                context.branch is not None
                or (
                    getattr(context.agent, "mode", None) == AgentMode.SINGLE_TURN
                    and context.node_path
                )
            )
        )
    ):
        return original(
            context, current_invocation=current_invocation, current_branch=current_branch
        )
    invocation = context.invocation_id if current_invocation else None
    key = (invocation, current_branch)
    progress = _filtered.progress(events, key)
    if progress.count == 0 and invocation is not None and events:
        # A new invocation's view: nothing before its first event can belong to it.
        start = _invocation_start(events, invocation)
        if start:
            progress.count, progress.last = start, events[start - 1]
    for event in events[progress.count :]:
        if current_invocation and event.invocation_id != invocation:
            continue
        if current_branch and event.author != "user" and event.branch is not None:
            continue
        progress.state.append(event)
    _filtered.done(progress)
    return list(progress.state)


def forget_events(events: list[Event]) -> None:
    """Drop what the scans keep for `events` (a session closed, or its list refilled):
    they hold its events, which must not outlive the session."""
    for per_list in (_live, _scopes, _delegations, _filtered, _first_of_invocation):
        per_list.forget_list(events)


# ---------------------------------------------------------------- installing


def install() -> None:
    """Route ADK's scans through the kept state (once per process)."""
    global _installed
    if _installed:
        return
    from google.adk import runners
    from google.adk.events import _rewind_events
    from google.adk.workflow import _llm_agent_wrapper

    original_rewinds = _rewind_events._apply_rewinds

    def rewinds(events: list[Event]) -> list[Event]:
        return apply_rewinds(original_rewinds, events)

    # Modules that imported the function by name keep their own reference.
    _rewind_events._apply_rewinds = rewinds
    for name, module in list(sys.modules.items()):
        if name.startswith("google.adk") and getattr(module, "_apply_rewinds", None) is (
            original_rewinds
        ):
            setattr(module, "_apply_rewinds", rewinds)  # noqa: B010 - a module of its own

    original_scope = runners._find_active_task_scope

    def scope(session: Any) -> tuple[str, str] | None:
        return find_active_task_scope(original_scope, session)

    runners._find_active_task_scope = scope

    original_delegations = _llm_agent_wrapper._find_unresolved_task_delegations

    def delegations(
        session: Any,
        owner: str,
        tools_dict: Mapping[str, Any],
        isolation_scope: str | None = None,
    ) -> list[types.FunctionCall]:
        return find_unresolved_task_delegations(
            original_delegations, session, owner, tools_dict, isolation_scope
        )

    _llm_agent_wrapper._find_unresolved_task_delegations = delegations

    from google.adk.agents.invocation_context import InvocationContext

    original_get_events = InvocationContext._get_events

    def _get_events(
        self: InvocationContext, *, current_invocation: bool = False, current_branch: bool = False
    ) -> list[Event]:
        return get_events(original_get_events, self, current_invocation, current_branch)

    InvocationContext._get_events = _get_events  # type: ignore[method-assign]
    _installed = True
