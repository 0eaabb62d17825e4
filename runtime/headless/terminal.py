"""The terminal Host of headless runs (design seam: `runtime.host.Host`).

`TerminalHost` asks permission questions on the terminal: the call's title, its diff
or command, then the options, answered by a key (`y` allow once, `a` allow for the
session, `n` reject) or the option's number. Answers come from an `Answers` source:
`TtyAnswers` reads lines from stdin when it is a terminal; `AutoAnswers` answers
every question itself and says so (the demo run without a terminal). Files and
commands stay local (the Host's defaults: no editor fs, no editor terminal), and a
model fallback is not offered (the default choice, stop). What the model wrote (a
title, a diff, a command) reaches the terminal without escape sequences.
"""

from __future__ import annotations

import abc
import asyncio
import difflib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

from runtime.headless.output import strip_escapes
from runtime.host import Host, PermissionOption, PermissionOutcome, PermissionRequest
from runtime.protocol import DisplayDiff, DisplayTerminal, DisplayText

logger = logging.getLogger(__name__)

Decision = Literal["accept", "reject"]
KEYS: dict[str, str] = {"allow_once": "y", "allow_always": "a", "reject_once": "n"}


class Answers(abc.ABC):
    """Where the answers to permission questions come from."""

    @abc.abstractmethod
    async def answer(self) -> str | None:
        """The user's answer to the question just shown; None: no more input."""


class TtyAnswers(Answers):
    """A line typed on the terminal (stdin), read off the event loop."""

    def __init__(self, stdin: IO[str]) -> None:
        self._stdin = stdin

    async def answer(self) -> str | None:
        line = await asyncio.to_thread(self._stdin.readline)
        return line if line else None


class AutoAnswers(Answers):
    """Every question answered with `reply`, shown after the question with `why`."""

    def __init__(self, reply: str, out: IO[str], why: str) -> None:
        self._reply = reply
        self._out = out
        self._why = why

    async def answer(self) -> str | None:
        self._out.write(f"{self._reply}  ({self._why})\n")
        self._out.flush()
        return self._reply


def shown_path(path: str, workspace: Path | None) -> str:
    """`path` relative to the workspace when it lies inside it."""
    if workspace is None:
        return path
    try:
        return str(Path(path).relative_to(workspace))
    except ValueError:
        return path


def unified_diff(diff: DisplayDiff, workspace: Path | None = None) -> str:
    """The edit as a unified diff (a new file: every line added)."""
    before = (diff.before_text or "").splitlines(keepends=True)
    after = diff.after_text.splitlines(keepends=True)
    name = shown_path(diff.path, workspace)
    lines = difflib.unified_diff(
        before,
        after,
        fromfile="/dev/null" if diff.before_text is None else f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def describe(request: PermissionRequest, workspace: Path | None = None) -> str:
    """What the question shows before its options: title, then the diff, the command
    or the text the tool gave."""
    lines = [f"? {request.title}"]
    for item in request.content:
        if isinstance(item, DisplayDiff):
            lines.append(unified_diff(item, workspace).rstrip("\n"))
        elif isinstance(item, DisplayText) and item.text.strip():
            lines.append(item.text.rstrip("\n"))
        elif isinstance(item, DisplayTerminal) and item.ansi:
            lines.append(item.ansi.rstrip("\n"))
    command = (request.raw_input or {}).get("command")
    if request.kind == "execute" and isinstance(command, str):
        lines.append(f"$ {command}")
    return "\n".join(lines) + "\n"


def option_keys(options: tuple[PermissionOption, ...]) -> dict[str, PermissionOption]:
    """Each option by its number (1, 2, ...) and the first of each kind by its key."""
    keys: dict[str, PermissionOption] = {}
    for number, option in enumerate(options, start=1):
        keys[str(number)] = option
        key = KEYS.get(option.kind)
        if key is not None and key not in keys:
            keys[key] = option
    return keys


def options_line(options: tuple[PermissionOption, ...]) -> str:
    keyed = option_keys(options)
    shown = []
    for number, option in enumerate(options, start=1):
        key = next((k for k, o in keyed.items() if o is option and not k.isdigit()), None)
        shown.append(f"[{key}/{number}] {option.name}" if key else f"[{number}] {option.name}")
    return "  ".join(shown) + "\nAnswer: "


def choose(options: tuple[PermissionOption, ...], answer: str) -> PermissionOption | None:
    """The option an answer names (a key, a number or the option's name), else None."""
    text = answer.strip().lower()
    if not text:
        return None
    keyed = option_keys(options)
    if text in keyed:
        return keyed[text]
    if text in ("yes", "no"):
        return keyed.get(text[0])
    return next((o for o in options if o.name.lower() == text), None)


class TerminalHost(Host):
    """Permission questions on the terminal; local files and commands (see module doc).

    Diffs name files relative to `workspace`; `on_decision(call_id, decision)` is
    told each answer (the run's statistics).
    An end of input rejects the call; an unclear answer asks again."""

    def __init__(
        self,
        answers: Answers,
        out: IO[str],
        *,
        workspace: Path | None = None,
        on_decision: Callable[[str, Decision], None] | None = None,
    ) -> None:
        self._answers = answers
        self._out = out
        self._workspace = workspace
        self._on_decision = on_decision

    def set_decision_sink(self, on_decision: Callable[[str, Decision], None]) -> None:
        self._on_decision = on_decision

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        self._out.write(strip_escapes(describe(request, self._workspace)))
        while True:
            self._out.write(options_line(request.options))
            self._out.flush()
            answer = await self._answers.answer()
            if answer is None:
                self._out.write("\n(no more input: rejected)\n")
                chosen = next((o for o in request.options if o.kind == "reject_once"), None)
                break
            chosen = choose(request.options, answer)
            if chosen is not None:
                break
            self._out.write(f"Please answer with one of the keys or numbers shown ({answer!r}?)\n")
        self._out.flush()
        if chosen is None:
            return PermissionOutcome(option_id=None)
        if self._on_decision is not None:
            allowed = chosen.kind in ("allow_once", "allow_always")
            self._on_decision(request.tool_call_id, "accept" if allowed else "reject")
        return PermissionOutcome(option_id=chosen.option_id)
