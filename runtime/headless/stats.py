"""What a headless run reports about itself: tokens per model, tool calls, lines changed.

Built from the engine's events (`UsageEvent`, tool events) and the terminal's
answers, in the two shapes Gemini CLI's headless output uses: `metrics()` is the
`stats` of `--output-format json` (Gemini CLI's SessionMetrics: `models`, `tools`,
`files`), `stream_stats()` the `stats` of the stream-json `result` event.
A model request's latency is measured as the stream sees it: from the prompt (or
the last tool result) to the model's usage report.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.protocol import (
    AgentEvent,
    DisplayDiff,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
    UsageEvent,
)

DecisionKey = Literal["accept", "reject", "modify", "auto_accept"]


def _decisions() -> dict[str, int]:
    return {"accept": 0, "reject": 0, "modify": 0, "auto_accept": 0}


@dataclass
class _ModelStats:
    requests: int = 0
    latency_ms: float = 0.0
    prompt: int = 0
    candidates: int = 0
    cached: int = 0

    def as_metrics(self) -> dict[str, Any]:
        return {
            "api": {
                "totalRequests": self.requests,
                "totalErrors": 0,
                "totalLatencyMs": round(self.latency_ms),
            },
            "tokens": {
                "input": max(0, self.prompt - self.cached),
                "prompt": self.prompt,
                "candidates": self.candidates,
                "total": self.prompt + self.candidates,
                "cached": self.cached,
                "thoughts": 0,
                "tool": 0,
            },
        }


@dataclass
class _ToolStats:
    count: int = 0
    success: int = 0
    fail: int = 0
    duration_ms: float = 0.0
    decisions: dict[str, int] = field(default_factory=_decisions)

    def as_metrics(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "success": self.success,
            "fail": self.fail,
            "durationMs": round(self.duration_ms),
            "decisions": dict(self.decisions),
        }


def changed_lines(diff: DisplayDiff) -> tuple[int, int]:
    """Lines added and removed by an edit."""
    before = (diff.before_text or "").splitlines()
    after = diff.after_text.splitlines()
    added = removed = 0
    for line in difflib.unified_diff(before, after, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class RunStats:
    """Counts one run's model requests, tokens and tool calls (see the module doc).
    Events of a subagent (`thread_id` set) count too: they are this run's work."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._mark = self._started
        self._models: dict[str, _ModelStats] = {}
        self._tools: dict[str, _ToolStats] = {}
        self._call_started: dict[str, float] = {}
        self._executed: set[str] = set()
        self._asked: dict[str, DecisionKey] = {}
        self._lines_added = 0
        self._lines_removed = 0

    def prompt_sent(self) -> None:
        """The prompt went to the engine: the first model request starts now."""
        self._mark = self._clock()

    def decided(self, call_id: str, decision: Literal["accept", "reject"]) -> None:
        """The user answered the permission question of `call_id`."""
        self._asked[call_id] = decision

    @property
    def duration_ms(self) -> int:
        return round((self._clock() - self._started) * 1000)

    def observe(self, event: AgentEvent) -> None:
        now = self._clock()
        if isinstance(event, UsageEvent):
            stats = self._models.setdefault(event.model or "unknown", _ModelStats())
            stats.requests += 1
            stats.latency_ms += (now - self._mark) * 1000
            stats.prompt += event.input_tokens or 0
            stats.candidates += event.output_tokens or 0
            stats.cached += event.cached_tokens or 0
            self._mark = now
        elif isinstance(event, ToolRequestEvent):
            self._call_started[event.request_id] = now
        elif isinstance(event, ToolUpdateEvent) and event.status == "in_progress":
            self._executed.add(event.request_id)
        elif isinstance(event, ToolResponseEvent):
            self._finished(event, now)
            self._mark = now

    def _finished(self, event: ToolResponseEvent, now: float) -> None:
        stats = self._tools.setdefault(event.name, _ToolStats())
        stats.count += 1
        if event.is_error:
            stats.fail += 1
        else:
            stats.success += 1
        stats.duration_ms += (now - self._call_started.pop(event.request_id, now)) * 1000
        decision = self._asked.get(event.request_id)
        if decision is None and event.request_id in self._executed:
            decision = "auto_accept"
        if decision is not None:
            stats.decisions[decision] += 1
        if not event.is_error and event.display is not None:
            for item in event.display.content:
                if isinstance(item, DisplayDiff):
                    added, removed = changed_lines(item)
                    self._lines_added += added
                    self._lines_removed += removed

    @property
    def tool_calls(self) -> int:
        return sum(t.count for t in self._tools.values())

    def metrics(self) -> dict[str, Any]:
        """Gemini CLI's SessionMetrics shape (the `stats` of `--output-format json`)."""
        decisions = _decisions()
        for tool in self._tools.values():
            for key, n in tool.decisions.items():
                decisions[key] += n
        return {
            "models": {name: m.as_metrics() for name, m in self._models.items()},
            "tools": {
                "totalCalls": self.tool_calls,
                "totalSuccess": sum(t.success for t in self._tools.values()),
                "totalFail": sum(t.fail for t in self._tools.values()),
                "totalDurationMs": round(sum(t.duration_ms for t in self._tools.values())),
                "totalDecisions": decisions,
                "byName": {name: t.as_metrics() for name, t in self._tools.items()},
            },
            "files": {
                "totalLinesAdded": self._lines_added,
                "totalLinesRemoved": self._lines_removed,
            },
        }

    def stream_stats(self) -> dict[str, Any]:
        """The stream-json `result` event's `stats`: totals and per-model tokens."""
        models = {
            name: {
                "total_tokens": m.prompt + m.candidates,
                "input_tokens": m.prompt,
                "output_tokens": m.candidates,
                "cached": m.cached,
                "input": max(0, m.prompt - m.cached),
            }
            for name, m in self._models.items()
        }
        keys = ("total_tokens", "input_tokens", "output_tokens", "cached", "input")
        totals = {key: sum(m[key] for m in models.values()) for key in keys}
        return {
            **totals,
            "duration_ms": self.duration_ms,
            "tool_calls": self.tool_calls,
            "models": models,
        }
