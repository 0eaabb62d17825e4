"""A turn's token usage, for the `usage` of its `session/prompt` answer (ACP unstable
`Usage`: no capability to advertise; a client that does not know the field ignores it).

The engine reports usage per model call (`UsageEvent`); a turn may make several (tool
calls, retries, a steered message), so the answer carries their sum. A turn that made
no model call, or whose model reported no usage, answers without `usage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.protocol import UsageEvent


@dataclass
class TurnUsage:
    """Sums the usage events of one turn (reset when the turn starts)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None
    calls: int = 0

    def add(self, event: UsageEvent) -> None:
        self.calls += 1
        self.input_tokens += event.input_tokens or 0
        self.output_tokens += event.output_tokens or 0
        if event.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + event.cached_tokens

    def answer(self) -> dict[str, Any] | None:
        """The ACP `Usage` object (output tokens include the model's thoughts), or None."""
        if not self.calls:
            return None
        usage: dict[str, Any] = {
            "totalTokens": self.input_tokens + self.output_tokens,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
        }
        if self.cached_tokens is not None:
            usage["cachedReadTokens"] = self.cached_tokens
        return usage
