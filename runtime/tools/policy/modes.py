"""Approval modes (Gemini CLI's ApprovalMode), as the editor sees them: the one
`ApprovalMode` type and the one table of labels, used by the policy engine, the
session, the settings, the command line and the ACP mode/config views.

Least to most permissive: ``plan`` < ``default`` < ``autoEdit`` < ``yolo``.
The ids are the ones sent to the editor as ACP session modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeGuard, get_args

from runtime.errors import ConfigError

ApprovalMode = Literal["default", "autoEdit", "yolo", "plan"]

DEFAULT_MODE: ApprovalMode = "default"

# Least permissive first.
MODE_ORDER: tuple[ApprovalMode, ...] = ("plan", "default", "autoEdit", "yolo")


@dataclass(frozen=True)
class ModeInfo:
    """One mode as offered to the editor: `id` is the ACP mode id."""

    id: ApprovalMode
    name: str
    description: str


MODES: tuple[ModeInfo, ...] = (
    ModeInfo(id="default", name="Default", description="Ask before edits, commands and fetches."),
    ModeInfo(
        id="autoEdit",
        name="Auto edit",
        description=(
            "Edit files in the workspace without asking; ask for commands that are not read-only."
        ),
    ),
    ModeInfo(id="yolo", name="YOLO", description="Run every tool without asking."),
    ModeInfo(
        id="plan", name="Plan", description="Read-only: explore and plan; no edits or commands."
    ),
)
"""The one table of modes and their labels, in the order the editor lists them."""


def is_mode(value: object) -> TypeGuard[ApprovalMode]:
    return isinstance(value, str) and value in get_args(ApprovalMode)


def parse_mode(value: object) -> ApprovalMode:
    """The mode named `value`; raises ConfigError for an unknown id."""
    if is_mode(value):
        return value
    raise ConfigError(f"unknown approval mode {value!r}; expected one of {', '.join(MODE_ORDER)}")


def mode_rank(mode: ApprovalMode) -> int:
    """Position in MODE_ORDER: a higher rank is more permissive."""
    return MODE_ORDER.index(mode)


def modes_at_least(mode: ApprovalMode) -> tuple[ApprovalMode, ...]:
    """`mode` and every more permissive mode, least permissive first."""
    return MODE_ORDER[mode_rank(mode) :]


def mode_info(mode: ApprovalMode) -> ModeInfo:
    return next(info for info in MODES if info.id == mode)
