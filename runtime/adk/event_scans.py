"""ADK's whole-session scans, kept incrementally (performance: a flat per-turn cost).

On every step of a turn google-adk walks the whole session's events: `_apply_rewinds`
(which events survive a rewind; ~7 calls per short turn) and
`InvocationContext._get_events` (the events of this invocation and branch). Each is
linear in the history, so together they made a long session's turns slower (measured
with ADK 2.13 at 300 turns: the largest part of what grew per prompt). ADK 2.15 added a
fast path to `_apply_rewinds` (a history without rewinds is copied as is), but it still
reads every event to know it; the copy is all that is left here. Two more scans that
2.13 made at every step, `runners._find_active_task_scope` and
`_llm_agent_wrapper._find_unresolved_task_delegations`, have their own fast paths in
2.15 that answer at once for this agent (no event has an isolation scope, no tool is a
task agent): they are ADK's own again (`tests/runtime/test_event_scans.py` checks that
they do not walk our histories).

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
from collections.abc import Callable
from typing import Any

from google.adk.events.event import Event

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
    for per_list in (_live, _filtered, _first_of_invocation):
        per_list.forget_list(events)


# ---------------------------------------------------------------- installing


def install() -> None:
    """Route ADK's scans through the kept state (once per process)."""
    global _installed
    if _installed:
        return
    from google.adk.events import _rewind_events

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

    from google.adk.agents.invocation_context import InvocationContext

    original_get_events = InvocationContext._get_events

    def _get_events(
        self: InvocationContext, *, current_invocation: bool = False, current_branch: bool = False
    ) -> list[Event]:
        return get_events(original_get_events, self, current_invocation, current_branch)

    InvocationContext._get_events = _get_events  # type: ignore[method-assign]
    _installed = True
