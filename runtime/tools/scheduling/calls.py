"""One tool call inside the scheduler: its state, how it ended, and the early-end signal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from runtime.protocol import ToolDisplay

CANCELLED_MESSAGE = "The user cancelled this tool call."


CallStatus = Literal["completed", "failed", "cancelled"]


@dataclass(frozen=True)
class ToolCallOutcome:
    """How a call ended. `display` is the final display (the diff of an edit, the
    output of a command); `llm_content` is what the model got; `raw_output` and
    `plan` come from the tool's result."""

    status: CallStatus
    display: ToolDisplay
    llm_content: str
    is_error: bool
    raw_output: dict[str, Any] | None = None
    plan: list[dict[str, str]] | None = None
    plan_id: str | None = None
    plan_markdown: str | None = None


class CallEnded(Exception):
    """Scheduler internal: the call ended early; `response` is its function response."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__("call ended")
        self.response = response


@dataclass
class ToolCall:
    """Scheduler internal: one call in flight and what has been reported about it."""

    call_id: str
    name: str
    args: dict[str, Any]
    ticket: int
    display: ToolDisplay
    requested: bool = False
    finished: bool = False
    original_name: str | None = None  # a tail call: the name the model called
    tail: Any = None  # the TailCallRequest an AfterTool hook made of this call
    write_ticket: int | None = None  # an edit's place among the scheduler's writes
    reviewed: str | None = None  # the user's version of the proposed file (allowed with changes)
