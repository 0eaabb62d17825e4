"""The user's version of an edit (issue 36): the user changed the proposed file before
allowing it (a word fixed, some hunks reverted), and the edit writes that instead.

`user_text` makes the text to write: the user's lines, with the proposal's own bytes
wherever a line is unchanged (an editor may have normalized line endings in the whole
document) and the proposal's dominant line ending on the lines the user typed; the final
newline is the user's. `review_note` tells the model what the user changed, as Gemini
CLI does after "modify with external editor": the hunks of its change the user
rejected, and a unified diff of the proposal against what was written.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from runtime.tools.io.text_format import dominant_ending

_BREAKS = "\r\n"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _bare(line: str) -> str:
    return line.rstrip(_BREAKS)


def _opcodes(a: Sequence[str], b: Sequence[str]) -> Sequence[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def user_text(proposal: str, user: str) -> str:
    """What to write for the user's version `user` of `proposal` (see the module doc)."""
    if user == proposal or (
        _bare_lines(user) == _bare_lines(proposal) and _ends(user) == _ends(proposal)
    ):
        return proposal
    ending = dominant_ending(proposal) or dominant_ending(user) or "\n"
    ours, theirs = _lines(proposal), _lines(user)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in _opcodes([_bare(x) for x in ours], [_bare(x) for x in theirs]):
        piece = (
            ours[i1:i2]
            if tag == "equal"
            else [_bare(x) + (ending if x != _bare(x) else "") for x in theirs[j1:j2]]
        )
        for line in piece:
            if out and out[-1] == _bare(out[-1]):  # a line that ended the text is followed now
                out[-1] += ending
            out.append(line)
    if out:  # the final newline is the user's
        last = out[-1]
        bare = _bare(last)
        out[-1] = (last if last != bare else bare + ending) if _ends(user) else bare
    return "".join(out)


def _bare_lines(text: str) -> list[str]:
    return [_bare(x) for x in _lines(text)]


def _ends(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def rejected_hunks(before: str, proposal: str, written: str) -> tuple[list[str], int]:
    """The hunks of the change `before` → `proposal` that `written` leaves as they were
    (each as `lines a-b of the original`), and how many hunks the change has."""
    old, new, now = _bare_lines(before), _bare_lines(proposal), _bare_lines(written)
    hunks = [op for op in _opcodes(old, new) if op[0] != "equal"]
    kept: set[int] = set()
    inserted: set[int] = set()
    for tag, i1, i2, _j1, _j2 in _opcodes(old, now):
        if tag == "equal":
            kept.update(range(i1, i2))
        else:
            inserted.update(range(i1, i2 + 1) if tag == "insert" else range(i1 + 1, i2))
    rejected: list[str] = []
    for _tag, i1, i2, _j1, _j2 in hunks:
        untouched = all(i in kept for i in range(i1, i2))
        inside = {i1} if i1 == i2 else set(range(i1 + 1, i2))
        if untouched and not inside & inserted:
            where = f"line {i1 + 1}" if i2 - i1 <= 1 else f"lines {i1 + 1}-{i2}"
            rejected.append(f"{where} of the original" if i2 > i1 else f"after line {i1}")
    return rejected, len(hunks)


def review_note(name: str, before: str | None, proposal: str, written: str) -> str:
    """The sentences added to the tool's result for the model (empty: nothing changed)."""
    if written == proposal:
        return ""
    parts = [
        "The user changed your proposed edit before allowing it: the file holds the "
        "user's version, not yours."
    ]
    if before is not None:
        rejected, total = rejected_hunks(before, proposal, written)
        if rejected:
            parts.append(
                f"They rejected {len(rejected)} of the {total} hunks of your change "
                f"({'; '.join(rejected)}): those parts of the file are as they were."
            )
    diff = "\n".join(
        difflib.unified_diff(
            _bare_lines(proposal),
            _bare_lines(written),
            f"{name} (your proposal)",
            f"{name} (written)",
            lineterm="",
        )
    )
    parts.append(
        "What the user changed in your proposal (unified diff, your proposal → what was "
        f"written):\n{diff}"
    )
    return " ".join(parts[:-1]) + ("\n\n" if len(parts) > 1 else "") + parts[-1]
