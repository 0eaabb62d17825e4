"""The history part of the model request, built incrementally (performance: a flat
per-turn cost).

ADK's `contents` request processor rebuilds the whole history from the session's
events on every model call (`_get_contents`: filter, pair calls with responses,
copy every content), so the engine's own cost per turn grew with the conversation
(measured: 3.7 ms per turn at 10 turns, 46 ms at 500, most of it there). The events
of finished invocations never change (GcliSessionService appends once; only a
rebuild replaces them, and it bumps the session's version), and calls are paired
with their responses within an invocation, so the contents of each finished
invocation are built once and kept: each call builds only the current invocation.

Installed once: ADK's `_get_contents` is wrapped so that, inside a stream that set
`HISTORY_CACHE` (AdkAgentProtocol) and only for that session's own event list, the
kept prefix is reused; any other call goes to ADK unchanged. Later processors may
rewrite request contents (masking, tool media); they do so idempotently, so a kept
content is always valid to send again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from google.adk.events.event import Event
from google.genai import types

logger = logging.getLogger(__name__)


class HistoryCache:
    """One session's built history: contents of events[:k], k at an invocation boundary."""

    def __init__(
        self, events: Callable[[], list[Event] | None], version: Callable[[], int]
    ) -> None:
        self._events = events
        self._version = version
        self._prefix: list[types.Content] = []
        self._k = 0
        self._last_id: str | None = None
        self._built_version = -1
        self.rebuilt = 0  # how often the kept prefix had to be dropped (tests, logs)
        # Of the contents returned last, how many lead a request for the second time or
        # more (the same objects, already seen by the request processors), and the
        # last of them; processors may skip what they did to those before.
        self.stable = 0
        self.stable_tail: types.Content | None = None
        self._returned = 0

    def owns(self, events: list[Event]) -> bool:
        return events is self._events()

    def contents(
        self, events: list[Event], build: Callable[[list[Event]], list[types.Content]]
    ) -> list[types.Content]:
        current = events[-1].invocation_id
        k = len(events)
        while k > 0 and events[k - 1].invocation_id == current:
            k -= 1
        if (
            self._built_version != self._version()
            or self._k > k
            or (self._k and events[self._k - 1].id != self._last_id)
        ):
            self._prefix, self._k = [], 0
            self._built_version = self._version()
            self.rebuilt += 1
            self._returned = 0
        self.stable = self._returned
        self.stable_tail = self._prefix[self.stable - 1] if self.stable else None
        i = self._k
        while i < k:  # the finished invocations not built yet, one at a time
            j = i + 1
            while j < k and events[j].invocation_id == events[i].invocation_id:
                j += 1
            self._prefix.extend(build(events[i:j]))
            i = j
        self._k = k
        self._last_id = events[k - 1].id if k else None
        self._returned = len(self._prefix)
        return [*self._prefix, *build(events[k:])]

    def seen_before(self, contents: list[types.Content]) -> int:
        """How many leading `contents` were in an earlier request unchanged (0 when
        `contents` is not what this cache returned last)."""
        n = self.stable
        return n if n and len(contents) >= n and contents[n - 1] is self.stable_tail else 0


HISTORY_CACHE: ContextVar[HistoryCache | None] = ContextVar("gcli_history_cache", default=None)

_installed = False


def install() -> None:
    """Wrap ADK's `_get_contents` (once per process)."""
    global _installed
    if _installed:
        return
    from google.adk.flows.llm_flows.context import _contents

    original = _contents._get_contents

    def get_contents(
        current_branch: str | None, events: list[Event], agent_name: str = "", **kwargs: Any
    ) -> list[types.Content]:
        cache = HISTORY_CACHE.get()
        if (
            cache is None
            or not events
            or kwargs.get("isolation_scope") is not None
            or not cache.owns(events)
        ):
            return original(current_branch, events, agent_name, **kwargs)
        return cache.contents(
            events, lambda chunk: original(current_branch, chunk, agent_name, **kwargs)
        )

    _contents._get_contents = get_contents
    _installed = True


def session_history(runner: Any, user_id: str, session_id: str) -> HistoryCache | None:
    """The incremental history of this session, when its events live in a
    GcliSessionService."""
    from runtime.adk.session_service import GcliSessionService

    service = runner.session_service
    if not isinstance(service, GcliSessionService):
        return None
    app = runner.app_name
    return HistoryCache(
        events=lambda: service.live_events(app, user_id, session_id),
        version=lambda: service.version(session_id),
    )
